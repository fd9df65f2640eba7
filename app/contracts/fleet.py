"""What the hub serves about the fleet: ``GET /api/v1/fleet`` (``FleetDocument``) and the fleet
page's JSON twin ``/fleet.json`` (``FleetView``), one row per node (``FleetNode``: the node's
summary as its agent gave it, checked by ``app.contracts.summary``, with the agent, its status
and the largest free single-NUMA block).

The hub builds its rows only from summaries that passed ``NodeSummaryV1`` (an agent's, or a
node of its own demo fleet), so every row is bounded: nothing an agent sends reaches a page or
a JSON answer unchecked.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from app.contracts.base import Contract, Count, Text, Token
from app.contracts.summary import NodeSummaryV1

AgentStatus = Literal["pending", "ok", "unreachable"]
URL = Annotated[str, StringConstraints(max_length=2048)]


class FleetAgent(Contract):
    """One agent: its status, and when it is ``unreachable`` why (``field``: the field of its
    answer that broke the contract, when that was the reason)."""

    url: URL
    status: AgentStatus
    error: Text | None = None
    field: Text | None = None
    last_seen: Token | None = None
    nodes: Count = 0


class FleetNode(NodeSummaryV1):
    """One node of the fleet (``agent``: ``None`` for the hub's own demo-fleet nodes; ``url``:
    the node's page on its agent)."""

    agent: URL | None
    status: AgentStatus
    largest_free_numa: Count
    url: URL | None = None


class Discovery(Contract):
    dns: Text
    error: Text | None = None


class FleetDocument(Contract):
    """``GET /api/v1/fleet``: every agent and every node the hub knows."""

    agents: list[FleetAgent]
    nodes: list[FleetNode]
    discovery: Discovery | None = None


class FleetView(Contract):
    """``/fleet.json``: the fleet filtered, sorted and paged."""

    agents: list[FleetAgent]
    agent_status: dict[AgentStatus, Count]
    discovery: Discovery | None = None
    total: Count
    matched: Count
    offset: Count
    limit: Count
    nodes: list[FleetNode]
    releases: list[Token]
    query: dict[str, str | int]
