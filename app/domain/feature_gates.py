"""The kubelet's start-up check of ``featureGates`` (follows k8s.io/component-base
featuregate/feature_gate.go ``SetFromMap``/``unsafeSetFromMap`` and cmd/kubelet/app/server.go,
which wraps the error as ``failed to set feature gates from initial flags-based config: ...``).

Upstream walks the map (Go map order; we take the configuration's order): an unknown name
stops the walk at once with ``unrecognized feature gate: <name>``; a gate locked to its
default and set otherwise adds ``cannot set feature gate <name> to <v>, feature is locked to
<d>`` and the walk goes on. Only when the walk found nothing are dependencies checked
(``<name> is enabled, but depends on features that are disabled: [<deps>]``). Several errors
are joined as apimachinery's aggregate prints them: ``[a, b]``. The tables per release are in
``feature_gate_tables.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.domain.feature_gate_tables import DEPENDENCIES, KNOWN, LOCKED

KUBELET_PREFIX = "failed to set feature gates from initial flags-based config: "


@dataclass(frozen=True, slots=True)
class FeatureGateProblem:
    """Why the kubelet of ``release`` refuses the gates; ``gate`` is the first one at fault."""

    gate: str
    message: str  # the kubelet's full start-up error text


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def is_known(name: str, release: str) -> bool:
    return name in KNOWN.get(release, frozenset())


def locked_value(name: str, release: str) -> bool | None:
    """The value a gate is locked to in ``release``, or None when it can be set."""
    entry = LOCKED.get(name)
    if entry is None or _release_key(release) < _release_key(entry[0]):
        return None
    return entry[1]


def _aggregate(errors: list[str]) -> str:
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def check_feature_gates(
    gates: Mapping[str, bool], release: str, defaults: Mapping[str, bool]
) -> FeatureGateProblem | None:
    """The kubelet's verdict on ``gates`` at start-up; None when it accepts them.

    ``defaults`` are the release's defaults for the gates a dependency check may consult.
    Releases without a table (none today) accept any name.
    """
    if release not in KNOWN:
        return None
    for name in gates:
        if not is_known(name, release):
            return FeatureGateProblem(name, KUBELET_PREFIX + f"unrecognized feature gate: {name}")
    errors = [
        (
            name,
            f"cannot set feature gate {name} to {_go_bool(value)}, "
            f"feature is locked to {_go_bool(locked)}",
        )
        for name, value in gates.items()
        if (locked := locked_value(name, release)) is not None and locked != value
    ]
    if not errors:
        errors = _dependency_errors(gates, release, defaults)
    if errors:
        return FeatureGateProblem(errors[0][0], KUBELET_PREFIX + _aggregate([e for _, e in errors]))
    return None


def _dependency_errors(
    gates: Mapping[str, bool], release: str, defaults: Mapping[str, bool]
) -> list[tuple[str, str]]:
    """Enabled gates whose dependencies are disabled, as (gate, the kubelet's text)."""

    def enabled(name: str) -> bool:
        return bool(gates.get(name, defaults.get(name, False)))

    errors = []
    for name in sorted(DEPENDENCIES):
        missing = [dep for dep in DEPENDENCIES[name] if not enabled(dep)]
        if is_known(name, release) and enabled(name) and missing:
            errors.append(
                (
                    name,
                    f"{name} is enabled, but depends on features that are disabled: "
                    f"[{' '.join(missing)}]",
                )
            )
    return errors
