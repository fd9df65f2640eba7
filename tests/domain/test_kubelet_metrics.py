"""The kubelet series of a simulated node (app/domain/kubelet_metrics.py): names per release,
registration, merged CPU/memory counters and the text format."""

from __future__ import annotations

import pytest

from app.domain.cpumanager.metrics import CPUManagerMetrics
from app.domain.kubelet_metrics import Family, Sample, exposition, kubelet_families
from app.domain.memorymanager.metrics import MemoryManagerMetrics


def names(families: list[Family]) -> list[str]:
    return [f.name for f in families]


@pytest.mark.parametrize(
    ("release", "gate", "expected"),
    [
        ("1.35", False, None),
        ("1.36", False, None),
        ("1.36", True, "resource_manager_allocations_total"),
        ("1.37", True, "kubelet_resource_manager_allocations_total"),
        ("1.38", True, "kubelet_resource_manager_allocations_total"),
    ],
)
def test_resource_manager_series_per_release(
    release: str, gate: bool, expected: str | None
) -> None:
    got = [n for n in names(kubelet_families(release, None, None, pod_level_resource_managers=gate))
           if "resource_manager_allocations" in n]  # fmt: skip
    assert got == ([] if expected is None else [expected])


def test_cpu_and_memory_counters_share_the_resource_manager_series() -> None:
    cpu, mem = CPUManagerMetrics(), MemoryManagerMetrics()
    cpu.allocations_total[("cpu", "pod")] += 2
    mem.allocations_total[("memory", "pod")] += 3
    mem.allocation_errors_total[("memory", "node")] += 1
    mem.pinning_requests_total = 4
    fams = {f.name: f for f in kubelet_families("1.37", cpu, mem, pod_level_resource_managers=True)}
    alloc = fams["kubelet_resource_manager_allocations_total"]
    assert [(dict(s.labels), s.value) for s in alloc.samples] == [
        ({"resource_name": "cpu", "source": "pod"}, 2.0),
        ({"resource_name": "memory", "source": "pod"}, 3.0),
    ]
    assert alloc.stability == "BETA"
    assert fams["kubelet_memory_manager_pinning_requests_total"].samples == (Sample((), 4.0),)
    # The policies' own counters are not changed by the merge.
    assert dict(cpu.allocations_total) == {("cpu", "pod"): 2}


def test_policy_none_exposes_zeros() -> None:
    fams = {
        f.name: f for f in kubelet_families("1.37", None, None, pod_level_resource_managers=False)
    }
    assert fams["kubelet_memory_manager_pinning_errors_total"].samples == (Sample((), 0.0),)
    assert fams["kubelet_cpu_manager_pinning_requests_total"].samples == (Sample((), 0.0),)


def test_exposition_text_format() -> None:
    fam = Family(
        "x_total", "counter", "Things.", (Sample((("a", 'q"\\\n'),), 2.0), Sample((), 1.5))
    )
    assert exposition([fam]) == (
        "# HELP x_total [ALPHA] Things.\n"
        "# TYPE x_total counter\n"
        'x_total{a="q\\"\\\\\\n"} 2\n'
        "x_total 1.5\n"
    )


def test_families_come_out_as_the_kubelet_registry_gathers_them() -> None:
    """prometheus/client_golang's Gather (the kubelet's /metrics): families by name, label
    pairs by label name, samples by label values compared as strings; a labelled family with
    no label values set is not written at all."""
    cpu = CPUManagerMetrics()
    cpu.allocation_per_numa.update({2: 1, 10: 3})
    cpu.container_assignments[("memory", "pod_shared")] += 1
    cpu.container_assignments[("cpu", "pod_shared")] += 1
    cpu.container_assignments[("cpu", "node_exclusive")] += 1
    fams = kubelet_families("1.37", cpu, None, pod_level_resource_managers=True)
    assert names(fams) == sorted(names(fams))
    text = exposition(fams)
    per_numa = [ln for ln in text.splitlines() if ln.startswith("kubelet_cpu_manager_alloc")]
    assert per_numa == [
        'kubelet_cpu_manager_allocation_per_numa{numa_node="10"} 3',
        'kubelet_cpu_manager_allocation_per_numa{numa_node="2"} 1',
    ]
    assignments = [
        ln for ln in text.splitlines() if ln.startswith("kubelet_resource_manager_container")
    ]
    assert assignments == [
        'kubelet_resource_manager_container_assignments{assignment_type="node_exclusive",'
        'resource_name="cpu"} 1',
        'kubelet_resource_manager_container_assignments{assignment_type="pod_shared",'
        'resource_name="cpu"} 1',
        'kubelet_resource_manager_container_assignments{assignment_type="pod_shared",'
        'resource_name="memory"} 1',
    ]
    # Registered, nothing counted: in the families (the JSON twin), not in the text.
    errors = next(f for f in fams if f.name == "kubelet_resource_manager_allocation_errors_total")
    assert errors.samples == ()
    assert "allocation_errors_total" not in text
    assert "kubelet_cpu_manager_pinning_errors_total 0" in text  # a plain counter always is
