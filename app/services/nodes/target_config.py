"""A node's kubelet configuration under another release: what a restart, a rehearsal and an
upgrade check run the kubelet of that release with (the configuration as written when that
release takes it, else its fields carried over, ``PodLevelResourceManagers`` set as asked).

Apart from the restart use case (``app.services.nodes.restart``), which writes the database:
the fleet's workers check upgrades with it and never load the database.
"""

from __future__ import annotations

import json
from typing import Any

from app.domain import releases
from app.domain.kubelet_config import KubeletConfigError
from app.domain.node.state_files import GATE
from app.domain.restart import TargetConfig, config_for_release
from app.services.nodes.errors import NodeInputError
from app.services.nodes.inputs import parse_config


def gate_known(release: str) -> bool:
    """Whether ``release`` knows the ``PodLevelResourceManagers`` gate (the release table's
    answer)."""
    return releases.get(release).knows_pod_level_gate


def check_release(release: str) -> None:
    problem = releases.complaint(release)
    if problem is not None:
        raise NodeInputError(f"release: {problem}", "release")


def config_with_gate(base: dict[str, Any], release: str, gate: bool) -> TargetConfig:
    """``base`` (KubeletConfiguration spelling) for ``release`` with ``PodLevelResourceManagers``
    set to ``gate`` (left out where the release does not know the gate and ``gate`` is false);
    ``base`` is updated in place. A gate the release refuses is an answer
    (``TargetConfig.refusals``), not an input error."""
    gates = dict(base.get("featureGates") or {})
    if gate or gate_known(release):
        gates[GATE] = gate
    else:
        gates.pop(GATE, None)
    base.pop("featureGates", None)
    if gates:
        base["featureGates"] = gates
    return _target(base, release)


def _target(base: dict[str, Any], release: str) -> TargetConfig:
    try:
        return config_for_release(base, release)
    except KubeletConfigError as err:
        field = "podLevelResourceManagers" if err.field == f"featureGates.{GATE}" else err.field
        raise NodeInputError(f"{field}: {err.message}", field) from None


def restart_config(
    text: str, current_release: str, release: str, gate: bool | None
) -> tuple[TargetConfig, str]:
    """The node's configuration for ``release`` and the text to keep: the definition's own
    text, or (``gate`` given) the configuration with the gate set (``config_with_gate``). A
    gate of the configuration that ``release`` refuses is recorded in the answer."""
    check_release(release)
    try:
        same = parse_config(text, release)
    except NodeInputError as err:
        if not (err.field or "").startswith("featureGates."):
            raise
        same = None
    if same is not None and (gate is None or same.gate(GATE) == gate):
        return TargetConfig(same), text  # as configured: the user's text (and comments) stay
    base = parse_config(text, current_release).to_dict()
    if gate is None:
        return _target(base, release), text
    target = config_with_gate(base, release, gate)
    return target, json.dumps(base, indent=2) + "\n"
