"""The fleet document the hub serves (``GET /api/v1/fleet``, ``/fleet``, the heatmap): every
agent and every node the hub knows, built once per change of the fleet.

``Hub.generation`` moves when a node's data, an agent's status or error, or the agent set
changes (never on a bookmark); the document is built again only then, or when the demo fleet
has grown. It is joined from per-node rows encoded again only when that node's summary (the
very object the agent's last event or answer gave), status or co-claimers changed: one change
costs one row, not the fleet, and the ETag of the bytes moves only when the fleet does. A demo
node never changes once built: its row is built once and its summary not kept (5,000 summaries
as models weigh some 35 MiB more than their rows). Freed pages go back to the system once
``TRIM_AFTER_ROWS`` rows were built (a demo node's row draws the node's views, then drops them).
"""

from __future__ import annotations

from typing import Any, Protocol

from app.adapters.heap import release_free_heap
from app.contracts.summary import Finding, NodeSummaryV1
from app.services.fleet.agent_summary import (
    Encoded,
    SummaryCache,
    encode,
    encode_json,
    encoded_bytes,
)
from app.services.fleet.agents import OK, PENDING, UNREACHABLE, AgentState
from app.services.fleet.heatmap import Heatmap, heatmap
from app.services.fleet.rows import fleet_node
from app.services.nodes.demo_fleet import DemoFleet, SimulatedNode

#: Rows built into one document past which its garbage is given back to the system (some
#: 30 MiB at 5,000 demo nodes).
TRIM_AFTER_ROWS = 500

Key = tuple[int, int]  # (hub generation, demo nodes built)


class FleetSource(Protocol):
    """What the document is built from (the hub)."""

    generation: int
    fleet: DemoFleet
    agents: dict[str, AgentState]
    dns: tuple[str, int] | None
    dns_error: str | None


class FleetDocument:
    """The document of one hub, with the rows, bytes and heatmap kept between changes."""

    def __init__(self, hub: FleetSource) -> None:
        self.hub = hub
        self._doc: tuple[Key, dict[str, Any]] | None = None
        self._bodies: tuple[Key, list[bytes]] = ((-1, -1), [])
        self._encoded: tuple[Key, Encoded] | None = None
        self._heatmap: tuple[Key, Heatmap, Encoded] | None = None
        # Per node row (agent, node): what it was built from, the row and its JSON.
        self._rows: dict[
            tuple[str | None, str],
            tuple[NodeSummaryV1, str, tuple[str, ...], dict[str, Any], bytes],
        ] = {}
        self._sim_rows: dict[str, tuple[dict[str, Any], bytes]] = {}
        self._built = 0  # rows built since the heap was last trimmed

    def document(self) -> dict[str, Any]:
        """``GET /api/v1/fleet``: every agent and every node known."""
        return self._document()[1]

    def _document(self) -> tuple[Key, dict[str, Any]]:
        """The document and the key it was built from: the demo nodes are listed once, so the
        key never claims nodes added while it was being built."""
        hub = self.hub
        sims = hub.fleet.list()  # a fresh list: the builder thread may add nodes meanwhile
        key = (hub.generation, len(sims))
        cached = self._doc
        if cached is not None and cached[0] == key:
            return cached
        agents = sorted(list(hub.agents.values()), key=lambda a: a.url)
        rows = [self._sim_row(n) for n in sims] + self._agent_rows(agents)
        rows.sort(key=lambda r: (r[0]["node"], r[0]["agent"] or ""))
        kept = {(r[0]["agent"], r[0]["node"]) for r in rows}
        for gone in [k for k in list(self._rows) if k not in kept]:
            self._rows.pop(gone, None)
        doc: dict[str, Any] = {
            "agents": [a.to_dict() for a in agents],
            "nodes": [r[0] for r in rows],
        }
        if hub.dns is not None:
            name, port = hub.dns
            doc["discovery"] = {"dns": f"{name}:{port}", "error": hub.dns_error}
        self._doc = (key, doc)
        self._bodies = (key, [r[1] for r in rows])
        if self._built >= TRIM_AFTER_ROWS:  # in a request's thread, never on the event loop
            self._built = 0
            release_free_heap()
        return key, doc

    def _agent_rows(self, agents: list[AgentState]) -> list[tuple[dict[str, Any], bytes]]:
        """The rows of the agents' nodes, a name claimed by several agents under each."""
        # Each agent's nodes and status read once: the event loop replaces them meanwhile.
        held = [(a.url, a.nodes, a.status) for a in agents]
        claims: dict[str, list[str]] = {}
        for url, summaries, _ in held:
            for s in summaries:
                claims.setdefault(s.node, []).append(url)
        rows = []
        for url, summaries, agent_status in held:
            status = agent_status if agent_status != PENDING else UNREACHABLE
            for s in summaries:
                others = tuple(u for u in claims[s.node] if u != url)
                rows.append(self._row(s, url, status, others))
        return rows

    def _row(
        self, summary: NodeSummaryV1, agent: str | None, status: str, others: tuple[str, ...]
    ) -> tuple[dict[str, Any], bytes]:
        """A node's fleet row and its JSON, built again only when what it is made of changed."""
        key = (agent, summary.node)
        held = self._rows.get(key)
        if held is not None and held[0] is summary and held[1] == status and held[2] == others:
            return held[3], held[4]
        row = fleet_node(summary, agent, status, _duplicate(summary.node, list(others)))
        self._built += 1
        self._rows[key] = (summary, status, others, row, encode_json(row))
        return row, self._rows[key][4]

    def _sim_row(self, node: SimulatedNode) -> tuple[dict[str, Any], bytes]:
        held = self._sim_rows.get(node.name)
        if held is None:
            row = fleet_node(node.agent_summary(SummaryCache()), None, OK)
            self._built += 1
            held = self._sim_rows[node.name] = (row, encode_json(row))
        return held

    def heatmap(self) -> tuple[Heatmap, Encoded]:
        """The fleet heatmap and its SVG as bytes with an ETag, drawn once per document."""
        key, doc = self._document()
        cached = self._heatmap
        if cached is None or cached[0] != key:
            drawn = heatmap(doc["nodes"])
            cached = self._heatmap = (key, drawn, encoded_bytes(drawn.svg.encode()))
        return cached[1], cached[2]

    def encoded(self) -> Encoded:
        """The document as bytes with its ETag (for 304s), encoded once per document."""
        key, doc = self._document()
        cached = self._encoded
        if cached is None or cached[0] != key:
            bodies = self._bodies[1] if self._bodies[0] == key else None
            if bodies is None:  # built meanwhile for another key: encode this one whole
                cached = (key, encode(doc))
            else:  # the rows' JSON joined, as ``encode`` would write the whole (sorted keys)
                parts = [b'{"agents":', encode_json(doc["agents"])]
                if "discovery" in doc:
                    parts += [b',"discovery":', encode_json(doc["discovery"])]
                parts += [b',"nodes":[', b",".join(bodies), b"]}"]
                cached = (key, encoded_bytes(b"".join(parts)))
            self._encoded = cached
        return cached[1]


def _duplicate(name: str, others: list[str]) -> list[Finding]:
    """The finding of a node name other agents claim too (both are listed: the hub cannot
    tell which is the node's real agent)."""
    if not others:
        return []
    message = f"node {name} is also claimed by agent {', '.join(others[:5])}"
    if len(others) > 5:
        message += f" and {len(others) - 5} more"
    return [Finding(code="duplicate-node", severity="error", message=message)]
