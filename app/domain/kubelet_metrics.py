"""The resource-manager series a simulated node's kubelet would expose on its ``/metrics``
(follows pkg/kubelet/metrics/metrics.go; counted by the CPU and memory managers' policies,
``app.domain.cpumanager.metrics`` and ``app.domain.memorymanager.metrics``).

Names, types, help texts and labels are the kubelet's:

* ``kubelet_cpu_manager_*`` and ``kubelet_container_aligned_compute_resources_*`` (always
  registered; zero when the CPU manager policy is ``none``);
* ``kubelet_memory_manager_pinning_{requests,errors}_total`` (registered while the
  ``MemoryManager`` gate is on, locked on in every release here; zero under policy ``None``);
* the KEP-5526 series ``resource_manager_allocations_total``,
  ``resource_manager_allocation_errors_total`` and ``resource_manager_container_assignments``
  (a counter without ``_total``), only while ``PodLevelResourceManagers`` is on. 1.36 registers
  them without a subsystem; from 1.37 they carry the ``kubelet_`` subsystem
  (kubernetes#138770). 1.35 has neither the gate nor the series.

Help texts are Numascope's own words (the names, types and labels are the interface). What a
scrape shows follows the kubelet's registry (prometheus/client_golang ``Gather``): families
sorted by name, label pairs sorted by label name, samples sorted by their label values (as
strings: ``numa_node="10"`` before ``"2"``); a labelled family shows only the label values set
so far, and one with none set (a fresh ``CounterVec``/``GaugeVec``) is left out of the text,
HELP and TYPE included. The JSON twin still lists every registered family, samples or not.
``exposition`` writes the Prometheus text format 0.0.4 by hand: the kubelet's names must come
out exactly, and prometheus-client would rename a counter without ``_total``.

Per release, the CPU gauges follow ``app.domain.cpumanager.gauges`` (deltas in 1.36/1.37,
recomputed from the state in 1.38, kubernetes#141261); the counters are counted alike in
1.36-1.38 (kubernetes#134768 added them; kubernetes#138770 gave them the subsystem and BETA in
1.37). The same PR's memory-manager change is modelled in
``app.domain.memorymanager.policy_static`` (from 1.37 a container that requests no memory is
skipped before the pinning counter); one PR, one release (``app.domain.releases``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.domain import releases
from app.domain.cpumanager.metrics import CPUManagerMetrics, ResourceManagerCounters
from app.domain.memorymanager.metrics import MemoryManagerMetrics

KUBELET = "kubelet_"


@dataclass(frozen=True, slots=True)
class Sample:
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    type: str  # "counter" | "gauge"
    help: str
    samples: tuple[Sample, ...]
    stability: str = "ALPHA"


def _normalized(f: Family) -> Family:
    """Labels by name, samples by label values, as client_golang's ``Gather`` hands them."""
    samples = [Sample(tuple(sorted(s.labels)), s.value) for s in f.samples]
    samples.sort(key=lambda s: (len(s.labels), [v for _, v in s.labels]))
    return dataclasses.replace(f, samples=tuple(samples))


def _single(name: str, kind: str, help_text: str, value: float) -> Family:
    return Family(name, kind, help_text, (Sample((), float(value)),))


def _labelled(
    name: str, help_text: str, counts: Counter[tuple[str, str]], labels: tuple[str, str]
) -> Family:
    samples = tuple(
        Sample(((labels[0], k[0]), (labels[1], k[1])), float(v)) for k, v in sorted(counts.items())
    )
    return Family(name, "counter", help_text, samples)


def resource_manager_prefix(release: str) -> str | None:
    """The name prefix of the KEP-5526 series in ``release``; None: not registered."""
    return releases.get(release).resource_manager_metric_prefix


#: The unlabelled CPU manager series: name, type, help, the counter's attribute.
_CPU_SINGLES = (
    (
        "cpu_manager_pinning_requests_total",
        "counter",
        "CPU allocations that needed exclusive CPUs (pinning).",
        "pinning_requests_total",
    ),
    (
        "cpu_manager_pinning_errors_total",
        "counter",
        "CPU allocations that needed exclusive CPUs and failed.",
        "pinning_errors_total",
    ),
    (
        "cpu_manager_shared_pool_size_millicores",
        "gauge",
        "Size of the shared CPU pool, in millicores.",
        "shared_pool_size_millicores",
    ),
    (
        "cpu_manager_exclusive_cpu_allocation_count",
        "gauge",
        "CPUs allocated exclusively to containers.",
        "exclusive_cpu_allocation_count",
    ),
)

