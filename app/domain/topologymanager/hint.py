"""Topology hints (follows pkg/kubelet/cm/topologymanager/topology_manager.go, v1.37)."""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.topologymanager.bitmask import bits


@dataclass(frozen=True, slots=True)
class TopologyHint:
    """``TopologyHint``: a NUMA affinity (``None`` = no affinity / nil mask) and preference."""

    numa_affinity: int | None
    preferred: bool

    def numa_ids(self) -> list[int] | None:
        return None if self.numa_affinity is None else bits(self.numa_affinity)

    def is_equal(self, other: TopologyHint) -> bool:
        return self.preferred == other.preferred and self.numa_affinity == other.numa_affinity

    def less_than(self, other: TopologyHint) -> bool:
        """``LessThan``: preferred first, then the narrower mask."""
        if self.preferred != other.preferred:
            return self.preferred
        a = self.numa_affinity or 0
        b = other.numa_affinity or 0
        return a.bit_count() < b.bit_count() or (a.bit_count() == b.bit_count() and a < b)

    def to_dict(self) -> dict[str, object]:
        return {"numa": self.numa_ids(), "preferred": self.preferred}


# Hints from a provider: resource name -> list of hints. ``None`` for a resource means
# "no preference"; an empty list means "no possible affinity".
ProviderHints = dict[str, list[TopologyHint] | None]
