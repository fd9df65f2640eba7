"""app/domain/units.py: exact binary quantities and human sizes, checked against tables and
against the per-module helpers they replaced (kept here as oracles: the callers' output must
not change)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.domain.units import UnitError, binary_quantity, format_bytes

KI, MI, GI, TI, PI = (1 << (10 * p) for p in range(1, 6))


# -- the replaced helpers ----------------------------------------------------------------------


def old_topology_binary_quantity(n_bytes: int) -> str:
    for suffix, unit in (("Pi", PI), ("Ti", TI), ("Gi", GI), ("Mi", MI), ("Ki", KI)):
        if n_bytes and n_bytes % unit == 0:
            return f"{n_bytes // unit}{suffix}"
    return str(n_bytes)


def old_podresources_command_format_bytes(n: int) -> str:
    for suffix, size in (("Ti", TI), ("Gi", GI), ("Mi", MI), ("Ki", KI)):
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def old_rendering_format_bytes(value: int | float) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(size) < 1024 or unit == "PiB":
            if unit == "B" or size == int(size):
                return f"{int(size)} {unit}"
            return f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def old_topology_view_format_bytes(n_bytes: int) -> str:
    for unit, size in (("PiB", PI), ("TiB", TI), ("GiB", GI), ("MiB", MI), ("KiB", KI)):
        if n_bytes >= size:
            value = n_bytes / size
            text = f"{value:.0f}" if n_bytes % size == 0 else f"{value:.1f}"
            return f"{text} {unit}"
    return f"{n_bytes} B"


# Byte counts people meet: multiples of units, off-by-ones and plain numbers (below 2**53 so
# that the float-based helpers above are exact).
sizes = st.one_of(
    st.integers(min_value=0, max_value=2**53),
    st.builds(
        lambda k, p, d: max(0, k * (1 << (10 * p)) + d),
        st.integers(min_value=0, max_value=4096),
        st.integers(min_value=0, max_value=4),
        st.sampled_from([-1, 0, 0, 1]),
    ),
)


# -- tables --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n_bytes", "largest", "text"),
    [
        pytest.param(0, "Pi", "0", id="zero"),
        pytest.param(1000, "Pi", "1000", id="plain"),
        pytest.param(2 * MI, "Pi", "2Mi", id="2Mi"),
        pytest.param(1536 * KI, "Pi", "1536Ki", id="not-a-whole-Mi"),
        pytest.param(PI, "Pi", "1Pi", id="Pi"),
        pytest.param(PI, "Ti", "1024Ti", id="capped-at-Ti"),
        pytest.param(3 * GI, "Ki", "3145728Ki", id="capped-at-Ki"),
        pytest.param(-2 * KI, "Pi", "-2Ki", id="negative"),
    ],
)
def test_binary_quantity(n_bytes: int, largest: str, text: str) -> None:
    assert binary_quantity(n_bytes, largest=largest) == text


def test_binary_quantity_rejects_unknown_units() -> None:
    with pytest.raises(UnitError, match="'Ei' is not one of Ki, Mi, Gi, Ti, Pi"):
        binary_quantity(1, largest="Ei")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(0, "0 B", id="zero"),
        pytest.param(1023, "1023 B", id="bytes"),
        pytest.param(100.7, "100 B", id="float-bytes"),
        pytest.param(KI, "1 KiB", id="KiB"),
        pytest.param(1536, "1.5 KiB", id="fraction"),
        pytest.param(MI - 1, "1.0 MiB", id="just-below-MiB"),  # never "1024.0 KiB"
        pytest.param(2048.0, "2 KiB", id="float-whole"),
        pytest.param(-1536, "-1.5 KiB", id="negative"),
        pytest.param(2048 * PI, "2048 PiB", id="beyond-PiB"),
    ],
)
def test_format_bytes(value: int | float, text: str) -> None:
    assert format_bytes(value) == text


# -- the callers keep their output ---------------------------------------------------------------


@given(sizes)
@settings(max_examples=300)
def test_same_as_the_replaced_quantity_helpers(n: int) -> None:
    assert binary_quantity(n) == old_topology_binary_quantity(n)
    assert binary_quantity(n, largest="Ti") == old_podresources_command_format_bytes(n)


@given(sizes)
@settings(max_examples=300)
def test_same_as_the_replaced_human_helpers(n: int) -> None:
    old = old_rendering_format_bytes(n)
    assume(
        not old.startswith(("1024.0 ", "-1024.0 "))
    )  # the one change: shown as 1.0 of the next unit
    assert format_bytes(n) == old == old_topology_view_format_bytes(n)


@given(st.floats(min_value=-(2.0**50), max_value=2.0**50, allow_nan=False))
@settings(max_examples=200)
def test_same_as_the_web_filter_for_floats(x: float) -> None:
    old = old_rendering_format_bytes(x)
    assume(not old.startswith(("1024.0 ", "-1024.0 ")))
    assert format_bytes(x) == old
