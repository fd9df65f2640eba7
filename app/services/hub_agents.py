"""What the fleet hub knows of each agent (``AgentState``: its status, last answer, ETag, nodes
and backoff) and how it is counted (``HubMetrics``: agents and nodes by status, poll latency
by outcome). ``app.services.hub`` polls the agents and keeps these up to date.

An agent is ``pending`` until its first answer, then ``ok`` or ``unreachable``; ``lastSeen``
is shown to ``LAST_SEEN_STEP`` seconds, so an agent answering 304s does not change the fleet
document (and its ETag) on every poll.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram

from app.contracts.summary import NodeSummaryV1

PENDING, OK, UNREACHABLE = "pending", "ok", "unreachable"
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


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class HubMetrics:
    """Agents up/down, poll latency, nodes by status (registered on the app's registry)."""

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
        self.nodes = Gauge(
            "numascope_hub_nodes", "Nodes of the fleet by status.", ["status"], registry=registry
        )
