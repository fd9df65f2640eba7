"""A kubelet release as a reader of state files: its release family, the
``PodLevelResourceManagers`` gate and the configured policy (spec ``checkpoints.md`` §7 and
``users.md`` §5.3).

Releases fall into families that read files the same way (pkg/kubelet/cm/cpumanager/state and
pkg/kubelet/cm/memorymanager/state of each family's newest release:
``releases.CHECKPOINT_FAMILIES``); upstream master runs the code line the release table names
(``checkpoint_line``). The procedures themselves are ``read_cpu`` and ``read_memory``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from app.domain import releases
from app.domain.checkpoint.errors import CheckpointInputError

#: Release families, by the newest release of each (the release table's checkpoint families).
RELEASE_FAMILIES = tuple(releases.CHECKPOINT_FAMILIES)
_FAMILY_LABEL = releases.CHECKPOINT_FAMILIES


@functools.lru_cache(maxsize=64)  # every Reader asks it; a refusal is raised again each time
def release_family(release: str | float) -> str:
    """Map a release (a minor release, ``<=`` a release, or a range of releases joined by ``-``,
    optionally with a ``v``) onto its family key (``releases.checkpoint_family``)."""
    text = str(release).strip().lower().lstrip("v")
    for prefix in ("≤", "<=", "<"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if "-" in text or "–" in text:
        text = text.replace("–", "-").split("-")[-1]
    parts = text.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise CheckpointInputError(
            f"unknown kubelet release {release!r}; expected e.g. "
            f"{', '.join(RELEASE_FAMILIES[:-1])} or {RELEASE_FAMILIES[-1]}"
        ) from None
    family = releases.checkpoint_family(minor) if major == 1 else None
    if family is None:
        raise CheckpointInputError(
            f"kubelet release {release!r} is not modelled; supported: 1.x up to "
            f"{releases.NEWEST} ({releases.NEWEST} = upstream master)"
        )
    return family


@dataclass(frozen=True, slots=True)
class Reader:
    """A kubelet at start-up: release family, ``PodLevelResourceManagers`` gate, configured
    policy (``None`` skips the policy comparison)."""

    release: str
    gate: bool = False
    policy: str | None = None
    # What the release table says of the family, looked up once (every read asks them).
    _has_gate: bool = field(default=False, init=False, repr=False, compare=False)
    _line: str = field(default="", init=False, repr=False, compare=False)
    _hash: int = field(default=0, init=False, repr=False, compare=False)  # a key of kept answers

    def __post_init__(self) -> None:
        family = release_family(self.release)
        row = releases.get(family) if family in releases.RELEASES else None
        has_gate = row is not None and row.knows_pod_level_gate
        object.__setattr__(self, "release", family)
        object.__setattr__(self, "_has_gate", has_gate)
        object.__setattr__(self, "_line", row.checkpoint_line if row is not None else family)
        if not has_gate and self.gate:
            object.__setattr__(self, "gate", False)  # the gate does not exist there
        object.__setattr__(self, "_hash", hash((self.release, self.gate, self.policy)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        # made again where it is unpickled: a string's hash differs between processes
        return (Reader, (self.release, self.gate, self.policy))

    @property
    def has_gate(self) -> bool:
        """Whether this release knows the PodLevelResourceManagers gate (``releases.GATE_SINCE``
        on)."""
        return self._has_gate

    @property
    def line(self) -> str:
        """The checkpoint code line this release runs (the release table's ``checkpoint_line``:
        upstream master reads files as the newest release does)."""
        return self._line

    @property
    def label(self) -> str:
        base = _FAMILY_LABEL[self.release]
        if self.has_gate:
            return f"{base} gate {'on' if self.gate else 'off'}"
        return base

    @property
    def key(self) -> str:
        """A stable identifier: the family, and ``-gate-on``/``-gate-off`` where the gate
        exists."""
        if self.has_gate:
            return f"{self.release}-gate-{'on' if self.gate else 'off'}"
        return self.release

    def with_policy(self, policy: str | None) -> Reader:
        return self if policy == self.policy else _with_policy(self, policy)

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, "gate": self.gate, "label": self.label, "key": self.key}


@functools.lru_cache(maxsize=256)  # a few families, gates and policies
def _with_policy(reader: Reader, policy: str | None) -> Reader:
    return Reader(reader.release, reader.gate, policy)


#: The target list of the inspector (spec ``users.md`` §5.3).
TARGETS: tuple[Reader, ...] = tuple(
    Reader(family, gate)
    for family in RELEASE_FAMILIES
    for gate in ((False, True) if Reader(family).has_gate else (False,))
)


def parse_reader(text: str, policy: str | None = None) -> Reader:
    """A reader from its text: a release as ``release_family`` takes it, then optionally
    ``-gate-on``/``-gate-off`` (or `` gate on``, ``-on``...)."""
    t = text.strip().lower().replace("_", "-").replace(" ", "-")
    gate = False
    for suffix, value in (("-gate-on", True), ("-gate-off", False), ("-on", True), ("-off", False)):
        if t.endswith(suffix):
            t, gate = t[: -len(suffix)], value
            break
    return Reader(t, gate, policy)
