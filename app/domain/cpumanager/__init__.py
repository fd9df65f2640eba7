"""CPU manager: the static policy, its options, CPU assignment, topology hints and state.

Modules follow the kubelet's files under pkg/kubelet/cm/cpumanager/ (v1.37); import from the
submodules (``app.domain.cpumanager.cpu_assignment`` and so on).
"""
