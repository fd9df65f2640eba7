"""Fast paths of quantities and pods: the common-form parser and the parse cache against the
general parser; integer ``ScaledValue``/``Value``/``MilliValue``, ``sign`` and value
equality against plain Fraction arithmetic; memoised QoS and pod-level answers against a fresh
computation, invisible to equality, hashing, ``dataclasses.fields`` and copies."""

from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain import quantity as Q
from app.domain.pod import qos as P
from app.domain.pod.model import Container, Pod, ResourceRequirements
from app.domain.pod.qos import (
    compute_pod_qos,
    is_container_equivalent_qos_guaranteed,
    is_pod_level_limits_set,
    is_pod_level_requests_set,
    resource_qos,
)
from app.domain.quantity import Quantity, QuantityError
from tests.strategies import pods, quantities, quantity_texts

# Digits (leading zeros, up to 20) and every suffix, plus text of the grammar's alphabet.
_plain_like = st.builds(
    "{}{}".format,
    st.from_regex(r"[0-9]{1,20}", fullmatch=True),
    st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti"])
    | st.sampled_from(["Pi", "Ei", "K", "ki", "e3", "i", "mi"]),
)
_texts = st.one_of(
    _plain_like, quantity_texts(signed=True), st.text("0123456789.+-eEinumkKMGTP ", max_size=8)
)


def _parts_or_error(text: str) -> tuple[Fraction, str] | str:
    try:
        return Q._parse_parts(text)
    except QuantityError as err:
        return str(err)


@settings(max_examples=600, deadline=None)
@given(_texts)
def test_common_forms_and_the_cache_parse_as_the_general_parser(text: str) -> None:
    general = _parts_or_error(text)
    plain = Q._plain_parts(text)
    assert plain is None or plain == general
    for _ in range(2):  # the second parse may answer from the cache
        try:
            q = Quantity.parse(text)
        except QuantityError as err:
            assert str(err) == general
        else:
            assert (q.amount, q.format) == general


def fraction_scaled_value(q: Quantity, scale: int) -> int:
    """``ScaledValue`` with Fraction arithmetic: ceil(|v| / 10^scale), away from zero."""
    v = q.amount / Fraction(10) ** scale
    n = -(-abs(v.numerator) // v.denominator)
    return -n if v < 0 else n


_any_quantities = st.one_of(
    quantities(signed=True),
    st.builds(
        Quantity,
        st.builds(
            Fraction, st.integers(-(10**12), 10**12), st.sampled_from([1, 2, 8, 1000, 10**9])
        ),
    ),
)


@settings(max_examples=400, deadline=None)
@given(_any_quantities, st.integers(-12, 12))
def test_integer_values_match_fraction_arithmetic(q: Quantity, scale: int) -> None:
    assert q.scaled_value(scale) == fraction_scaled_value(q, scale)
    assert q.value() == fraction_scaled_value(q, 0)
    assert q.milli_value() == fraction_scaled_value(q, -3)
    assert q.is_zero() == (q.amount == 0)
    assert q.sign() == (q.amount > 0) - (q.amount < 0)


@settings(max_examples=300, deadline=None)
@given(_any_quantities, _any_quantities)
def test_equality_is_value_equality(a: Quantity, b: Quantity) -> None:
    assert (a == b) == (a.amount == b.amount)
    assert (a != b) == (a.amount != b.amount)
    if a == b:
        assert hash(a) == hash(b)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        pytest.param("2", "2000m", True, id="formats-do-not-count"),
        pytest.param("1Gi", "1073741824", True, id="binary-vs-decimal"),
        pytest.param("1", "1001m", False, id="different"),
        pytest.param("0", "-0", True, id="zero"),
    ],
)
def test_equality_table(a: str, b: str, equal: bool) -> None:
    assert (Quantity.parse(a) == Quantity.parse(b)) is equal
    assert Quantity.parse(a) != "2"  # another type is never equal


def _fresh(res: ResourceRequirements) -> ResourceRequirements:
    return ResourceRequirements(dict(res.requests), dict(res.limits))


@settings(max_examples=200, deadline=None)
@given(pods())
def test_memoised_answers_equal_fresh_ones(pod: Pod) -> None:
    for _ in range(2):  # the second round answers from the memo
        for c in pod.all_containers():
            fresh = _fresh(c.resources)
            assert resource_qos(c.resources) == P._resource_qos(fresh)
            assert is_container_equivalent_qos_guaranteed(c) == (
                is_container_equivalent_qos_guaranteed(Container(c.name, fresh))
            )
        for gate in (True, False):
            assert compute_pod_qos(pod, gate) == compute_pod_qos(copy.copy(pod), gate)
        plain = Pod(
            pod.uid,
            pod.name,
            pod.namespace,
            pod.containers,
            pod.init_containers,
            None if pod.resources is None else _fresh(pod.resources),
        )
        assert is_pod_level_requests_set(pod) == is_pod_level_requests_set(plain)
        assert is_pod_level_limits_set(pod) == is_pod_level_limits_set(plain)


def test_memo_is_invisible() -> None:
    res = ResourceRequirements({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    pod = Pod("u", "p", "default", (Container("c", res),), resources=res)
    before = (hash(pod), repr(pod), [f.name for f in dataclasses.fields(Pod)])
    assert compute_pod_qos(pod) == "Guaranteed"
    assert compute_pod_qos(pod, False) == "Guaranteed"
    assert is_container_equivalent_qos_guaranteed(pod.containers[0])
    assert (hash(pod), repr(pod), [f.name for f in dataclasses.fields(Pod)]) == before
    assert pod == Pod("u", "p", "default", (Container("c", _fresh(res)),), resources=_fresh(res))
    copied = copy.copy(pod)
    assert copied == pod and compute_pod_qos(copied) == "Guaranteed"
