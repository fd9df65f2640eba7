"""The catalog: node names to ``NodeSource``s (``app.services.nodes.source``). Routes, the CLI
and the hub ask it for a node and then ask the node; nobody else knows which kinds exist.

Kinds, in the order a name is looked up (the first that has it answers):

1. the node this process observes (``ObservedSource``), when ``--observe``;
2. the hub's demo-fleet nodes (``SimulatedNode``), when ``--demo-fleet N``;
3. the nodes of the hub's agents (``RemoteNode``, read through the hub), when ``--hub``;
4. stored simulated nodes (``StoredNode``): every other name; a name no simulated node has is
   ``UnknownNodeError`` (404) on first use, with the simulated nodes listed. A process that
   keeps none (``NoSimulatedNodes``, ``serve --no-simulated``) says so at once.

No simulated node may be created under a name of the first three kinds (``NodeExistsError``).
The nodes index lists the observed node first, then the stored simulated ones: the fleet's
nodes (thousands) are listed by the fleet pages, not here.

Changes (admit, remove, restart, delete) need a ``WritableNodeSource``: ``writable`` answers
one or refuses with ``ReadOnlyNodeError`` (409) saying what kind of node it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from app.domain.kubelet_config import RELEASES
from app.domain.presets import preset_names
from app.services.encoded_json import EncodedJSON, encode
from app.services.node_views import NodeIndexView
from app.services.nodes.errors import ReadOnlyNodeError, UnknownNodeError
from app.services.nodes.no_store import NoSimulatedNodes
from app.services.nodes.observed import ObservedSource
from app.services.nodes.source import NodeSource, WritableNodeSource
from app.services.nodes.stored import StoredNode

if TYPE_CHECKING:
    from app.services.nodes.demo_fleet import DemoFleet
    from app.services.nodes.service import NodeService
    from app.services.observe.observer import NodeObserver

log = logging.getLogger(__name__)
#: Whether the sources of a class are ``WritableNodeSource``s.
_WRITABLE: dict[type, bool] = {}

#: Looks up a remote agent's node by name (``None``: no agent reports it).
RemoteLookup = Callable[[str], NodeSource | None]


class NodeCatalog:
    """Every node of one process (see the module docstring)."""

    def __init__(
        self,
        service: NodeService | NoSimulatedNodes,
        *,
        observer: NodeObserver | None = None,
        fleet: DemoFleet | None = None,
        remote: RemoteLookup | None = None,
    ) -> None:
        # Typed as the service routes ask: NoSimulatedNodes answers each of their questions
        # as a service without nodes would (no rows, UnknownNodeError).
        self.service = cast("NodeService", service)
        self.observed = ObservedSource(observer) if observer is not None else None
        self.fleet = fleet
        self.remote = remote
        service.registry.taken = self._taken
        if self.observed is not None and self.observed.name in service.registry.simulated_names():
            log.warning(
                "the observed node %s has the name of a simulated node; the observed one is shown",
                self.observed.name,
            )

    def _other_kind(self, name: str) -> NodeSource | None:
        if self.observed is not None and self.observed.name == name:
            return self.observed
        if self.fleet is not None and (sim := self.fleet.nodes.get(name)) is not None:
            return sim
        if self.remote is not None:
            return self.remote(name)
        return None

    def _taken(self, name: str) -> bool:
        return self._other_kind(name) is not None

    # -- lookups -------------------------------------------------------------------------------
    def get(self, name: str) -> NodeSource:
        """The node called ``name`` (see the module docstring for the order)."""
        found = self._other_kind(name)
        if found is not None:
            return found
        if isinstance(self.service, NoSimulatedNodes):
            raise UnknownNodeError(name, ())
        return StoredNode(self.service, name)

    def writable(self, name: str, action: str) -> WritableNodeSource:
        """The node called ``name`` if it can be changed; else ``ReadOnlyNodeError`` saying it
        cannot ``action``."""
        source = self.get(name)
        writable = _WRITABLE.get(type(source))
        if writable is None:  # a protocol's isinstance looks up each member: once per class
            writable = _WRITABLE[type(source)] = isinstance(source, WritableNodeSource)
        if not writable:
            kind = "an observed node" if source is self.observed else "a node of the fleet"
            raise ReadOnlyNodeError(name, action, kind=kind)
        return cast("WritableNodeSource", source)

    def names(self) -> list[str]:
        """The nodes of the index: the observed one (if any) first, then the simulated ones."""
        simulated = self.service.registry.simulated_names()
        if self.observed is None:
            return simulated
        return [self.observed.name, *(n for n in simulated if n != self.observed.name)]

    def sources(self) -> Iterable[NodeSource]:
        """The nodes of the index, as sources."""
        return [self.get(n) for n in self.names()]

    def fleet_nodes(self) -> list[NodeSource]:
        """The hub's demo-fleet nodes built so far (seed order)."""
        return list(self.fleet.list()) if self.fleet is not None else []

    # -- the index -------------------------------------------------------------------------------
    def index(self) -> NodeIndexView:
        hidden: tuple[str, ...] = ()
        observed = []
        if self.observed is not None:
            observed = [self.observed.summary()]
            hidden = (self.observed.name,)
        summaries = observed + self.service.reads.summaries(hidden=hidden)
        return NodeIndexView(nodes=summaries, presets=preset_names(), releases=list(RELEASES))

    def index_json(self) -> EncodedJSON:
        """The nodes index (small: encoded per request, still with its ETag)."""
        return encode(self.index())

    def metric_samples(self) -> Iterable[tuple[str, dict[str, str], float]]:
        """Samples of every node of the index for the Prometheus collector (users.md §5.4)."""
        hidden: tuple[str, ...] = ()
        if self.observed is not None:
            hidden = (self.observed.name,)
            try:
                yield from self.observed.observer.metric_samples()
            except Exception:  # a failing observation must not break the scrape
                log.exception("observed node %s: no metrics", self.observed.name)
        yield from self.service.reads.metric_samples(hidden=hidden)
