"""The release table (app/domain/releases.py) and the release-dependent rules that ask it."""

from __future__ import annotations

import pytest

from app.domain import releases
from app.domain.admission import SMTAlignmentError
from app.domain.cpumanager.cpu_assignment.distributed import take_by_topology_numa_distributed
from app.domain.cpumanager.policy_static import StaticPolicy
from app.domain.cpumanager.state import CPUManagerState
from app.domain.cpuset import CPUSet
from app.domain.feature_gate_tables import KNOWN
from app.domain.kubelet_config import KubeletConfig
from app.domain.kubelet_metrics import resource_manager_prefix
from app.domain.pod.manifest import pod_from_conformance
from app.domain.presets import get_preset


def test_rows_are_ordered_and_named_once() -> None:
    assert tuple(r.name for r in releases.TABLE) == releases.RELEASES
    assert len(set(releases.RELEASES)) == len(releases.RELEASES)
    assert releases.DEFAULT_RELEASE in releases.RELEASES
    assert releases.RELEASES[-1] == releases.NEWEST
    assert releases.get(releases.NEWEST).code_ref == "master"


def test_a_change_stays_once_it_is_introduced() -> None:
    for change, first in releases.INTRODUCED.items():
        carried = [releases.has(r, change) for r in releases.RELEASES]
        assert carried == [not releases.is_newer(first, r) for r in releases.RELEASES], change
        assert change in releases.PULL_REQUEST


@pytest.mark.parametrize(
    ("change", "first"),
    [
        (releases.MEMORY_SKIP_NO_REQUEST, "1.37"),
        (releases.CPU_RESTORE_BEFORE_SMT, "1.38"),
        (releases.DISTRIBUTED_COPY_BEST, "1.38"),
        (releases.DISTRIBUTED_ALIGN_BY_SOCKET, "1.38"),
        (releases.DISTRIBUTED_MIN_NUMAS_FROM_HINT, "1.38"),
        (releases.MEMORY_POD_HINTS, "1.38"),
        (releases.POD_BUDGET_WITHOUT_INIT_CHECK, "1.38"),
    ],
)
def test_where_each_change_of_this_issue_lands(change: str, first: str) -> None:
    assert releases.INTRODUCED[change] == first


def test_unknown_release_and_change_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unsupported kubelet release '1\.39'; use one of 1\.35"):
        releases.get("1.39")
    with pytest.raises(KeyError):
        releases.has("1.37", "no-such-change")


def test_checkpoint_versions_written_and_read() -> None:
    assert releases.get("1.35").writes(True) == ("V2", "V1")  # the gate does not exist there
    assert releases.get("1.36").writes(False) == ("V2", "V1")
    assert releases.get("1.36").writes(True) == ("V3", "V2")
    assert releases.get("1.37").writes(False) == ("V4", "V3")
    assert releases.get("1.38").writes(True) == ("V4", "V3")
    assert releases.get("1.38").checkpoint_line == "1.37"
    for row in releases.TABLE:
        cpu, memory = row.writes(row.knows_pod_level_gate)
        assert cpu in row.cpu_reads and memory in row.memory_reads, row.name


def test_metric_prefix_and_gate_defaults_come_from_the_table() -> None:
    assert [resource_manager_prefix(r) for r in releases.RELEASES] == [
        None,
        "",
        "kubelet_",
        "kubelet_",
    ]
    for row in releases.TABLE:
        config = KubeletConfig(release=row.name)
        assert config.gate("PodLevelResourceManagers") is False
        assert config.gate("PodLevelResources") is True


def _full_node_policy(release: str) -> tuple[StaticPolicy, CPUManagerState]:
    topo = get_preset("topoDualSocketHT")
    policy = StaticPolicy(
        topo, 2, CPUSet.parse("0,6"), {"full-pcpus-only": "true"}, release=release
    )
    state = CPUManagerState(default_cpuset=CPUSet.parse("0,6"))
    state.set_cpu_set("running", "app", CPUSet.parse("1-5,7-11"))
    return policy, state


RUNNING = pod_from_conformance(
    {
        "uid": "running",
        "containers": [
            {
                "name": "app",
                "requests": {"cpu": "10", "memory": "1G"},
                "limits": {"cpu": "10", "memory": "1G"},
            }
        ],
    }
)


@pytest.mark.parametrize("release", ["1.35", "1.36", "1.37"])
def test_readmission_on_a_full_node_fails_the_smt_check_before_1_38(release: str) -> None:
    policy, state = _full_node_policy(release)
    with pytest.raises(SMTAlignmentError, match="available physical CPUs = 0"):
        policy.allocate(state, RUNNING, "app")
    assert policy.metrics.pinning_errors_total == 1


def test_readmission_keeps_checkpointed_cpus_on_1_38() -> None:
    """kubernetes#129079: the checkpoint lookup comes before enforceSMTAlignment."""
    policy, state = _full_node_policy("1.38")
    policy.allocate(state, RUNNING, "app")
    assert state.get_cpu_set("running", "app") == CPUSet.parse("1-5,7-11")
    assert policy.metrics.pinning_errors_total == 0
    # A new container still meets the check.
    new = pod_from_conformance(
        {
            "uid": "new",
            "containers": [
                {
                    "name": "c",
                    "requests": {"cpu": "1", "memory": "1G"},
                    "limits": {"cpu": "1", "memory": "1G"},
                }
            ],
        }
    )
    with pytest.raises(SMTAlignmentError, match="not multiple cpus per core"):
        policy.allocate(state, new, "c")


def test_min_numas_from_hint_raises_the_floor() -> None:
    topo = get_preset("topoDualSocketMultiNumaPerSocketHT")
    one = take_by_topology_numa_distributed(topo, topo.all_cpus, 8, 1)
    two = take_by_topology_numa_distributed(topo, topo.all_cpus, 8, 1, min_numas_from_hint=2)
    assert topo.numa_nodes_of(one) == [0]
    assert topo.numa_nodes_of(two) == [0, 1]
    # A floor above what the request can use leaves the original behaviour (PR description).
    five = take_by_topology_numa_distributed(topo, topo.all_cpus, 8, 1, min_numas_from_hint=5)
    assert five == one


def test_known_gates_agree_with_the_pod_level_gate_column() -> None:
    assert set(KNOWN) == set(releases.RELEASES)
    for row in releases.TABLE:
        assert ("PodLevelResourceManagers" in KNOWN[row.name]) == row.knows_pod_level_gate
        assert set(row.gate_defaults) <= KNOWN[row.name] | {"PodLevelResourceManagers"}
