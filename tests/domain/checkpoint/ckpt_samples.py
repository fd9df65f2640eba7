"""Sample checkpoint states shared by the checkpoint tests."""

from __future__ import annotations

from app.domain.checkpoint import CPUCheckpointState

#: A 1.37 CPU state with a pod-level pod ``plr`` (budget 3-7: ``gu`` exclusive on 3, ``shared``
#: on 4-7) and a classic pod; V2 loses the pod entry, V1 cannot hold it.
CPU_STATE = CPUCheckpointState.from_dict(
    {
        "policyName": "static",
        "defaultCpuSet": "0-1,8-11",
        "entries": {"plr": {"gu": "3", "shared": "4-7"}, "classic": {"app": "12-15"}},
        "podEntries": {"plr": "3-7"},
    }
)
