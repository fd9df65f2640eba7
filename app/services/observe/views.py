"""The views of one observation of the real node: its pages' and JSON's view models, built
from the same ``NodeViews`` code as a simulated node's, labelled ``observed``, with the
sources, checkpoint files, stale entries and notes attached (``observation_view``).

``build_views`` turns an ``ObservedNode`` (``app.services.observe.observation``) into an
``ObservedViews``: the views and the node list's summary, or, when nothing usable was read
(no topology), only a summary that says why. ``app.services.observe.observer`` caches one per
observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.domain.observed import ObservedNode
from app.services.node_views import (
    NodeSummary,
    NodeViews,
    ObservationView,
    iso,
    node_topology_view,
    node_url,
)


def observation_view(observed: ObservedNode) -> ObservationView:
    """The provenance part of an observed node's pages and JSON."""

    def stamp(d: dict[str, Any]) -> dict[str, Any]:
        if isinstance(d.get("observedAt"), float | int):
            d["observedAt"] = iso(float(d["observedAt"]))
        return d

    return ObservationView(
        observed_at=iso(observed.observed_at),
        ready=observed.ready,
        sources=[stamp(s.to_dict()) for s in observed.sources],
        files=[stamp(f.to_dict()) for f in observed.files],
        pods=[i.to_dict() for i in observed.identities],
        stale=[s.to_dict() for s in observed.stale],
        errors=[{"source": s, "message": m} for s, m in observed.errors],
        notes=list(observed.notes),
        config_path=observed.config_path,
        config_inferred=observed.config_inferred,
        pod_dirs=None if observed.pod_uids is None else len(observed.pod_uids),
    )


@dataclass(frozen=True, slots=True)
class ObservedViews:
    """One observation and what the pages show of it (``views`` is ``None`` when the node
    could not be observed: the summary carries the reason as ``loadError``)."""

    observed: ObservedNode
    views: NodeViews | None
    summary: NodeSummary


def build_views(observed: ObservedNode, sysfs_root: str | Path) -> ObservedViews:
    """The views of ``observed`` (named as the observer names its node)."""
    name = observed.name
    snapshot = observed.snapshot
    errors = "; ".join(f"{s}: {m}" for s, m in observed.errors) or None
    if snapshot is None:
        return ObservedViews(observed, None, _unobserved_summary(observed, sysfs_root, errors))
    topology = node_topology_view(snapshot.topology, "host", "sysfs").model_copy(
        update={"url": "/topologies/host"}
    )
    views = NodeViews(
        snapshot,
        node=name,
        topology=topology,
        created_at=datetime.fromtimestamp(observed.observed_at, UTC),
        kubelet_config_text=observed.config_text or "",
        demo=False,
        pod_memory_requests={},
        simulated=False,
        source="observed",
        pools=observed.pools,
        stale_uids=observed.stale_uids,
        observation=observation_view(observed),
    )
    return ObservedViews(observed, views, views.summary(rejected=0, load_error=errors))


# What the node list shows of a node that could not be observed: nothing known.
_UNKNOWN_TOPOLOGY = {
    "name": "unknown",
    "kind": "sysfs",
    "sockets": 0,
    "numaNodes": 0,
    "cores": 0,
    "cpus": 0,
    "cpusPerCore": 0,
    "memoryBytes": 0,
    "url": None,
}
_UNKNOWN_POLICIES = {
    "cpuManagerPolicy": "",
    "cpuManagerPolicyOptions": {},
    "memoryManagerPolicy": "",
    "topologyManagerPolicy": "",
    "topologyManagerScope": "",
    "podLevelResources": False,
    "podLevelResourceManagers": False,
}


def _unobserved_summary(
    observed: ObservedNode, sysfs_root: str | Path, errors: str | None
) -> NodeSummary:
    """The node list's row of a node whose topology could not be read: empty, with why."""
    url = node_url(observed.name)
    return NodeSummary.model_validate(
        {
            "name": observed.name,
            "simulated": False,
            "source": "observed",
            "release": "",
            "topology": {**_UNKNOWN_TOPOLOGY, "argument": str(sysfs_root)},
            "policies": _UNKNOWN_POLICIES,
            "cpus": {},
            "pods": 0,
            "rejected": 0,
            "createdAt": iso(observed.observed_at),
            "loadError": errors or "the node could not be observed",
            "url": url,
            "jsonUrl": f"{url}.json",
            "apiUrl": f"/api/v1{url}",
        }
    )
