"""Kubernetes resource quantities (follows k8s.io/apimachinery/pkg/api/resource/quantity.go,
amount.go and suffix.go, v1.37).

A ``Quantity`` is an exact number (a ``fractions.Fraction``) plus the *format* family it was
written in, which only matters for printing:

* ``DecimalSI``: no suffix or one of ``n u m k M G T P E`` (``"500m"``, ``"2"``, ``"1G"``);
* ``BinarySI``: ``Ki Mi Gi Ti Pi Ei`` (``"1Gi"``);
* ``DecimalExponent``: ``e``/``E`` and a signed integer (``"1e3"``).

Parsing follows ``ParseQuantity``: the magnitude of a non-zero value is rounded *up* to a
multiple of 10^-9 (``"0.1n"`` is ``1n``); a binary value is capped at 2^63-1 and a binary
value below 1 switches to ``DecimalSI``. ``str(q)`` is upstream's ``String()``
(``CanonicalizeBytes``): the largest suffix of the quantity's family that keeps the mantissa
an integer, the exponent a multiple of three for the decimal families (``"1.5"`` ->
``"1500m"``, ``"1.5Gi"`` -> ``"1536Mi"``, ``"0.1Gi"`` -> ``"107374182400m"``). Equality, hashing
and ordering use the value only, like ``Quantity.Cmp``: ``Quantity.parse("2") ==
Quantity.parse("2000m")``.

Deliberate differences from upstream, all for inputs no kubelet sees in practice:

* The grammar is the documented one (``<sign><digits>[.<digits>]<suffix>``, ``"1."`` and
  ``".5"`` allowed). Upstream's hand-written scanner is laxer and reads ``"Mi"``, ``"."`` and
  ``"-."`` as zero; those are errors here.
* Values of 10^1000 or more, and texts with more than 1000 significant digits, are rejected
  (upstream would build the number and, for ``"1e999999999"``, never finish). Tiny values
  still round up to ``1n`` cheaply.
* A value with no suffix in its family (above ``E``/``Ei``, below ``n``) prints in
  exponent notation (``"1e21"``), as newer upstream does, instead of losing its magnitude.
* ``value()``/``milli_value()`` return Python ints (no int64 saturation); negative values
  round away from zero like upstream's int64 path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction

from app.domain.golang.strconv import go_quote

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT)

# Upstream's ErrFormatWrong / ErrSuffix texts.
SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
ERR_SUFFIX = "unable to parse quantity's suffix"

MAX_INT64 = (1 << 63) - 1
_MAX_INT32 = (1 << 31) - 1
# Reject values of 10**_MAX_DIGITS or more, and texts with more significant digits than that:
# far beyond any resource, small enough to stay cheap (and under int()'s digit limit).
_MAX_DIGITS = 1000
_NANO = 10**9

_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {e: s for s, e in _BINARY_SUFFIXES.items()}
_BINARY_BY_EXPONENT[0] = ""

# <sign><digits>[.<digits>] | <sign>.<digits>, then anything upstream's scanner would take as
# a suffix (letters from its alphabet, an optional sign, digits); the suffix is checked apart.
_SHAPE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)", re.ASCII)
_EXPONENT = re.compile(r"[+-]?[0-9]+", re.ASCII)
# The common forms ("500m", "2", "1Gi"): unsigned digits and a decimal or binary suffix. At
# most 18 digits, so the value is far from the digit limits.
_PLAIN = re.compile(r"([0-9]{1,18})([numkMGTPE]?|[KMGTPE]i)", re.ASCII)


class QuantityError(ValueError):
    """A quantity could not be parsed or built; the message names the offending text."""

    def __init__(self, text: object, detail: str) -> None:
        shown = go_quote(text) if isinstance(text, str) else repr(text)
        super().__init__(f"invalid quantity {shown}: {detail}")
        self.text = text
        self.detail = detail


def _is_finite_decimal(denominator: int) -> bool:
    d = denominator >> ((denominator & -denominator).bit_length() - 1)
    while d % 5 == 0:
        d //= 5
    return d == 1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix, like ``quantitySuffixer.interpret``."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if -_MAX_INT32 <= exponent <= _MAX_INT32:
            return 10, exponent, DECIMAL_EXPONENT
    raise QuantityError(text, ERR_SUFFIX)


def _split(text: str) -> tuple[str, str, str, str]:
    """``(sign, whole digits, fraction digits, suffix)`` of quantity text, or
    ``ErrFormatWrong`` when it is not ``<sign><digits>[.<digits>]<suffix>`` with a digit."""
    m = _SHAPE.fullmatch(text) if text else None
    if m is None:
        raise QuantityError(text, ERR_FORMAT_WRONG)
    sign, whole, frac, suffix = m.groups("")
    if whole == "" and frac == "":
        raise QuantityError(text, ERR_FORMAT_WRONG)
    return sign, whole, frac, suffix


def _decimal_amount(text: str, mantissa: int, digits: int, scale: int) -> Fraction:
    """``mantissa`` × 10^``scale`` (``mantissa`` has ``digits`` digits), its magnitude rounded
    up to a multiple of 10^-9 as ``ParseQuantity`` does."""
    if scale + digits > _MAX_DIGITS:
        raise QuantityError(text, f"quantities of 1e{_MAX_DIGITS} or more are not supported")
    if scale >= 0:
        return Fraction(mantissa * 10**scale)
    if scale >= -9:
        return Fraction(mantissa, 10**-scale)
    shift = -9 - scale
    nanos = 1 if shift > digits else _ceil_div(mantissa, 10**shift)
    return Fraction(nanos, _NANO)


def _plain_parts(text: str) -> tuple[Fraction, str] | None:
    """``(amount, format)`` of text in one of the common forms, as ``_parse_parts`` gives
    them; ``None`` for any other text."""
    m = _PLAIN.fullmatch(text)
    if m is None:
        return None
    whole, suffix = m.groups()
    n = int(whole)
    exponent = _DECIMAL_SUFFIXES.get(suffix)
    if exponent is None:
        return Fraction(min(n << _BINARY_SUFFIXES[suffix], MAX_INT64)), BINARY_SI
    if exponent >= 0:
        return Fraction(n * 10**exponent), DECIMAL_SI
    return Fraction(n, 10**-exponent), DECIMAL_SI


def _parse_parts(text: str) -> tuple[Fraction, str]:
    """``(amount, format)`` of quantity text (``ParseQuantity``)."""
    sign, whole, frac, suffix = _split(text)
    base, exponent, fmt = _interpret_suffix(text, suffix)
    number = whole + frac
    significant = number.strip("0")
    if not significant:
        return Fraction(0), fmt
    digits = len(significant)
    if digits > _MAX_DIGITS:
        raise QuantityError(
            text,
            f"quantities with more than {_MAX_DIGITS} significant digits are not supported",
        )
    # number == mantissa * 10**trailing (leading zeros dropped)
    mantissa = int(significant)
    trailing = len(number) - len(number.rstrip("0"))
    if base == 10:
        amount = _decimal_amount(text, mantissa, digits, exponent - len(frac) + trailing)
    else:
        amount = _binary_amount(mantissa, digits, trailing - len(frac), exponent)
        if amount < 1:
            fmt = DECIMAL_SI
    return -amount if sign == "-" else amount, fmt


def _binary_amount(mantissa: int, digits: int, shift: int, exponent: int) -> Fraction:
    """``mantissa`` × 10^``shift`` × 2^``exponent``, capped at 2^63-1 and rounded up to a
    multiple of 10^-9."""
    if digits + shift > 40:  # far above 2^63 whatever the binary suffix
        return Fraction(MAX_INT64)
    if shift >= 0:
        amount = Fraction((mantissa << exponent) * 10**shift)
    else:
        numerator, denominator = mantissa << exponent, 10**-shift
        if numerator % denominator == 0:
            amount = Fraction(numerator // denominator)
        else:
            amount = Fraction(_ceil_div(numerator * _NANO, denominator), _NANO)
    return Fraction(MAX_INT64) if amount > MAX_INT64 else amount


@dataclass(frozen=True, slots=True, order=True, repr=False)
class Quantity:
    """An exact, immutable resource quantity.

    ``amount`` is the value (a ``Fraction`` with a power-of-ten-friendly denominator);
    ``format`` is the family used by ``str()``. Build one with ``Quantity.parse``,
    ``Quantity.from_int`` or ``Quantity.from_milli``; ``Quantity(Fraction(3, 2))`` also works.
    """

    amount: Fraction
    format: str = field(default=DECIMAL_SI, compare=False)

    def __post_init__(self) -> None:
        amount = self.amount
        if amount.__class__ is not Fraction or amount.denominator != 1:  # else a whole number
            if isinstance(amount, bool) or not isinstance(amount, int | Fraction):
                raise QuantityError(amount, "the amount must be an int or a Fraction")
            if not isinstance(amount, Fraction):
                object.__setattr__(self, "amount", Fraction(amount))
            elif not _is_finite_decimal(amount.denominator):
                raise QuantityError(str(amount), "the amount must be a finite decimal fraction")
        if self.format not in FORMATS:
            raise QuantityError(self.format, f"unknown format (expected one of {FORMATS})")

    # -- construction -------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | int) -> Quantity:
        """Parse Kubernetes quantity text (``"500m"``, ``"2"``, ``"1.5"``, ``"100Mi"``, ``"1e3"``).

        An ``int`` is taken as that many units (``DecimalSI``). Leading or trailing spaces are
        errors, as in ``ParseQuantity``.
        """
        if text.__class__ is str and cls is Quantity and len(text) <= _PARSED_TEXT_MAX:
            # Manifests repeat a few texts ("2", "4Gi"); quantities are immutable values.
            parsed = _PARSED.get(text)
            if parsed is None:
                if len(_PARSED) >= _PARSED_MAX:
                    _PARSED.clear()
                parsed = _PARSED[text] = cls(*(_plain_parts(text) or _parse_parts(text)))
            return parsed
        if isinstance(text, bool):
            raise QuantityError(text, "a quantity must be text or an integer")
        if isinstance(text, int):
            return cls(Fraction(text), DECIMAL_SI)
        if not isinstance(text, str):
            raise QuantityError(text, "a quantity must be text or an integer")
        return cls(*(_plain_parts(text) or _parse_parts(text)))

    @classmethod
    def from_int(cls, value: int, fmt: str = DECIMAL_SI) -> Quantity:
        """``value`` units (``resource.NewQuantity``)."""
        return cls(Fraction(value), fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: str = DECIMAL_SI) -> Quantity:
        """``milli``/1000 units (``resource.NewMilliQuantity``)."""
        return cls(Fraction(milli, 1000), fmt)

    # -- values -------------------------------------------------------------------
    def scaled_value(self, scale: int) -> int:
        """``ScaledValue``: the value in units of 10^scale, rounded away from zero."""
        # Integer arithmetic on the (reduced) fraction: ceil(|n| / d) of n/d × 10^-scale.
        amount = self.amount
        num, den = amount.numerator, amount.denominator
        if scale > 0:
            den *= 10**scale
        elif scale < 0:
            num *= 10**-scale
        if den == 1:
            return num
        return _ceil_div(num, den) if num >= 0 else -_ceil_div(-num, den)

    def value(self) -> int:
        """``Value()``: the value rounded up to an integer (away from zero)."""
        amount = self.amount
        den = amount.denominator
        if den == 1:
            return amount.numerator
        num = amount.numerator
        return _ceil_div(num, den) if num >= 0 else -_ceil_div(-num, den)

    def milli_value(self) -> int:
        """``MilliValue()``: ceil(value × 1000) (away from zero for negative values)."""
        amount = self.amount
        num, den = amount.numerator * 1000, amount.denominator
        if den == 1:
            return num
        return _ceil_div(num, den) if num >= 0 else -_ceil_div(-num, den)

    def is_zero(self) -> bool:
        return not self.amount.numerator

    def __eq__(self, other: object) -> bool:
        # Value equality like the generated one (the format does not count), without going
        # through Fraction.__eq__: both fractions are reduced, so compare their parts.
        if other.__class__ is self.__class__:
            a, b = self.amount, other.amount
            return a is b or (a.numerator == b.numerator and a.denominator == b.denominator)
        return NotImplemented

    def sign(self) -> int:
        n = self.amount.numerator  # the denominator is positive
        return (n > 0) - (n < 0)

    # -- arithmetic (the format follows upstream's Add/Sub: a zero takes the other's) -----
    def __add__(self, other: object) -> Quantity:
        if isinstance(other, Quantity):
            fmt = other.format if self.amount == 0 else self.format
            return Quantity(self.amount + other.amount, fmt)
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self  # lets sum() start from 0
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> Quantity:
        if isinstance(other, Quantity):
            fmt = other.format if self.amount == 0 else self.format
            return Quantity(self.amount - other.amount, fmt)
        return NotImplemented

    def __neg__(self) -> Quantity:
        return Quantity(-self.amount, self.format)

    def __mul__(self, factor: object) -> Quantity:
        if isinstance(factor, int) and not isinstance(factor, bool):
            return Quantity(self.amount * factor, self.format)
        return NotImplemented

    __rmul__ = __mul__

    # -- text ---------------------------------------------------------------------
    def __str__(self) -> str:
        return canonicalize(self.amount, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"


def _decimal_parts(amount: Fraction) -> tuple[str, int]:
    """|amount| as (digits without trailing zeros, base-10 exponent)."""
    den = amount.denominator
    twos = (den & -den).bit_length() - 1
    fives, rest = 0, den >> twos
    while rest % 5 == 0 and rest > 1:
        rest //= 5
        fives += 1
    k = max(twos, fives)
    digits = str(abs(amount.numerator) * (10**k // den))
    stripped = digits.rstrip("0")
    return stripped, len(digits) - len(stripped) - k


def _format_decimal(amount: Fraction, fmt: str) -> str:
    digits, exponent = _decimal_parts(amount)
    down = exponent % 3  # lower the exponent to a multiple of three
    digits += "0" * down
    exponent -= down
    sign = "-" if amount.numerator < 0 else ""
    if fmt == DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
        return f"{sign}{digits}{_DECIMAL_BY_EXPONENT[exponent]}"
    return f"{sign}{digits}" if exponent == 0 else f"{sign}{digits}e{exponent}"


def canonicalize(amount: Fraction, fmt: str) -> str:
    """Upstream's canonical text for ``amount`` printed in format family ``fmt``."""
    # Integer tests on the reduced fraction's parts (its denominator is positive).
    numerator = amount.numerator
    if numerator == 0:
        return "0"
    if fmt == BINARY_SI:
        if amount.denominator != 1 or -1024 < numerator < 1024:
            return _format_decimal(amount, DECIMAL_SI)
        n = abs(numerator)
        power = ((n & -n).bit_length() - 1) // 10
        if power * 10 not in _BINARY_BY_EXPONENT:
            return _format_decimal(amount, DECIMAL_EXPONENT)
        sign = "-" if numerator < 0 else ""
        return f"{sign}{n >> (10 * power)}{_BINARY_BY_EXPONENT[power * 10]}"
    return _format_decimal(amount, fmt if fmt in FORMATS else DECIMAL_EXPONENT)


_PARSED: dict[str, Quantity] = {}  # Quantity.parse's answers by text
_PARSED_MAX = 1024
_PARSED_TEXT_MAX = 64


def parse_quantity(text: str | int) -> Quantity:
    """``resource.ParseQuantity``."""
    return Quantity.parse(text)


def is_integral_cpu(q: Quantity) -> bool:
    """Whether a CPU quantity is a whole number of CPUs (``value×1000 == milliValue``)."""
    return q.value() * 1000 == q.milli_value()


ZERO = Quantity(Fraction(0), DECIMAL_SI)
