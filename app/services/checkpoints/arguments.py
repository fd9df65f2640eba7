"""Arguments of the checkpoint use cases as users type them (CLI flags, form fields, query
parameters): the manager, the configured policy, the inspector's targets and the release a
root-dir check models. Bad values raise ``CheckpointUsageError`` naming the argument.
"""

from __future__ import annotations

from app.adapters.kubelet import (
    STATE_FILES,
)
from app.domain import releases
from app.domain.checkpoint import (
    TARGETS,
    CheckpointError,
    Reader,
    parse_reader,
)
from app.domain.kubelet_config import KubeletConfig
from app.services.checkpoints.errors import (
    CheckpointUsageError,
)

# -- arguments ---------------------------------------------------------------------------------------


def parse_manager(value: str | None) -> str | None:
    """``None``/``""``/``auto`` -> ``None`` (detect); ``cpu``/``memory`` or a state file name."""
    if value is None:
        return None
    text = value.strip().lower()
    if text in ("", "auto"):
        return None
    if text in ("cpu", "cpumanager", "cpu_manager"):
        return "cpu"
    if text in ("memory", "mem", "memorymanager", "memory_manager"):
        return "memory"
    for manager, file_name in STATE_FILES.items():
        if text == file_name:
            return manager
    raise CheckpointUsageError(
        f"unknown manager {value!r}; expected cpu, memory or auto", "manager"
    )


def parse_policy(value: str | None) -> str | None:
    """The configured policy to compare with, ``None`` when not given. Kept as typed: the
    kubelet compares policy names exactly (CPU ``none``/``static``, memory ``None``/``Static``)."""
    if value is None or not value.strip():
        return None
    return value.strip()


def parse_targets(value: str | None) -> tuple[Reader, ...]:
    """Inspector targets: ``None``/``""``/``all`` -> every target; else a comma-separated list
    of ``1.35``, ``1.36-gate-on``, ``1.37 gate off``...; a bare ``1.36`` or ``1.37`` means both
    gate settings."""
    if value is None or value.strip().lower() in ("", "all"):
        return TARGETS
    out: list[Reader] = []
    for part in value.split(","):
        text = part.strip()
        if not text:
            continue
        try:
            reader = parse_reader(text)
        except CheckpointError as exc:
            raise CheckpointUsageError(exc.message, "target") from None
        lowered = text.lower().replace("_", "-").replace(" ", "-")
        explicit_gate = lowered.endswith(("-on", "-off"))
        if reader.has_gate and not explicit_gate:
            candidates = [Reader(reader.release, False), Reader(reader.release, True)]
        else:
            candidates = [reader]
        for c in candidates:
            if c not in out:
                out.append(c)
    if not out:
        raise CheckpointUsageError(f"no target in {value!r}", "target")
    return tuple(out)


def resolve_target(
    target: str, gate: bool | None, config: KubeletConfig | None = None
) -> tuple[Reader, str]:
    """The release a ``check`` models, and where its gate setting came from (``flag``,
    ``target`` when spelt ``1.36-gate-on``, ``config``, or ``default``: the release default,
    off)."""
    try:
        reader = parse_reader(target)
    except CheckpointError as exc:
        raise CheckpointUsageError(exc.message, "target") from None
    lowered = target.strip().lower().replace("_", "-").replace(" ", "-")
    spelt = lowered.endswith(("-on", "-off"))
    if not reader.has_gate:
        if gate or (spelt and lowered.endswith("-on")):
            raise CheckpointUsageError(
                f"the PodLevelResourceManagers gate does not exist in {reader.label}; it was "
                f"added in {releases.GATE_SINCE}",
                "gate",
            )
        return reader, "n/a"
    if spelt:
        if gate is not None and gate != reader.gate:
            raise CheckpointUsageError(
                f"--target {target} and --gate {'on' if gate else 'off'} disagree", "gate"
            )
        return reader, "target"
    if gate is not None:
        return Reader(reader.release, gate), "flag"
    if config is not None:
        return Reader(reader.release, config.pod_level_resource_managers), "config"
    return Reader(reader.release, False), "default"
