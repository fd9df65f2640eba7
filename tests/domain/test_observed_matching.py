"""Matching looks up the checkpoint UIDs that record a CPU set a PodResources pod reports
instead of comparing every pair: it finds the candidates every pairwise comparison finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cpuset import CPUSet
from app.domain.memorymanager.state import Block
from app.domain.observed.matching import Recorded, _evidence, match_recorded
from app.domain.podresources import ContainerMemory, ContainerResources, PodResources

NAMES = ("a", "b")
cpu_ids = st.lists(st.integers(0, 5), max_size=3).map(lambda ids: tuple(sorted(set(ids))))
blocks = st.lists(
    st.builds(Block, st.just((0,)), st.just("memory"), st.sampled_from([1, 2])), max_size=1
)


@st.composite
def recorded(draw: st.DrawFn) -> dict[str, Recorded]:
    out = {}
    for n in range(draw(st.integers(0, 6))):
        uid = f"uid-{n}"
        names = draw(st.lists(st.sampled_from(NAMES), unique=True))
        cpus = {name: CPUSet(draw(cpu_ids)) for name in names}
        pod_cpus = draw(st.none() | cpu_ids.map(CPUSet))
        memory = {
            name: tuple(draw(blocks))
            for name in draw(st.lists(st.sampled_from(NAMES), unique=True))
        }
        out[uid] = Recorded(uid, cpus, pod_cpus, memory)
    return out


def _memory(b: list[Block]) -> tuple[ContainerMemory, ...]:
    return tuple(ContainerMemory(x.type, x.size) for x in b)


containers = st.builds(
    ContainerResources, st.sampled_from(NAMES), st.just(()), cpu_ids, blocks.map(_memory)
)
pods = st.lists(
    st.builds(
        PodResources,
        st.just("p"),
        st.just("ns"),
        st.lists(containers, max_size=2, unique_by=lambda c: c.name).map(tuple),
        cpu_ids,
    ),
    max_size=6,
)


@st.composite
def reports(draw: st.DrawFn, rec: dict[str, Recorded]) -> list[PodResources]:
    """Random pods, and pods that report what a UID records (some with one set changed)."""
    listed = draw(pods)
    for r in rec.values():
        if not draw(st.booleans()):
            continue
        cs = [
            ContainerResources(
                name,
                cpu_ids=tuple(cpus) if draw(st.booleans()) else draw(cpu_ids),
                memory=_memory(list(r.memory.get(name, ()))),
            )
            for name, cpus in r.cpus.items()
        ]
        own = tuple(r.pod_cpus) if r.pod_cpus is not None and draw(st.booleans()) else ()
        listed.insert(draw(st.integers(0, len(listed))), PodResources("p", "ns", tuple(cs), own))
    return listed


@settings(max_examples=300, deadline=None)
@given(st.data(), recorded(), st.booleans(), st.booleans())
def test_candidates_are_those_of_every_pairwise_comparison(
    data: st.DataObject, rec: dict[str, Recorded], cpu_known: bool, mem_known: bool
) -> None:
    listed = data.draw(reports(rec))
    pairwise = {
        uid: tuple(i for i, pod in enumerate(listed) if _evidence(r, pod, cpu_known, mem_known))
        for uid, r in rec.items()
    }
    found = match_recorded(rec, listed, cpu_known, mem_known)
    assert dict(found.candidates) == {uid: c for uid, c in pairwise.items() if c}
