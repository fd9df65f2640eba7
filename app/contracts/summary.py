"""The agent summary v1 (format ``numascope.summary/v1``): what every ``numascope serve``
answers at ``GET /api/v1/summary`` (``SummaryDocumentV1``) and ``GET /api/v1/nodes/{node}/
summary`` (``NodeSummaryV1``), and what the hub polls and trusts.

The agent builds its summaries as these models (``app.services.fleet.agent_summary``); the hub parses
every answer with them (``app.adapters.agents``), so a field the hub's pages read is of the type
and size they expect or the answer is refused, naming the field. Bounds: every count and size
is a non-negative integer up to ``MAX_INT``; node names are names Kubernetes or a host gives;
texts, lists and maps are bounded (``MAX_NUMA_NODES``, ``MAX_FINDINGS``, ``MAX_GATES``,
``MAX_NODES``).

``SummaryWatchEventV1`` is one line of ``GET /api/v1/summary/watch`` (newline-delimited JSON, as
the Kubernetes API server's watch streams ``{"type", "object"}`` events): ``ADDED`` /
``MODIFIED`` / ``DELETED`` carry a node's summary (``DELETED``: its last one), ``BOOKMARK`` only
the ``resourceVersion`` the stream has reached (``initialEventsEnd`` on the one that closes the
initial list, as the API server's ``k8s.io/initial-events-end`` annotation does), ``ERROR`` a
``status`` (``410 Expired``: the version asked for is too old or unknown, list again).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from app.contracts.base import MAX_NAME, Contract, Count, LocalPath, Release, Text, Token

SummaryFormat = Literal["numascope.summary/v1"]
SUMMARY_FORMAT: SummaryFormat = "numascope.summary/v1"
#: NUMA nodes of one node (the kubelet's own limit is 8 by default; machines have up to 64).
MAX_NUMA_NODES = 1024
#: Memory resources per NUMA node (memory and each hugepage size).
MAX_MEMORY_RESOURCES = 16
#: Findings of one node.
MAX_FINDINGS = 256
#: Feature gates and policy options of one node.
MAX_GATES = 512
#: Nodes in one summary document (5,000: Kubernetes' documented cluster limit).
MAX_NODES = 5000


#: A node's name: a DNS-1123 subdomain as Kubernetes names nodes, or a host name as an agent
#: outside a cluster falls back to (capitals and ``_`` allowed); never a path, space or control
#: character.
NodeName = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=MAX_NAME,
        pattern=r"^[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$",
    ),
]
GateName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME)]


class MemoryRow(Contract):
    """One memory resource of a NUMA node (``memory``, ``hugepages-2Mi``…), in bytes."""

    resource: Token
    allocatable: Count
    reserved: Count
    free: Count


class NumaRow(Contract):
    """One NUMA node: its CPUs by pool, what is available, its memory."""

    numa_node: Annotated[int, Field(ge=0, lt=MAX_NUMA_NODES)]
    total: Count
    reserved: Count
    node_shared: Count
    pod_shared: Count
    exclusive: Count
    available: Count
    memory: Annotated[list[MemoryRow], Field(max_length=MAX_MEMORY_RESOURCES)] = []


class Finding(Contract):
    """Something an SRE should look at on a node."""

    code: Token
    severity: Literal["error", "warning", "info"]
    message: Text


class Policies(Contract):
    """The node's resource-manager settings."""

    cpu_manager_policy: Token
    cpu_manager_policy_options: Annotated[dict[Token, Token], Field(max_length=MAX_GATES)] = {}
    memory_manager_policy: Token
    topology_manager_policy: Token
    topology_manager_scope: Token
    pod_level_resources: bool
    pod_level_resource_managers: bool


class TopologyBrief(Contract):
    name: Annotated[str, StringConstraints(max_length=1024)]
    sockets: Count
    numa_nodes: Count
    cpus: Count
    memory_bytes: Count


class StateFiles(Contract):
    """The version of each state file (``None``: no file)."""

    cpu: Token | None = None
    memory: Token | None = None


class NodeSummaryV1(Contract):
    """One node's summary (``version`` grows by one each time the rest changes)."""

    node: NodeName
    source: Token
    simulated: bool
    release: Release
    feature_gates: Annotated[dict[GateName, bool], Field(max_length=MAX_GATES)] = {}
    policies: Policies
    topology: TopologyBrief
    numa: Annotated[list[NumaRow], Field(max_length=MAX_NUMA_NODES)] = []
    pods: Count
    rejected: Count
    findings: Annotated[list[Finding], Field(max_length=MAX_FINDINGS)] = []
    state_files: StateFiles = StateFiles()
    load_error: Text | None = None
    #: The node's page on the agent (a path, never another site).
    url: LocalPath | None = None
    version: Count | None = None


class AgentInfo(Contract):
    version: Token
    observe: bool
    releases: Annotated[list[Release], Field(max_length=64)] = []


class SummaryDocumentV1(Contract):
    """``GET /api/v1/summary``: every node the agent holds."""

    format: SummaryFormat
    agent: AgentInfo
    nodes: Annotated[list[NodeSummaryV1], Field(max_length=MAX_NODES)]


WatchEventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
#: ``<epoch>-<n>``: the agent process's epoch (a new one on each start) and a counter.
ResourceVersion = Annotated[
    str, StringConstraints(max_length=64, pattern=r"^([0-9a-f]{1,32}-[0-9]{1,16})?$")
]


class WatchStatus(Contract):
    """Why a watch stream ended (the ``Status`` of a Kubernetes watch ``ERROR`` event)."""

    code: Annotated[int, Field(ge=100, le=599)]
    reason: Token
    message: Text


class SummaryWatchEventV1(Contract):
    """One event of ``GET /api/v1/summary/watch`` (one line of the stream)."""

    type: WatchEventType
    resource_version: ResourceVersion
    object: NodeSummaryV1 | None = None
    initial_events_end: bool = False
    status: WatchStatus | None = None
