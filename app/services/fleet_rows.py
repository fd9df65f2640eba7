"""What the hub keeps of an agent's answers: summaries checked field by field, fleet rows and
fit results.

An agent is a remote program the hub does not control; its JSON may be from another version,
truncated by a proxy, or garbage. ``check_summary`` accepts a summary document
(``app.services.agent_summary``, format ``numascope.summary/v1``) only when every field the
fleet views read has the type they expect, and otherwise raises ``AgentError`` naming the node
and field, so a bad answer turns its agent ``unreachable`` with that text instead of reaching a
page (where a string in place of a number would be a 500). Fields the views do not read are
dropped.
"""

from __future__ import annotations

from typing import Any

from app.adapters.agents import AgentError

MAX_NAME = 253
MAX_TEXT = 2000
NUMA_INTS = ("numaNode", "total", "reserved", "nodeShared", "podShared", "exclusive", "available")
MEMORY_INTS = ("allocatable", "reserved", "free")


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise AgentError(f"answered a summary whose {where} is not a non-negative integer")
    return value


def _text(value: Any, where: str, *, optional: bool = True, limit: int = MAX_TEXT) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise AgentError(f"answered a summary whose {where} is not a string")
    return value


def _numa_row(row: Any, where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise AgentError(f"answered a summary whose {where} is not an object")
    out: dict[str, Any] = {k: _int(row.get(k), f"{where}.{k}") for k in NUMA_INTS}
    memory = row.get("memory", [])
    if not isinstance(memory, list):
        raise AgentError(f"answered a summary whose {where}.memory is not a list")
    out["memory"] = []
    for j, m in enumerate(memory):
        at = f"{where}.memory[{j}]"
        if not isinstance(m, dict):
            raise AgentError(f"answered a summary whose {at} is not an object")
        entry: dict[str, Any] = {"resource": _text(m.get("resource"), f"{at}.resource")}
        entry.update({k: _int(m.get(k), f"{at}.{k}") for k in MEMORY_INTS})
        out["memory"].append(entry)
    return out


def _findings(value: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise AgentError(f"answered a summary whose {where} is not a list")
    out = []
    for i, f in enumerate(value):
        if not isinstance(f, dict):
            raise AgentError(f"answered a summary whose {where}[{i}] is not an object")
        out.append(
            {k: _text(f.get(k), f"{where}[{i}].{k}") or "" for k in ("code", "severity", "message")}
        )
    return out


def _scalars(value: Any, where: str) -> dict[str, Any]:
    """A flat object of names to JSON scalars (feature gates, policies, state-file versions)."""
    if not isinstance(value, dict):
        raise AgentError(f"answered a summary whose {where} is not an object")
    for k, v in value.items():
        if len(k) > MAX_NAME or not (v is None or isinstance(v, (str, bool, int, float))):
            raise AgentError(f"answered a summary whose {where}.{k[:60]} is not a plain value")
        if isinstance(v, str) and len(v) > MAX_TEXT:
            raise AgentError(f"answered a summary whose {where}.{k[:60]} is too long")
    return dict(value)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AgentError(f"answered a summary whose {where} is not an object")
    return value


def check_node(summary: Any, index: int) -> dict[str, Any]:
    """One node of a summary document, with only checked fields."""
    if not isinstance(summary, dict) or not isinstance(summary.get("node"), str):
        raise AgentError(f"answered a summary whose nodes[{index}] has no name")
    name = summary["node"]
    if not name or len(name) > MAX_NAME:
        raise AgentError(f"answered a summary whose nodes[{index}].node is not a node name")
    where = f"node {name[:60]!r}"
    numa = summary.get("numa", [])
    if not isinstance(numa, list):
        raise AgentError(f"answered a summary of {where} without a 'numa' list")
    version = summary.get("version")
    url = _text(summary.get("url"), f"{where} url")
    return {
        "node": name,
        "source": _text(summary.get("source"), f"{where} source"),
        "release": _text(summary.get("release"), f"{where} release", limit=32),
        "numa": [_numa_row(r, f"{where} numa[{i}]") for i, r in enumerate(numa)],
        "pods": _int(summary.get("pods", 0), f"{where} pods"),
        "rejected": _int(summary.get("rejected", 0), f"{where} rejected"),
        "findings": _findings(summary.get("findings", []), f"{where} findings"),
        "stateFiles": _scalars(summary.get("stateFiles", {}), f"{where} stateFiles"),
        "featureGates": _scalars(summary.get("featureGates", {}), f"{where} featureGates"),
        # Shown as given (JSON the size cap already bounds), never computed with.
        "policies": _object(summary.get("policies", {}), f"{where} policies"),
        "topology": _object(summary.get("topology", {}), f"{where} topology"),
        "version": _int(version, f"{where} version") if version is not None else None,
        # Only a path on the agent (never another site) becomes the row's link.
        "url": url if url and url.startswith("/") and not url.startswith("//") else None,
    }


def check_summary(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The checked nodes of an agent's summary document, or ``AgentError`` saying what is
    wrong (the first problem found)."""
    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        raise AgentError("answered JSON without a 'nodes' list (not a Numascope agent?)")
    checked = [check_node(n, i) for i, n in enumerate(nodes)]
    names = [n["node"] for n in checked]
    if len(set(names)) != len(names):
        raise AgentError("answered a summary that lists a node twice")
    return checked


def fleet_node(summary: dict[str, Any], agent: str | None, status: str) -> dict[str, Any]:
    """A fleet row: a checked summary with its agent, status and largest free NUMA block."""
    numa = summary.get("numa", [])
    url = summary.get("url")
    return {
        "node": summary["node"],
        "agent": agent,
        "status": status,
        "release": summary.get("release"),
        "numa": numa,
        "largestFreeNuma": max((r["available"] for r in numa), default=0),
        "pods": summary.get("pods"),
        "rejected": summary.get("rejected"),
        "findings": summary.get("findings", []),
        "stateFiles": summary.get("stateFiles"),
        "featureGates": summary.get("featureGates", {}),
        "policies": summary.get("policies", {}),
        "topology": summary.get("topology", {}),
        "source": summary.get("source"),
        "version": summary.get("version"),
        # The node's page on its agent (the hub's own simulated nodes have no page).
        "url": agent + url if agent and url else None,
    }


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
