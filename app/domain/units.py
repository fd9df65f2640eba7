"""Byte counts as text: exact Kubernetes binary quantities (``2Mi``) and human sizes (``1.5 GiB``).

The one place byte counts are formatted; the topology views, the web's ``bytes`` filter, the
command line reports and the adapters' error messages call these.
"""

from __future__ import annotations

# Kubernetes binary suffixes (resource.Quantity's BinarySI), smallest first.
_QUANTITY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi")
# Human units (IEC), smallest first.
_HUMAN_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


class UnitError(ValueError):
    """A formatting option names no known unit."""


def binary_quantity(n_bytes: int, *, largest: str = "Pi") -> str:
    """Bytes as the shortest exact binary quantity: 2097152 -> ``2Mi``, 1536 -> ``1536``,
    0 -> ``0``. ``largest`` caps the suffix (``largest="Ti"``: 1 PiB -> ``1024Ti``)."""
    if largest not in _QUANTITY_SUFFIXES:
        raise UnitError(f"largest: {largest!r} is not one of {', '.join(_QUANTITY_SUFFIXES)}")
    if n_bytes:
        top = _QUANTITY_SUFFIXES.index(largest)
        for power in range(top + 1, 0, -1):
            unit = 1 << (10 * power)
            if n_bytes % unit == 0:
                return f"{n_bytes // unit}{_QUANTITY_SUFFIXES[power - 1]}"
    return str(n_bytes)


def format_bytes(value: int | float) -> str:
    """Binary units the way people read memory: ``0 B``, ``512 MiB``, ``1.5 GiB``, ``64 GiB``.

    The largest unit the value reaches (up to PiB); a whole number when the value is a whole
    multiple of the unit, else one decimal. Bytes are always whole (``100 B``)."""
    size = abs(value)
    for power, unit in enumerate(_HUMAN_UNITS):
        scale = 1 << (10 * power)
        # Below 1024 of the unit once shown: 1023.96 TiB would print as "1024.0 TiB".
        shown = size if power == 0 or size % scale == 0 else round(size / scale, 1) * scale
        if shown < scale * 1024 or unit == "PiB":
            if power == 0:
                return f"{int(value)} B"
            if value % scale == 0:
                return f"{int(value) // scale} {unit}"
            return f"{value / scale:.1f} {unit}"
    raise AssertionError("unreachable")
