"""The hub's rows: a fleet row per node (``fleet_node``, the ``FleetNode`` of
``app.contracts.fleet``), fit results and upgrade results.

An agent is a remote program the hub does not control; its JSON may be from another version,
truncated by a proxy, or garbage. Its summary reaches these rows only after passing the contract
(``app.contracts.summary.NodeSummaryV1``, parsed by ``app.adapters.agents``): every field a page
reads has the type and size it expects. A fleet row is that summary as the agent gave it with
the agent, its status, the largest free single-NUMA block and the findings the hub adds (a node
name two agents claim).
"""

from __future__ import annotations

from typing import Any

from app.contracts.summary import Finding, NodeSummaryV1


def fleet_node(
    summary: NodeSummaryV1, agent: str | None, status: str, extra: list[Finding] | None = None
) -> dict[str, Any]:
    """A fleet row (``FleetNode``): a checked summary with its agent, status, largest free
    NUMA block and the hub's own findings about it."""
    row = summary.model_dump(mode="json")
    row["agent"] = agent
    row["status"] = status
    row["largestFreeNuma"] = max((r.available for r in summary.numa), default=0)
    if extra:
        row["findings"] = row["findings"] + [f.model_dump(mode="json") for f in extra]
    # The node's page on its agent (the hub's own simulated nodes have no page).
    row["url"] = agent + summary.url if agent and summary.url else None
    return row


def fit_result(node: str, answer: dict[str, Any]) -> dict[str, Any]:
    """One node's fit: its dry-run answer as the node gave it (``reason``/``message`` of the
    first rejection at the top, as admission answers), with the first pod's ``allocation`` and
    the NUMA nodes of its hints lifted to the top (an error answer: ``admitted`` false with
    the error's reason and message)."""
    error = answer.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return {
            "node": node,
            "admitted": False,
            "reason": error.get("reason"),
            "message": message,
            "allocation": None,
            "numaNodes": [],
            "error": message if isinstance(message, str) else "the node answered an error",
        }
    out = dict(answer)  # field for field the node's own dry-run answer
    out["node"] = node
    out["admitted"] = answer.get("admitted") is True
    out.setdefault("reason", "")
    out.setdefault("message", "")
    results = answer.get("results")
    first = results[0] if isinstance(results, list) and results else {}
    first = first if isinstance(first, dict) else {}
    out["allocation"] = first.get("allocation")
    numa: set[int] = set()
    hints = first.get("hints")
    for hint in hints.values() if isinstance(hints, dict) else []:
        if isinstance(hint, dict):
            numa.update(x for x in hint.get("numa") or [] if isinstance(x, int))
    out["numaNodes"] = sorted(numa)
    return out


def fit_error(node: str, message: str) -> dict[str, Any]:
    """The fit row of a node whose agent gave no dry-run answer (timed out, refused…)."""
    return fit_result(node, {"error": {"reason": "AgentUnreachable", "message": message}})


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def upgrade_result(node: str, answer: dict[str, Any]) -> dict[str, Any]:
    """One node's upgrade row from an agent's ``GET /api/v1/nodes/{node}/upgrade`` answer:
    the inspector's verdict as the agent gave it, with ``verdict``/``lost``/``error``/
    ``recovery`` of the types the page reads (an error answer: no verdict, its message)."""
    error = answer.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return upgrade_error(node, message if isinstance(message, str) else "the node failed")
    out = dict(answer)
    verdict = answer.get("verdict")
    out["node"] = node
    out["verdict"] = verdict if isinstance(verdict, str) and len(verdict) <= 64 else None
    out["lost"] = _strings(answer.get("lost"))
    out["recovery"] = _strings(answer.get("recovery"))
    err = answer.get("error")
    out["error"] = err if isinstance(err, str) else None
    if out["verdict"] is None and out["error"] is None:
        out["error"] = "the agent answered without a verdict"
    return out


def upgrade_error(node: str, message: str) -> dict[str, Any]:
    return {"node": node, "verdict": None, "lost": [], "error": message, "recovery": []}
