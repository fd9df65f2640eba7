"""What the hub serves about the fleet: ``GET /api/v1/fleet`` (``FleetDocument``) and the fleet
page's JSON twin ``/fleet.json`` (``FleetView``), one row per node (``FleetNode``: the node's
summary as its agent gave it, checked by ``app.contracts.summary``, with the agent, its status
and the largest free single-NUMA block); a fit row per node (``FitRow``) and an upgrade row per
node (``UpgradeRow``), each checked before a page reads it.

The hub builds its rows only from summaries that passed ``NodeSummaryV1`` (an agent's, or a
node of its own demo fleet), so every row is bounded: nothing an agent sends reaches a page or
a JSON answer unchecked.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints

from app.contracts.admission import Allocation, NumaId
from app.contracts.base import Contract, Count, Text, Token
from app.contracts.checkpoint import Rescue
from app.contracts.summary import NodeName, NodeSummaryV1

AgentStatus = Literal["pending", "ok", "unreachable"]
URL = Annotated[str, StringConstraints(max_length=2048)]
#: Items of a list of texts (lost pods, recovery steps).
MAX_LIST = 5000


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


# -- fit ------------------------------------------------------------------------------------


class FitRow(Contract):
    """One node's fit (``POST /api/v1/fleet/fit``): the node's own dry-run answer field for
    field (the fields not named here are passed on as the node gave them, bounded by
    ``app.contracts.base.parse_json``), with the first pod's ``allocation`` and the NUMA nodes
    of its hints lifted to the top, and the hub's ranking (``score`` under the chosen scoring
    strategy, ``flags``)."""

    model_config = ConfigDict(extra="allow")

    node: NodeName
    agent: URL | None = None
    admitted: bool
    reason: Text | None = None
    message: Text | None = None
    allocation: Allocation | None = None
    numa_nodes: Annotated[list[NumaId], Field(max_length=1024)] = []
    error: Text | None = None
    #: ``False``: the node was not asked (over the fan-out cap, or past the deadline).
    checked: bool = True
    score: Annotated[int, Field(ge=0, le=100)] | None = None
    flags: Annotated[list[Token], Field(max_length=8)] = []


class FileVerdict(Contract):
    model_config = ConfigDict(extra="allow")

    error: Text | None = None
    message: Text | None = None


class UpgradeFile(Contract):
    """One state file's verdict, with the rescues and advice the drain plan groups by."""

    model_config = ConfigDict(extra="allow")

    name: Token
    status: Token | None = None
    version: Token | None = None
    verdict: FileVerdict | None = None
    rescues: Annotated[list[Rescue], Field(max_length=64)] = []
    advice: Annotated[list[Text], Field(max_length=64)] = []


class UpgradeRow(Contract):
    """One node's upgrade verdict (``GET /api/v1/fleet/upgrade``): the node's own answer field
    for field, with the fields the page and the drain plan read typed (``verdict``, ``lost``,
    ``error``, ``recovery``, ``files``); ``checked`` false: not checked yet (never counted as
    failing)."""

    model_config = ConfigDict(extra="allow")

    node: NodeName
    agent: URL | None = None
    verdict: Token | None = None
    lost: Annotated[list[Text], Field(max_length=MAX_LIST)] = []
    error: Text | None = None
    recovery: Annotated[list[Text], Field(max_length=MAX_LIST)] = []
    files: Annotated[list[UpgradeFile], Field(max_length=16)] = []
    checked: bool = True


class FitAnswer(Contract):
    """``POST /api/v1/fleet/fit``: every node's fit, best first."""

    strategy: Token
    results: list[FitRow]
    unreachable: list[FleetAgent]


class UpgradeAnswer(Contract):
    """``GET /api/v1/fleet/upgrade``: every node's verdict for a kubelet of ``release``."""

    release: Token
    results: list[UpgradeRow]
    unreachable: list[FleetAgent]
