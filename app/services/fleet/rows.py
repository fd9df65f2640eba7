"""The hub's rows: a fleet row per node (``fleet_node``, the ``FleetNode`` of
``app.contracts.fleet``), fit results (``FitRow``) and upgrade results (``UpgradeRow``).

An agent is a remote program the hub does not control; its JSON may be from another version,
truncated by a proxy, or garbage. Its summary reaches these rows only after passing the contract
(``app.contracts.summary.NodeSummaryV1``, parsed by ``app.adapters.agents``): every field a page
reads has the type and size it expects. A fleet row is that summary as the agent gave it with
the agent, its status, the largest free single-NUMA block and the findings the hub adds (a node
name two agents claim). A dry-run or upgrade answer is checked against its row's contract before
a page reads it: a wrong field makes an error row naming that field.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.contracts.base import MAX_TEXT, contract_error
from app.contracts.fleet import FitRow, UpgradeRow
from app.contracts.summary import Finding, NodeSummaryV1
from app.services.node_views import pod_url

M = TypeVar("M", bound=BaseModel)


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


def _checked(model: type[M], row: dict[str, Any], what: str) -> M | str:
    """``row`` as ``model``, or the text saying which field of the node's answer is wrong."""
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        err = contract_error(exc)
        return f"answered {what} whose {err.field or 'body'} breaks the contract: {err.problem}"


def fit_result(node: str, answer: dict[str, Any]) -> dict[str, Any]:
    """One node's fit (``FitRow``): its dry-run answer as the node gave it (``reason``/
    ``message`` of the first rejection at the top, as admission answers; none where the
    node's answer has none), with the first pod's
    ``allocation`` and the NUMA nodes of its hints lifted to the top (an error answer:
    ``admitted`` false with the error's reason and message; an answer that breaks the
    contract: an error row naming the field)."""
    error = answer.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        row: dict[str, Any] = {
            "node": node,
            "admitted": False,
            "reason": error.get("reason"),
            "message": message,
            "allocation": None,
            "numaNodes": [],
            "error": message if isinstance(message, str) else "the node answered an error",
        }
    else:
        row = dict(answer)  # field for field the node's own dry-run answer
        row["node"] = node
        row["admitted"] = answer.get("admitted") is True
        results = answer.get("results")
        first = results[0] if isinstance(results, list) and results else {}
        first = first if isinstance(first, dict) else {}
        row["allocation"] = first.get("allocation")
        numa: set[int] = set()
        hints = first.get("hints")
        for hint in hints.values() if isinstance(hints, dict) else []:
            if isinstance(hint, dict):
                numa.update(x for x in hint.get("numa") or [] if isinstance(x, int))
        row["numaNodes"] = sorted(numa)
    checked = _checked(FitRow, row, "a dry run")
    if isinstance(checked, str):
        return fit_error(node, checked)
    return checked.model_dump(mode="json")


def fit_error(node: str, message: str, *, asked: bool = True) -> dict[str, Any]:
    """The fit row of a node whose agent gave no usable dry-run answer (timed out, refused,
    broke the contract…; ``asked`` false: the hub did not ask it)."""
    row = FitRow(
        node=node,
        admitted=False,
        reason="AgentUnreachable",
        message=_cut(message),
        error=_cut(message),
        checked=asked,
    )
    return row.model_dump(mode="json")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def upgrade_result(node: str, answer: dict[str, Any]) -> dict[str, Any]:
    """One node's upgrade row (``UpgradeRow``) from an agent's ``GET /api/v1/nodes/{node}/
    upgrade`` answer: the inspector's verdict as the agent gave it, with ``verdict``/``lost``/
    ``error``/``recovery`` of the types the page reads (an error answer: no verdict, its
    message)."""
    error = answer.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return upgrade_error(node, message if isinstance(message, str) else "the node failed")
    row = dict(answer)
    verdict = answer.get("verdict")
    row["node"] = node
    row["verdict"] = verdict if isinstance(verdict, str) and len(verdict) <= 64 else None
    row["lost"] = _strings(answer.get("lost"))
    row["recovery"] = _strings(answer.get("recovery"))
    if "lostPods" in answer:
        row["lostPods"] = _lost_pods(node, answer["lostPods"])
    err = answer.get("error")
    row["error"] = err if isinstance(err, str) else None
    if row["verdict"] is None and row["error"] is None:
        row["error"] = "the agent answered without a verdict"
    row["checked"] = True
    checked = _checked(UpgradeRow, row, "an upgrade check")
    if isinstance(checked, str):
        return upgrade_error(node, checked)
    # What the node answered, as it answered it (no defaults added to its files).
    return checked.model_dump(mode="json", exclude_unset=True)


def _lost_pods(node: str, value: Any) -> list[dict[str, str]]:
    """The lost pods a node named (``namespace/name``), each with its pod page's path on the
    hub built here: an agent's own ``url`` is not trusted."""
    out: list[dict[str, str]] = []
    for p in value if isinstance(value, list) else []:
        key = p.get("pod") if isinstance(p, dict) else None
        if isinstance(key, str) and key.count("/") == 1 and len(key) <= MAX_TEXT:
            uid = p.get("uid")
            url = pod_url(node, *key.split("/"))
            out.append({"uid": uid if isinstance(uid, str) else "", "pod": key, "url": url})
    return out


def upgrade_error(node: str, message: str, *, asked: bool = True) -> dict[str, Any]:
    """The upgrade row of a node without a verdict (``asked`` false: not checked yet, which
    is never counted as failing)."""
    row = UpgradeRow(node=node, verdict=None, lost=[], error=_cut(message), recovery=[])
    return {**row.model_dump(mode="json", exclude={"agent", "files"}), "checked": asked}
