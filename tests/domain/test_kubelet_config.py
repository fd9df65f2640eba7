"""KubeletConfiguration parsing and validation."""

from __future__ import annotations

import pytest

from app.adapters.kubelet_files import load_kubelet_config, parse_kubelet_config_text
from app.domain.cpuset import CPUSet
from app.domain.kubelet_config import KubeletConfig, KubeletConfigError, kubelet_config_from_dict
from app.domain.memorymanager.memory_manager import (
    MemoryManagerConfigError,
    get_system_reserved_memory,
)
from app.domain.node.model import Node
from app.domain.presets import get_preset


def validate_reserved_memory(cfg: KubeletConfig, numa_ids: list[int]) -> None:
    get_system_reserved_memory(
        numa_ids, cfg.node_allocatable_memory_reservation(), cfg.reserved_memory
    )


FULL = """
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
reservedSystemCPUs: "0,64"
kubeReserved: {cpu: "1", memory: 1Gi}
systemReserved: {memory: 512Mi}
evictionHard: {memory.available: 100Mi}
memoryManagerPolicy: Static
reservedMemory:
  - numaNode: 0
    limits: {memory: 1124Mi}
  - numaNode: 1
    limits: {memory: 512Mi}
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
topologyManagerPolicyOptions:
  prefer-closest-numa-nodes: "true"
featureGates:
  PodLevelResourceManagers: true
"""


def test_full_configuration_is_read() -> None:
    cfg = parse_kubelet_config_text(FULL, "1.37")
    assert cfg.cpu_manager_policy == "static"
    assert cfg.cpu_manager_policy_options == {"full-pcpus-only": "true"}
    assert cfg.reserved_system_cpus == CPUSet.parse("0,64")
    assert cfg.memory_manager_policy == "Static"
    assert [r.numa_node for r in cfg.reserved_memory] == [0, 1]
    assert cfg.reserved_memory[0].limits == {"memory": 1124 * 1024**2}
    assert cfg.topology_manager_policy == "single-numa-node"
    assert cfg.topology_manager_scope == "pod"
    assert cfg.pod_level_resource_managers is True
    assert cfg.node_allocatable_memory_reservation() == {"memory": (1024 + 512 + 100) * 1024**2}
    validate_reserved_memory(cfg, [0, 1])


def test_defaults_follow_the_release() -> None:
    cfg = kubelet_config_from_dict({}, "1.37")
    assert cfg.cpu_manager_policy == "none"
    assert cfg.topology_manager_scope == "container"
    assert cfg.gate("PodLevelResources") is True
    assert cfg.gate("PodLevelResourceManagers") is False
    assert cfg.gate("CPUManagerPolicyBetaOptions") is True


