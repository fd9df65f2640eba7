"""Synthetic topology spec strings (``sockets=2,numa_per_socket=2,cores_per_numa=16,...``),
as the CLI's ``--topology-spec`` and the web forms take them: parsed, checked key by key (a
``TopologySpecError`` names the key), and built by ``app.domain.topology.synthetic``.
"""

from __future__ import annotations

import re

from app.domain.quantity import Quantity, QuantityError
from app.domain.topology.model import HUGEPAGE_1G, HUGEPAGE_2M, CPUTopology
from app.domain.topology.synthetic import (
    TopologySpecError,
    check_range,
    synthetic_topology,
)

__all__ = ["parse_topology_spec"]


_SPEC_INT_KEYS = (
    "sockets",
    "numa_per_socket",
    "cores_per_numa",
    "threads_per_core",
    "cores_per_uncore",
    "hugepages_1Gi_per_numa",
    "hugepages_2Mi_per_numa",
    "distance_same_socket",
    "distance_remote",
)
_SPEC_KEYS = (*_SPEC_INT_KEYS, "memory_per_numa", "name")
_SPEC_DEFAULTS = {"sockets": 1, "numa_per_socket": 1, "threads_per_core": 2}
_REQUIRED_KEYS = ("cores_per_numa",)
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")
_INT_RE = re.compile(r"[0-9]+\Z")
_MAX_MEMORY = 1024**5  # 1 PiB per NUMA node is plenty


def _parse_memory(key: str, text: str) -> int:
    try:
        value = Quantity.parse(text).value()
    except QuantityError:
        raise TopologySpecError(
            f"{key}={text!r} is not a memory quantity (e.g. 64Gi, 512Mi, 100G)",
            key=key,
            value=text,
        ) from None
    if not 0 < value <= _MAX_MEMORY:
        raise TopologySpecError(
            f"{key}={text!r} is out of range (1 byte .. 1Pi)", key=key, value=text
        )
    return value


def _items(spec: str) -> dict[str, str]:
    """The ``key=value`` items of a spec, each key known and given once."""
    values: dict[str, str] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            raise TopologySpecError(f"empty item in topology spec {spec!r}")
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise TopologySpecError(f"item {item!r} is not key=value", key=key)
        if key not in _SPEC_KEYS:
            raise TopologySpecError(
                f"unknown topology spec key {key!r}; valid keys: {', '.join(_SPEC_KEYS)}",
                key=key,
                value=value,
            )
        if key in values:
            raise TopologySpecError(f"key {key!r} is given twice", key=key, value=value)
        values[key] = value
    return values


def _parse_int(key: str, text: str) -> int:
    """A non-negative decimal integer of at most 12 significant digits (beyond every range
    ``synthetic_topology`` checks, and int()'s limit on digits)."""
    if not _INT_RE.match(text):
        raise TopologySpecError(
            f"{key}={text!r} is not a non-negative integer", key=key, value=text
        )
    if len(text.lstrip("0")) > 12:
        raise TopologySpecError(
            f"{key}={text[:20]}… ({len(text)} digits) is out of range", key=key, value=text[:20]
        )
    return int(text.lstrip("0") or "0")


def _name(values: dict[str, str], ints: dict[str, int]) -> str:
    """The ``name`` given (1-63 letters, digits, '.', '_' or '-'), else one that says the
    shape: ``custom-<sockets>s-<numa>numa-<threads>t``."""
    name = values.get("name", "")
    if name and not _NAME_RE.match(name):
        raise TopologySpecError(
            f"name={name!r} must be 1-63 letters, digits, '.', '_' or '-'", key="name", value=name
        )
    if name:
        return name
    num_numa = ints["sockets"] * ints["numa_per_socket"]
    threads = num_numa * ints["cores_per_numa"] * ints["threads_per_core"]
    return f"custom-{ints['sockets']}s-{num_numa}numa-{threads}t"


def parse_topology_spec(spec: str) -> CPUTopology:
    """Build a topology from ``"sockets=2,numa_per_socket=2,cores_per_numa=16,..."``.

    Keys: ``sockets`` (default 1), ``numa_per_socket`` (1), ``cores_per_numa`` (required),
    ``threads_per_core`` (2), ``cores_per_uncore`` (default: no uncore caches, i.e. the
    socket), ``memory_per_numa`` (a quantity, default 32Gi), ``hugepages_1Gi_per_numa``,
    ``hugepages_2Mi_per_numa`` (page counts, default 0), ``distance_same_socket`` (11),
    ``distance_remote`` (21) and ``name``. Raises ``TopologySpecError``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise TopologySpecError("the topology spec is empty (e.g. sockets=2,cores_per_numa=8)")
    values = _items(spec)
    ints: dict[str, int] = dict(_SPEC_DEFAULTS)
    ints.update({key: _parse_int(key, values[key]) for key in _SPEC_INT_KEYS if key in values})
    for key in _REQUIRED_KEYS:
        if key not in values:
            raise TopologySpecError(f"the topology spec needs {key}", key=key)
    memory = _parse_memory("memory_per_numa", values.get("memory_per_numa", "32Gi"))
    name = _name(values, ints)
    for key in ("hugepages_1Gi_per_numa", "hugepages_2Mi_per_numa"):
        check_range(key, ints.get(key, 0), 0, 1 << 30)
    return synthetic_topology(
        sockets=ints["sockets"],
        numa_per_socket=ints["numa_per_socket"],
        cores_per_numa=ints["cores_per_numa"],
        threads_per_core=ints["threads_per_core"],
        cores_per_uncore=ints.get("cores_per_uncore"),
        memory_per_numa=memory,
        hugepages_per_numa={
            HUGEPAGE_1G: ints.get("hugepages_1Gi_per_numa", 0),
            HUGEPAGE_2M: ints.get("hugepages_2Mi_per_numa", 0),
        },
        distance_same_socket=ints.get("distance_same_socket", 11),
        distance_remote=ints.get("distance_remote", 21),
        name=name,
    )
