"""NUMA nodes and distances seen by the topology manager
(follows pkg/kubelet/cm/topologymanager/numa_info.go, v1.37).

``NUMAInfo`` holds the machine's NUMA node ids (ascending) and, when the
``prefer-closest-numa-nodes`` option is on, each node's distance row (SLIT, as
``/sys/devices/system/node/node<N>/distance`` or cAdvisor report it).

``closest`` compares average distances. Upstream averages in float64 over all ordered pairs
of the mask (self pairs included); both masks have the same number of nodes when it is
called, so comparing the integer sums gives the same order without rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from app.domain.topology.model import CPUTopology
from app.domain.topologymanager import bitmask


class NUMAInfoError(ValueError):
    """The NUMA layout cannot be used (for example distances are missing)."""


@dataclass(frozen=True, slots=True)
class NUMAInfo:
    """``NUMAInfo``: node ids and distance rows (``distances[a][b]``)."""

    nodes: tuple[int, ...]
    distances: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        nodes: Iterable[int],
        distances: Mapping[int, Sequence[int] | None] | None = None,
        *,
        prefer_closest_numa: bool = False,
    ) -> NUMAInfo:
        """``NewNUMAInfo``: with ``prefer_closest_numa`` every node needs a distance row."""
        ids = tuple(sorted(set(nodes)))
        for i in ids:
            if not 0 <= i <= bitmask.MAX_NUMA_ID:
                raise NUMAInfoError(f"NUMA node id {i} is outside 0..{bitmask.MAX_NUMA_ID}")
        rows: dict[int, tuple[int, ...]] = {}
        if prefer_closest_numa:
            for i in ids:
                row = (distances or {}).get(i)
                if not row:
                    raise NUMAInfoError("error getting NUMA distances from cadvisor")
                rows[i] = tuple(int(d) for d in row)
        return cls(ids, rows)

    @classmethod
    def from_topology(cls, topology: CPUTopology, *, prefer_closest_numa: bool = False) -> NUMAInfo:
        """Nodes of a ``CPUTopology`` (CPU and memory nodes) with its distance rows."""
        ids = set(topology.numa_node_ids()) | {m.numa_id for m in topology.memory}
        rows = {m.numa_id: tuple(m.distances) for m in topology.memory if m.distances}
        return cls.new(ids, rows, prefer_closest_numa=prefer_closest_numa)

    def default_affinity_mask(self) -> int:
        """``DefaultAffinityMask``: every NUMA node."""
        return bitmask.mask_of(self.nodes)

    def narrowest(self, m1: int, m2: int) -> int:
        """``Narrowest``: fewer nodes, then the numerically smaller mask."""
        return m1 if bitmask.is_narrower_than(m1, m2) else m2

    def closest(self, m1: int, m2: int) -> int:
        """``Closest``: narrower first; equal sizes -> lower average distance, then smaller."""
        if m1.bit_count() != m2.bit_count():
            return self.narrowest(m1, m2)
        d1 = self._distance_sum(m1)
        d2 = self._distance_sum(m2)
        if d1 == d2:
            return m1 if bitmask.is_less_than(m1, m2) else m2
        return m1 if d1 < d2 else m2

    def knows_every_distance(self) -> bool:
        """Every node's distance row reaches every node (``closest`` of the machine's masks
        then never fails)."""
        top = self.nodes[-1] if self.nodes else -1
        return all(len(self.distances.get(a, ())) > top for a in self.nodes)

    def calculate_average_for(self, mask: int) -> Fraction:
        """``CalculateAverageFor``: mean distance over all ordered node pairs of ``mask``."""
        n = mask.bit_count()
        if n == 0:
            return Fraction(0)
        return Fraction(self._distance_sum(mask), n * n)

    def _distance_sum(self, mask: int) -> int:
        ids = bitmask.bits(mask)
        total = 0
        for a in ids:
            row = self.distances.get(a)
            if row is None:
                raise NUMAInfoError(f"no NUMA distances known for node {a}")
            for b in ids:
                if b >= len(row):
                    raise NUMAInfoError(f"no NUMA distance known from node {a} to node {b}")
                total += row[b]
        return total
