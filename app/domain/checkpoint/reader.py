"""A kubelet release as a reader of state files: its release family, the
``PodLevelResourceManagers`` gate and the configured policy (spec ``checkpoints.md`` §7 and
``users.md`` §5.3).

Releases fall into families that read files the same way (pkg/kubelet/cm/cpumanager/state and
pkg/kubelet/cm/memorymanager/state of v1.17, v1.35, v1.36 and v1.37); 1.38 (upstream master)
runs 1.37's code line. The procedures themselves are ``read_cpu`` and ``read_memory``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.domain.checkpoint.errors import CheckpointInputError

#: Release families, by the newest release of each.
RELEASE_FAMILIES = ("1.17", "1.35", "1.36", "1.37", "1.38")
_FAMILY_LABEL = {
    "1.17": "≤1.17",
    "1.35": "1.18–1.35",
    "1.36": "1.36",
    "1.37": "1.37",
    "1.38": "1.38",
}
#: 1.38 is upstream master: its state_checkpoint.go files read and write as 1.37's.
_CODE_LINE = {"1.38": "1.37"}


def release_family(release: str | float) -> str:
    """Map a release (``"1.29"``, ``"<=1.17"``, ``"1.18-1.35"``) onto its family key."""
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
            f"unknown kubelet release {release!r}; expected e.g. 1.17, 1.35, 1.36, 1.37 or 1.38"
        ) from None
    if major != 1 or minor < 1 or minor > 38:
        raise CheckpointInputError(
            f"kubelet release {release!r} is not modelled; supported: 1.x up to 1.38 "
            "(1.38 = upstream master)"
        )
    if minor <= 17:
        return "1.17"
    if minor <= 35:
        return "1.35"
    return str(f"1.{minor}")


@dataclass(frozen=True, slots=True)
class Reader:
    """A kubelet at start-up: release family, ``PodLevelResourceManagers`` gate, configured
    policy (``None`` skips the policy comparison)."""

    release: str
    gate: bool = False
    policy: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "release", release_family(self.release))
        if self.release in ("1.17", "1.35") and self.gate:
            object.__setattr__(self, "gate", False)  # the gate does not exist there

    @property
    def line(self) -> str:
        """The checkpoint code line this release runs (1.38 reads files as 1.37 does)."""
        return _CODE_LINE.get(self.release, self.release)

    @property
    def label(self) -> str:
        base = _FAMILY_LABEL[self.release]
        if self.line in ("1.36", "1.37"):
            return f"{base} gate {'on' if self.gate else 'off'}"
        return base

    @property
    def key(self) -> str:
        """A stable identifier: ``1.17``, ``1.35``, ``1.36-gate-off``..."""
        if self.line in ("1.36", "1.37"):
            return f"{self.release}-gate-{'on' if self.gate else 'off'}"
        return self.release

    def with_policy(self, policy: str | None) -> Reader:
        return Reader(self.release, self.gate, policy)

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, "gate": self.gate, "label": self.label, "key": self.key}


#: The target list of the inspector (spec ``users.md`` §5.3).
TARGETS: tuple[Reader, ...] = (
    Reader("1.17"),
    Reader("1.35"),
    Reader("1.36", False),
    Reader("1.36", True),
    Reader("1.37", False),
    Reader("1.37", True),
    Reader("1.38", False),
    Reader("1.38", True),
)


def parse_reader(text: str, policy: str | None = None) -> Reader:
    """``"1.36-gate-on"``, ``"1.37 gate off"``, ``"1.35"``, ``"<=1.17"`` -> ``Reader``."""
    t = text.strip().lower().replace("_", "-").replace(" ", "-")
    gate = False
    for suffix, value in (("-gate-on", True), ("-gate-off", False), ("-on", True), ("-off", False)):
        if t.endswith(suffix):
            t, gate = t[: -len(suffix)], value
            break
    return Reader(t, gate, policy)
