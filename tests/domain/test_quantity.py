"""Kubernetes quantities (app/domain/quantity.py): parsing, canonical text, rounding, errors.

Expected values come from upstream's quantity_test.go tables (TestQuantityParse,
TestQuantityString, TestQuantityParseEmit, the invalid list).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.golang.strconv import go_quote
from app.domain.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ERR_FORMAT_WRONG,
    ERR_SUFFIX,
    MAX_INT64,
    ZERO,
    Quantity,
    QuantityError,
    canonicalize,
    is_integral_cpu,
    parse_quantity,
)
from tests.strategies import quantities, quantity_texts

F = Fraction


@pytest.mark.parametrize(
    ("text", "amount", "fmt"),
    [
        ("0", F(0), DECIMAL_SI),
        ("0n", F(0), DECIMAL_SI),
        ("0Ki", F(0), BINARY_SI),
        ("1", F(1), DECIMAL_SI),
        ("1Ki", F(1024), BINARY_SI),
        ("7Mi", F(7 * 2**20), BINARY_SI),
        ("3Ei", F(3 * 2**60), BINARY_SI),
        ("5n", F(5, 10**9), DECIMAL_SI),
        ("4u", F(4, 10**6), DECIMAL_SI),
        ("3m", F(3, 1000), DECIMAL_SI),
        ("50k", F(50_000), DECIMAL_SI),
        ("2P", F(2 * 10**15), DECIMAL_SI),
        ("1E", F(10**18), DECIMAL_SI),
        ("1E-3", F(1, 1000), DECIMAL_EXPONENT),
        ("1e3", F(1000), DECIMAL_EXPONENT),
        ("1.3E+6", F(1_300_000), DECIMAL_EXPONENT),
        ("100.035k", F(100_035), DECIMAL_SI),
        ("0.0005k", F(1, 2), DECIMAL_SI),
        ("0.5e-2", F(5, 1000), DECIMAL_EXPONENT),
        ("6.987654321G", F(6_987_654_321), DECIMAL_SI),
        ("1.01E", F(101 * 10**16), DECIMAL_SI),
        # rounded up to a whole nano
        ("3.001n", F(4, 10**9), DECIMAL_SI),
        ("1.1E-9", F(2, 10**9), DECIMAL_EXPONENT),
        ("0.0000000001", F(1, 10**9), DECIMAL_SI),
        ("0.00000012345", F(124, 10**9), DECIMAL_SI),
        ("1e-999999999", F(1, 10**9), DECIMAL_EXPONENT),
        ("-0.0000000001", F(-1, 10**9), DECIMAL_SI),
        # binary values are capped at 2^63-1; below 1 they become DecimalSI
        ("9Ei", F(MAX_INT64), BINARY_SI),
        ("9223372036854775807Ki", F(MAX_INT64), BINARY_SI),
        ("100.035Ki", F(10_243_584, 100), BINARY_SI),
        ("0.5Mi", F(2**19), BINARY_SI),
        ("0.000000000001Ki", F(2, 10**9), DECIMAL_SI),
        # documented grammar corners
        (".001", F(1, 1000), DECIMAL_SI),
        ("1.", F(1), DECIMAL_SI),
        ("1.G", F(10**9), DECIMAL_SI),
        ("+2", F(2), DECIMAL_SI),
        ("-1.5", F(-3, 2), DECIMAL_SI),
    ],
    ids=repr,
)
def test_parse_value_and_format(text: str, amount: Fraction, fmt: str) -> None:
    q = Quantity.parse(text)
    assert q.amount == amount
    assert q.format == fmt
    assert parse_quantity(text) == q


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1Ki", "1Ki"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("0.1Gi", "107374182400m"),
        ("2000m", "2"),
        ("977m", "977m"),
        ("300Mi", "300Mi"),
        ("307200Ki", "300Mi"),
        ("1001Gi", "1001Gi"),
        ("1025Ki", "1025Ki"),
        ("5Ki", "5Ki"),
        ("1023", "1023"),
        ("0.5", "500m"),
        ("1080m", "1080m"),
        ("1.08", "1080m"),
        ("1080000000n", "1080m"),
        ("0.001T", "1G"),
        ("1000u", "1m"),
        ("1234567M", "1234567M"),
        ("3k", "3k"),
        ("1e9", "1e9"),
        (".001e12", "1e9"),
        ("0.001e0", "1e-3"),
        ("1000e-12", "1e-9"),
        ("80e-3", "80e-3"),
        ("1.2e3", "1200"),
        ("0.5e-1", "50e-3"),
        ("9Ei", "9223372036854775807"),
        ("1000E", "1e21"),
        ("5000E", "5e21"),
        ("-9.01", "-9010m"),
        ("-1.5Gi", "-1536Mi"),
        ("-0", "0"),
        ("00", "0"),
    ],
    ids=repr,
)
def test_canonical_text(text: str, canonical: str) -> None:
    q = Quantity.parse(text)
    assert str(q) == canonical
    assert repr(q) == f"Quantity({canonical!r})"
    again = Quantity.parse(canonical)
    assert again == q and str(again) == canonical


@pytest.mark.parametrize(
    ("amount", "fmt", "text"),
    [
        (F(1, 10**12), DECIMAL_SI, "1e-12"),
        (F(1, 10**10), DECIMAL_SI, "100e-12"),
        (F(2**70), BINARY_SI, "1180591620717411303424"),
        (F(10**70), BINARY_SI, "10e69"),
        (F(2000), BINARY_SI, "2000"),
        (F(1024 * 3), BINARY_SI, "3Ki"),
        (F(1, 2), BINARY_SI, "500m"),
        (F(10**24), DECIMAL_SI, "1e24"),
        (F(300 * 10**6), DECIMAL_EXPONENT, "300e6"),
    ],
    ids=str,
)
def test_canonicalize_values_parse_cannot_produce(amount: Fraction, fmt: str, text: str) -> None:
    assert canonicalize(amount, fmt) == text
    assert str(Quantity(amount, fmt)) == text


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("", ERR_FORMAT_WRONG),
        (" 1", ERR_FORMAT_WRONG),
        ("1 ", ERR_FORMAT_WRONG),
        ("1.2.3", ERR_FORMAT_WRONG),
        ("Mi", ERR_FORMAT_WRONG),
        ("1MiB", ERR_FORMAT_WRONG),
        ("--1", ERR_FORMAT_WRONG),
        (".", ERR_FORMAT_WRONG),
        ("-.", ERR_FORMAT_WRONG),
        ("abc", ERR_FORMAT_WRONG),
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("١", ERR_FORMAT_WRONG),
        ("1e", ERR_SUFFIX),
        ("1K", ERR_SUFFIX),
        ("0.1mi", ERR_SUFFIX),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("-3.01e-", ERR_SUFFIX),
        ("1e4294967297", ERR_SUFFIX),
        ("1e2147483648", ERR_SUFFIX),
        ("1e999999999", "quantities of 1e1000 or more are not supported"),
        ("1" + "0" * 1000, "quantities of 1e1000 or more are not supported"),
    ],
    ids=lambda v: repr(v)[:30],
)
def test_errors_name_the_text(text: str, detail: str) -> None:
    with pytest.raises(QuantityError) as exc:
        Quantity.parse(text)
    assert exc.value.text == text
    assert exc.value.detail == detail
    assert str(exc.value) == f"invalid quantity {go_quote(text)}: {detail}"


def test_format_wrong_message_is_upstreams() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize("value", [None, 1.5, True, b"1", ["1"]], ids=repr)
def test_parse_rejects_non_text(value: object) -> None:
    with pytest.raises(QuantityError, match="a quantity must be text or an integer"):
        Quantity.parse(value)  # type: ignore[arg-type]


def test_parse_int() -> None:
    assert Quantity.parse(3) == Quantity.parse("3") and str(Quantity.parse(3)) == "3"


@pytest.mark.parametrize(
    ("amount", "fmt", "detail"),
    [
        (F(1, 3), DECIMAL_SI, "finite decimal"),
        (1.5, DECIMAL_SI, "an int or a Fraction"),
        (F(1), "Hex", "unknown format"),
    ],
    ids=str,
)
def test_constructor_validation(amount: object, fmt: str, detail: str) -> None:
    with pytest.raises(QuantityError, match=detail):
        Quantity(amount, fmt)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("2", 2, 2000),
        ("2000m", 2, 2000),
        ("977m", 1, 977),
        ("1500m", 2, 1500),
        ("0.1", 1, 100),
        ("1n", 1, 1),
        ("1m", 1, 1),
        ("1.0001", 2, 1001),
        ("1Gi", 2**30, 2**30 * 1000),
        ("0", 0, 0),
        ("-1.5", -2, -1500),
        ("-1n", -1, -1),
    ],
    ids=repr,
)
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    q = Quantity.parse(text)
    assert q.value() == value
    assert q.milli_value() == milli


@pytest.mark.parametrize(
    ("text", "integral"),
    [("2", True), ("2000m", True), ("977m", False), ("1500m", False), ("0", True), ("1n", False)],
    ids=repr,
)
def test_is_integral_cpu(text: str, integral: bool) -> None:
    assert is_integral_cpu(Quantity.parse(text)) is integral


def test_equality_hash_and_order_use_the_value_only() -> None:
    two, two_milli = Quantity.parse("2"), Quantity.parse("2000m")
    assert two == two_milli and hash(two) == hash(two_milli)
    assert Quantity.parse("1Gi") > Quantity.parse("1G") > Quantity.parse("953Mi")
    assert sorted(map(Quantity.parse, ["1", "500m", "1Ki", "2"])) == list(
        map(Quantity.parse, ["500m", "1", "2", "1Ki"])
    )
    assert Quantity.parse("10000T") > Quantity.parse("100Gi")
    assert Quantity.parse("1") != "1"


def test_arithmetic_keeps_upstream_formats() -> None:
    a = Quantity.parse("1Gi")
    assert str(a + Quantity.parse("512Mi")) == "1536Mi"
    assert str(ZERO + a) == "1Gi"  # a zero takes the other's format, as in Add
    assert str(a - a) == "0"
    assert str(ZERO - Quantity.parse("100m")) == "-100m"
    assert str(sum([Quantity.parse("1"), Quantity.parse("500m")])) == "1500m"
    assert str(-Quantity.parse("1Gi")) == "-1Gi"
    assert str(Quantity.parse("1Gi") * 3) == "3Gi" == str(3 * Quantity.parse("1Gi"))
    assert Quantity.from_milli(1500) == Quantity.parse("1.5")
    assert str(Quantity.from_int(2048, BINARY_SI)) == "2Ki"
    assert ZERO.is_zero() and ZERO.sign() == 0 and Quantity.parse("-1").sign() == -1
    with pytest.raises(TypeError):
        _ = a + 1
    with pytest.raises(TypeError):
        _ = a * 1.5


def test_quantities_are_immutable() -> None:
    q = Quantity.parse("1")
    with pytest.raises(AttributeError):
        q.amount = F(2)  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(quantities(signed=True))
def test_canonical_text_round_trips(q: Quantity) -> None:
    text = str(q)
    again = Quantity.parse(text)
    assert again == q
    # A value held in binary format without an exact binary suffix prints bare ("25000");
    # parsed back it is DecimalSI and prints "25k", as in Go. After one parse the text is stable.
    assert str(Quantity.parse(str(again))) == str(again)


def test_bare_binary_value_reads_back_as_decimal() -> None:
    q = Quantity.from_int(25000, "BinarySI")
    assert str(q) == "25000"
    assert str(Quantity.parse(str(q))) == "25k"


_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def exact_value(text: str) -> Fraction:
    """The exact value of quantity text, computed independently of the parser."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body[-2:] in _BINARY:
        return sign * F(body[:-2]) * 2 ** _BINARY[body[-2:]]
    mantissa, e, exponent = body.replace("E", "e", 1).partition("e")
    if e and exponent:
        return sign * F(mantissa) * F(10) ** int(exponent)
    if body[-1] in _DECIMAL:
        return sign * F(body[:-1]) * F(10) ** _DECIMAL[body[-1]]
    return sign * F(body)