@pytest.mark.parametrize(
    ("doc", "field", "text"),
    [
        ({"cpuManagerPolicy": "dynamic"}, "cpuManagerPolicy", 'unknown policy: "dynamic"'),
        ({"memoryManagerPolicy": "static"}, "memoryManagerPolicy", 'unknown policy: "static"'),
        (
            {"topologyManagerPolicy": "strict"},
            "topologyManagerPolicy",
            'topologyManagerPolicy (--topology-manager-policy) "strict" must be one of',
        ),
        (
            {"topologyManagerScope": "node"},
            "topologyManagerScope",
            '"node" must be one of: "container", or "pod"',
        ),
        ({"reservedSystemCPUs": "0-"}, "reservedSystemCPUs", "unable to parse reservedSystemCPUs"),
        ({"kubeReserved": {"cpu": "lots"}}, "kubeReserved.cpu", "lots"),
        ({"featureGates": {"PodLevelResourceManagers": "yes"}}, "featureGates.", "true or false"),
        (
            {"reservedMemory": [{"numaNode": 0, "limits": {"cpu": "1"}}]},
            "reservedMemory[0].limits.cpu",
            'the limit type "cpu" for NUMA node 0 is not supported',
        ),
        (
            {"reservedMemory": [{"numaNode": 0, "limits": {"memory": "0"}}]},
            "reservedMemory[0].limits.memory",
            "reserved memory may not be zero for NUMA node 0",
        ),
        (
            {
                "reservedMemory": [
                    {"numaNode": 0, "limits": {"memory": "1Gi"}},
                    {"numaNode": 0, "limits": {"memory": "1Gi"}},
                ]
            },
            "reservedMemory[1].limits.memory",
            "duplicate value for NUMA node 0",
        ),
        ({"reservedMemory": [{"numaNode": -1}]}, "reservedMemory[0].numaNode", "NUMA node id"),
        ({"kind": "Pod"}, "kind", "KubeletConfiguration"),
        (
            {"featureGates": {"PodLevelResources": False, "PodLevelResourceManagers": True}},
            "featureGates.PodLevelResourceManagers",
            "requires PodLevelResources",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_invalid_configurations_name_the_field(doc: dict, field: str, text: str) -> None:
    with pytest.raises(KubeletConfigError) as info:
        kubelet_config_from_dict(doc, "1.37")
    assert info.value.field.startswith(field)
    assert text in str(info.value)


def test_gate_unknown_before_its_release() -> None:
    with pytest.raises(KubeletConfigError, match="unrecognized feature gate"):
        kubelet_config_from_dict({"featureGates": {"PodLevelResourceManagers": True}}, "1.35")


def test_unknown_release() -> None:
    with pytest.raises(KubeletConfigError, match="unsupported kubelet release"):
        kubelet_config_from_dict({}, "1.20")


@pytest.mark.parametrize(
    ("kube", "system", "expected"),
    [({"cpu": "1"}, {}, 1), ({"cpu": "500m"}, {"cpu": "600m"}, 2), ({}, {"cpu": "2"}, 2)],
)
def test_num_reserved_cpus_rounds_up(kube: dict, system: dict, expected: int) -> None:
    cfg = kubelet_config_from_dict({"kubeReserved": kube, "systemReserved": system})
    assert cfg.num_reserved_cpus() == expected


def test_num_reserved_cpus_errors() -> None:
    with pytest.raises(KubeletConfigError, match="unable to determine reserved CPU"):
        kubelet_config_from_dict({}).num_reserved_cpus()
    with pytest.raises(KubeletConfigError, match="greater than zero"):
        kubelet_config_from_dict({"kubeReserved": {"cpu": "0"}}).num_reserved_cpus()


# Shaped like the pod-level resource managers tutorial's configuration: static policies, the
# memory reservation, no CPU reservation at all.
TUTORIAL_LIKE = {
    "cpuManagerPolicy": "static",
    "memoryManagerPolicy": "Static",
    "topologyManagerPolicy": "single-numa-node",
    "topologyManagerScope": "pod",
    "systemReserved": {"memory": "1Gi"},
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
    "featureGates": {"PodLevelResources": True, "PodLevelResourceManagers": True},
}


@pytest.mark.parametrize(
    ("extra", "kubelet_text", "advice"),
    [
        pytest.param(
            {},
            "[cpumanager] unable to determine reserved CPU resources for static policy. ",
            'add kubeReserved.cpu or systemReserved.cpu (e.g. kubeReserved: {cpu: "1"}), '
            'or reservedSystemCPUs (e.g. reservedSystemCPUs: "0")',
            id="none",
        ),
        pytest.param(
            {"kubeReserved": {"cpu": "0"}},
            "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to "
            "be greater than zero. ",
            "Raise kubeReserved.cpu or systemReserved.cpu above 0",
            id="zero",
        ),
    ],
)
def test_missing_cpu_reservation_says_what_to_add(
    extra: dict, kubelet_text: str, advice: str
) -> None:
    cfg = kubelet_config_from_dict({**TUTORIAL_LIKE, **extra})
    with pytest.raises(KubeletConfigError) as info:
        Node("n", get_preset("topoDualSocketHT"), cfg)
    assert info.value.field == "kubeReserved"
    assert info.value.message.startswith(kubelet_text)
    assert advice in info.value.message


@pytest.mark.parametrize(
    "fix",
    [{"kubeReserved": {"cpu": "1"}}, {"systemReserved": {"cpu": "1", "memory": "1Gi"}},
     {"reservedSystemCPUs": "0"}],
)  # fmt: skip
def test_each_suggested_cpu_reservation_is_accepted(fix: dict) -> None:
    node = Node(
        "n", get_preset("topoDualSocketHT"), kubelet_config_from_dict({**TUTORIAL_LIKE, **fix})
    )
    assert node.reserved_cpus.size() == 1


def test_reserved_memory_must_match_node_allocatable() -> None:
    cfg = kubelet_config_from_dict(
        {
            "kubeReserved": {"memory": "16Gi"},
            "reservedMemory": [{"numaNode": 0, "limits": {"memory": "16548Mi"}}],
        }
    )
    with pytest.raises(MemoryManagerConfigError) as info:
        validate_reserved_memory(cfg, [0, 1])
    assert info.value.message == (
        'the total amount "16548Mi" of type "memory" is not equal to the value "16484Mi" '
        "determined by Node Allocatable feature"
    )


def test_reserved_memory_on_missing_numa_node() -> None:
    cfg = kubelet_config_from_dict(
        {"reservedMemory": [{"numaNode": 3, "limits": {"memory": "100Mi"}}]}
    )
    with pytest.raises(MemoryManagerConfigError, match="NUMA node 3 that does not exist"):
        validate_reserved_memory(cfg, [0, 1])


def test_load_errors(tmp_path) -> None:
    with pytest.raises(KubeletConfigError, match="no such file"):
        load_kubelet_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("cpuManagerPolicy: [static\n")
    with pytest.raises(KubeletConfigError, match="not valid YAML"):
        load_kubelet_config(bad)
    with pytest.raises(KubeletConfigError, match="is a directory"):
        load_kubelet_config(tmp_path)
