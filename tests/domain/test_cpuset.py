"""CPUSet: parsing, canonical text, set algebra and the fast paths (app/domain/cpuset.py)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.cpuset import EMPTY, MAX_CPU_ID, CPUSet, CPUSetError, format_ids, parse
from tests.strategies import any_cpusets, cpuset_texts, cpusets


def reference_text(ids: set[int] | frozenset[int]) -> str:
    """The canonical text computed the slow, obvious way."""
    out, run = [], []
    for i in sorted(ids):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [i]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


@pytest.mark.parametrize(
    ("text", "ids", "canonical"),
    [
        ("", [], ""),
        ("0", [0], "0"),
        ("0-1", [0, 1], "0-1"),
        ("0,1", [0, 1], "0-1"),
        ("0,6", [0, 6], "0,6"),
        ("2-11", list(range(2, 12)), "2-11"),
        ("5-5", [5], "5"),
        ("3,1,2", [1, 2, 3], "1-3"),
        ("1-3,2-5", [1, 2, 3, 4, 5], "1-5"),
        ("1-3,3-5", [1, 2, 3, 4, 5], "1-5"),
        ("1,1,1", [1], "1"),
        ("0,6,2,8,4,10,1,7", [0, 1, 2, 4, 6, 7, 8, 10], "0-2,4,6-8,10"),
        ("8-9,0-1", [0, 1, 8, 9], "0-1,8-9"),
        ("+1,007", [1, 7], "1,7"),
        ("1-2,3", [1, 2, 3], "1-3"),
        ("0-1,3-4,6", [0, 1, 3, 4, 6], "0-1,3-4,6"),
        ("8191,8192", [8191, 8192], "8191-8192"),
        ("65535", [MAX_CPU_ID], "65535"),
        ("0-1023", list(range(1024)), "0-1023"),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_parse_and_canonical_text(text: str, ids: list[int], canonical: str) -> None:
    s = CPUSet.parse(text)
    assert list(s) == ids
    assert str(s) == canonical
    assert CPUSet.parse(canonical) == s
    assert parse(text) == s


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("1-", "empty number in element '1-'"),
        ("3-1", "invalid range '3-1' (3 > 1)"),
        ("a", "'a' in element 'a' is not a CPU id"),
        ("-1", "empty number in element '-1'"),
        ("1,,2", "empty number in element ''"),
        ("99999999", "CPU id 99999999 is larger than 65535"),
        ("1-2-3", "'2-3' in element '1-2-3' is not a CPU id"),
        ("1,", "empty number in element ''"),
        (" 1", "' 1' in element ' 1' is not a CPU id"),
        ("1.5", "'1.5' in element '1.5' is not a CPU id"),
        ("0-99999999999", "CPU id 99999999999 is larger than 65535"),
        ("0,2,5-3", "invalid range '5-3' (5 > 3)"),
        ("٣", "'٣' in element '٣' is not a CPU id"),
    ],
    ids=repr,
)
def test_malformed_text_raises_cpuset_error_naming_the_text(text: str, detail: str) -> None:
    with pytest.raises(CPUSetError) as exc:
        CPUSet.parse(text)
    assert exc.value.text == text
    assert exc.value.detail == detail
    assert str(exc.value) == f"invalid cpuset {text!r}: {detail}"


@pytest.mark.parametrize("value", [None, 5, b"1-2", ["1"]], ids=repr)
def test_parse_rejects_non_text(value: object) -> None:
    with pytest.raises(CPUSetError, match="a cpuset must be given as text"):
        CPUSet.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, True, "3", 1.0, MAX_CPU_ID + 1], ids=repr)
def test_constructor_rejects_bad_ids(bad: object) -> None:
    with pytest.raises(CPUSetError):
        CPUSet([1, bad])  # type: ignore[list-item]


def test_from_mask_rejects_negative_masks() -> None:
    with pytest.raises(CPUSetError, match="cannot be negative"):
        CPUSet.from_mask(-1)


@pytest.mark.parametrize(
    ("first", "last", "text"), [(0, 3, "0-3"), (5, 5, "5"), (4, 2, "")], ids=str
)
def test_range(first: int, last: int, text: str) -> None:
    assert str(CPUSet.range(first, last)) == text


def test_queries() -> None:
    s = CPUSet.parse("1-3,8")
    assert (s.size(), len(s), s.min(), s.max()) == (4, 4, 1, 8)
    assert s.mask == 0b100001110
    assert s.ids() == s.list() == [1, 2, 3, 8]
    assert list(s.runs()) == [(1, 3), (8, 8)]
    assert 2 in s and 4 not in s and -1 not in s and "2" not in s
    assert bool(s) and not s.is_empty() and not EMPTY and EMPTY.is_empty()
    assert CPUSet.parse("2-3").is_subset_of(s) and s.is_superset_of(CPUSet.parse("8"))
    assert not s.is_subset_of(CPUSet.parse("1-3"))
    assert repr(s) == "CPUSet('1-3,8')"
    assert format_ids([3, 1, 2]) == "1-3"


@pytest.mark.parametrize("method", ["min", "max"])
def test_min_max_of_empty_set_raise(method: str) -> None:
    with pytest.raises(ValueError, match="empty CPUSet"):
        getattr(EMPTY, method)()


def test_immutable_hashable_picklable() -> None:
    s = CPUSet.parse("0-3")
    with pytest.raises(AttributeError):
        s._mask = 1  # type: ignore[misc]
    assert {s: 1}[CPUSet([0, 1, 2, 3])] == 1
    back = pickle.loads(pickle.dumps(s))
    assert back == s and str(back) == "0-3"
    assert s != "0-3"


def test_cached_text_is_the_canonical_text() -> None:
    # A set parsed from non-canonical text must not keep that text.
    for text in ["5-5", "1,2", "1-2,3", "3,1", "1-3,3-5", "0,2-2,4"]:
        s = CPUSet.parse(text)
        assert str(s) == reference_text(set(s)) != text


def test_big_ids_beyond_the_fast_tables() -> None:
    s = CPUSet.parse("9000-9002,20000,65535")
    assert str(s) == "9000-9002,20000,65535"
    assert list(s) == [9000, 9001, 9002, 20000, 65535]


@settings(max_examples=150, deadline=None)
@given(any_cpusets())
def test_text_round_trip(s: CPUSet) -> None:
    text = str(s)
    assert text == reference_text(set(s))
    assert CPUSet.parse(text) == s
    assert str(CPUSet.parse(text)) == text


@settings(max_examples=150, deadline=None)
@given(cpuset_texts())
def test_any_valid_text_parses_to_its_ids(case: tuple[str, frozenset[int]]) -> None:
    text, ids = case
    s = CPUSet.parse(text)
    assert set(s) == ids
    assert str(s) == reference_text(ids)


@settings(max_examples=150, deadline=None)
@given(st.frozensets(st.integers(0, 4000), max_size=300))
def test_iteration_is_ascending_and_complete(ids: frozenset[int]) -> None:
    s = CPUSet(ids)
    assert list(s) == sorted(ids) == s.list()
    assert s.size() == len(ids)
    assert CPUSet.from_mask(s.mask) == s


@settings(max_examples=100, deadline=None)
@given(cpusets(), cpusets())
def test_algebra_matches_python_sets(a: CPUSet, b: CPUSet) -> None:
    sa, sb = set(a), set(b)
    assert set(a | b) == sa | sb == set(a.union(b))
    assert set(a & b) == sa & sb == set(a.intersection(b))
    assert set(a - b) == sa - sb == set(a.difference(b))
    assert set(a ^ b) == sa ^ sb
    assert a.is_subset_of(b) == (sa <= sb)
    assert a.is_superset_of(b) == (sa >= sb)
    assert (a == b) == (sa == sb)
    assert set(a.union(b, CPUSet([7]))) == sa | sb | {7}


@settings(max_examples=100, deadline=None)
@given(any_cpusets())
def test_runs_cover_the_set(s: CPUSet) -> None:
    runs = list(s.runs())
    covered = [i for first, last in runs for i in range(first, last + 1)]
    assert covered == list(s)
    assert all(b[0] > a[1] + 1 for a, b in pairwise(runs))


def test_the_fast_tables_grow_to_the_largest_id_met() -> None:
    # A fresh interpreter: the tables are module state that other tests grow.
    script = (
        "from app.domain import cpuset as c\n"
        "sizes = [len(c._ID_LIST)]\n"
        "for text in ('0-3', '0-511', '5,700-701', '9000', '007', '1-2,3'):\n"
        "    s = c.CPUSet.parse(text)\n"
        "    assert str(s) == str(c.CPUSet.from_mask(s.mask)), text\n"
        "    sizes.append(len(c._ID_LIST))\n"
        "text = str(c.CPUSet.from_mask(int('01' * 1000, 2)))\n"
        "assert text == ','.join(map(str, range(0, 2000, 2)))\n"
        "sizes.append(len(c._ID_LIST))\n"
        "assert c.CPUSet.from_mask((1 << 3000) - 1).ids()[-1] == 2999\n"
        "sizes.append(len(c._ID_LIST))\n"
        "print(sizes)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == [
        "[0,",
        "64,",
        "512,",
        "1024,",
        "1024,",
        "1024,",
        "1024,",
        "2048,",
        "4096]",
    ]
