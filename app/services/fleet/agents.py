"""What the fleet hub knows of each agent (``AgentState``: its status, last answer, ETag, nodes
and backoff) and how it is counted (``HubMetrics``: agents and nodes by status, poll latency
by outcome, watch events by type). ``app.services.fleet.hub`` polls the agents and keeps these up to date.

An agent is ``pending`` until its first answer, then ``ok`` or ``unreachable``. ``lastSeen``
of a polled agent is shown to ``LAST_SEEN_STEP`` seconds, so an agent answering 304s does not
change the fleet document (and its ETag) on every poll; of a followed agent it is when its
nodes last changed or its stream was last (re)opened, since a bookmark changes nothing (an
``ok`` followed agent is live: its stream is dropped after a few silent bookmark intervals).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app.contracts.summary import NodeSummaryV1

if TYPE_CHECKING:
    from app.adapters.agents import AgentClient

PENDING, OK, UNREACHABLE = "pending", "ok", "unreachable"
#: How the hub follows an agent: its watch stream, or polls (an agent without the stream).
WATCH, POLL = "watch", "poll"
#: How stale an ``ok`` agent's ``lastSeen`` may be in the fleet document (seconds).
LAST_SEEN_STEP = 10.0


@dataclass
class AgentState:
    url: str
    origin: str  # "static" | "dns"
    status: str = PENDING
    error: str | None = "not polled yet"
    error_field: str | None = None  # the answer's field that broke the contract
    last_seen: float | None = None
    etag: str | None = None
    nodes: list[NodeSummaryV1] = field(default_factory=list)
    failures: int = 0
    next_poll: float = 0.0
    latency: float | None = None
    mode: str = WATCH
    #: The watch stream's version the hub has reached (``""``: list everything again).
    resource_version: str = ""
    #: When a polled agent's watch stream is tried again (it may have been upgraded).
    watch_retry: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the agent answers (what it reports is the fleet's)."""
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        """The ``FleetAgent`` of ``app.contracts.fleet``."""
        return {
            "url": self.url,
            "status": self.status,
            "error": self.error,
            "field": self.error_field,
            "lastSeen": _iso(self.last_seen),
            "nodes": len(self.nodes),
        }


class AgentDirectory(Protocol):
    """The agents a hub follows, as the nodes package and the fleet's questions read them:
    the agents by URL, the fleet document's version (it moves whenever a node, an agent's
    status or the agent set changes) and the client that asks them."""

    agents: dict[str, AgentState]
    generation: int

    def client(self) -> AgentClient: ...


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class HubMetrics:
    """Agents up/down, poll latency, watch events by type, nodes by status (registered on the app's registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.agents = Gauge(
            "numascope_hub_agents", "Agents of the hub by status.", ["status"], registry=registry
        )
        self.poll = Histogram(
            "numascope_hub_poll_duration_seconds",
            "Time of one agent poll (summary request), by outcome.",
            ["outcome"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
            registry=registry,
        )
        self.events = Counter(
            "numascope_hub_watch_events",
            "Events of the agents' watch streams, by type.",
            ["type"],
            registry=registry,
        )
        self.nodes = Gauge(
            "numascope_hub_nodes", "Nodes of the fleet by status.", ["status"], registry=registry
        )