@settings(max_examples=200, deadline=None)
@given(quantity_texts(signed=True))
def test_parsed_values_are_the_exact_value_rounded_up_to_a_nano(text: str) -> None:
    q = Quantity.parse(text)
    exact = exact_value(text)
    assert (q.amount * 10**9).denominator == 1
    assert abs(exact) <= abs(q.amount) < abs(exact) + F(1, 10**9)
    assert q.sign() == (exact > 0) - (exact < 0)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**12), 10**12), st.integers(-12, 3))
def test_scaled_values_are_ceilings(n: int, scale: int) -> None:
    q = Quantity(F(n, 10**9))
    v = F(n, 10**9) / F(10) ** scale
    expected = math.ceil(v) if v >= 0 else -math.ceil(-v)
    assert q.scaled_value(scale) == expected
    assert q.milli_value() == q.scaled_value(-3)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0." + "0" * 5000 + "1", "1n"),
        ("0.1" + "0" * 5000, "100m"),
        ("1" + "0" * 5000 + "Ki", "9223372036854775807"),
        ("1" + "0" * 15 + "Ki", "976562500000Mi"),
        ("0." + "0" * 3000 + "1Gi", "1n"),
    ],
    ids=["tiny", "trailing-zeros", "huge-binary-capped", "big-binary", "tiny-binary"],
)
def test_long_texts_stay_cheap_and_exact(text: str, canonical: str) -> None:
    assert str(Quantity.parse(text)) == canonical


def test_too_many_significant_digits() -> None:
    with pytest.raises(QuantityError, match="more than 1000 significant digits"):
        Quantity.parse("0." + "1" * 1001)