#: The memory manager's series, alike.
_MEMORY_SINGLES = (
    (
        "memory_manager_pinning_requests_total",
        "counter",
        "Memory allocations that needed NUMA pinning.",
        "pinning_requests_total",
    ),
    (
        "memory_manager_pinning_errors_total",
        "counter",
        "Memory allocations that needed NUMA pinning and failed.",
        "pinning_errors_total",
    ),
)


def _singles(table: Sequence[tuple[str, str, str, str]], counters: object) -> list[Family]:
    return [
        _single(KUBELET + name, kind, help_text, getattr(counters, attribute))
        for name, kind, help_text, attribute in table
    ]


def _cpu_families(m: CPUManagerMetrics) -> list[Family]:
    per_numa = tuple(
        Sample((("numa_node", str(n)),), float(v)) for n, v in sorted(m.allocation_per_numa.items())
    )
    return [
        *_singles(_CPU_SINGLES, m),
        Family(
            KUBELET + "cpu_manager_allocation_per_numa",
            "gauge",
            "Exclusively allocated CPUs per NUMA node.",
            per_numa,
        ),
        _labelled(
            KUBELET + "container_aligned_compute_resources_count",
            "Containers given compute resources aligned to a boundary.",
            m.aligned_compute_resources,
            ("scope", "boundary"),
        ),
        _labelled(
            KUBELET + "container_aligned_compute_resources_failure_count",
            "Containers whose aligned compute resources could not be allocated.",
            m.aligned_compute_resources_failure,
            ("scope", "boundary"),
        ),
    ]


def _memory_families(m: MemoryManagerMetrics) -> list[Family]:
    return _singles(_MEMORY_SINGLES, m)


def _merged(counters: Iterable[ResourceManagerCounters]) -> ResourceManagerCounters:
    out = ResourceManagerCounters()
    for c in counters:
        out.allocations_total.update(c.allocations_total)
        out.allocation_errors_total.update(c.allocation_errors_total)
        out.container_assignments.update(c.container_assignments)
    return out


def _resource_manager_families(prefix: str, rm: ResourceManagerCounters) -> list[Family]:
    # ALPHA in 1.36; kubernetes#138770 made them BETA together with the subsystem.
    stability = "BETA" if prefix else "ALPHA"
    families = [
        _labelled(
            prefix + "resource_manager_allocations_total",
            "Number of exclusive resource allocations performed by a resource manager, by "
            "resource and allocation source.",
            rm.allocations_total,
            ("resource_name", "source"),
        ),
        _labelled(
            prefix + "resource_manager_allocation_errors_total",
            "Number of errors of exclusive resource allocations, by resource and intended "
            "allocation source.",
            rm.allocation_errors_total,
            ("resource_name", "source"),
        ),
        _labelled(
            prefix + "resource_manager_container_assignments",
            "Cumulative number of containers granted a resource assignment, by resource and "
            "assignment type.",
            rm.container_assignments,
            ("resource_name", "assignment_type"),
        ),
    ]
    return [dataclasses.replace(f, stability=stability) for f in families]


def kubelet_families(
    release: str,
    cpu: CPUManagerMetrics | None,
    memory: MemoryManagerMetrics | None,
    *,
    pod_level_resource_managers: bool,
) -> list[Family]:
    """Every resource-manager family the kubelet of ``release`` registers, in the order its
    registry gathers them (see the module docstring). ``None`` for a manager whose policy
    counts nothing (``none``)."""
    families = _cpu_families(cpu or CPUManagerMetrics())
    families += _memory_families(memory or MemoryManagerMetrics())
    prefix = resource_manager_prefix(release)
    if prefix is not None and pod_level_resource_managers:
        present = [m for m in (cpu, memory) if m is not None]
        families += _resource_manager_families(prefix, _merged(present))
    return sorted((_normalized(f) for f in families), key=lambda f: f.name)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def exposition(families: Sequence[Family]) -> str:
    """Prometheus text format 0.0.4 (the shape of ``curl <kubelet>/metrics``)."""
    lines: list[str] = []
    for f in families:
        if not f.samples:
            continue  # a labelled family with no label values set is not gathered
        lines.append(f"# HELP {f.name} [{f.stability}] {f.help}")
        lines.append(f"# TYPE {f.name} {f.type}")
        for s in f.samples:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels)
            name = f"{f.name}{{{labels}}}" if labels else f.name
            lines.append(f"{name} {_number(s.value)}")
    return "\n".join(lines) + "\n"
