"""CPUManagerState: getters/setters named like upstream, copy, equality, dict form."""

from __future__ import annotations

import pytest

from app.domain.cpumanager.state import CPUManagerState, CPUStateFormatError
from app.domain.cpuset import CPUSet

P = CPUSet.parse


def _state() -> CPUManagerState:
    return CPUManagerState(P("0,5-7"), {"pod1": {"a": P("1-2"), "b": P("3")}}, {"pod2": P("4")})


def test_getters() -> None:
    s = _state()
    assert s.get_cpu_set("pod1", "a") == P("1-2")
    assert s.get_cpu_set("pod1", "zz") is None
    assert s.get_cpu_set("nope", "a") is None
    assert s.get_default_cpu_set() == P("0,5-7")
    assert s.get_cpu_set_or_default("pod1", "b") == P("3")
    assert s.get_cpu_set_or_default("pod1", "zz") == P("0,5-7")
    assert s.get_pod_cpu_set("pod2") == P("4")
    assert s.get_pod_cpu_set("pod1") is None
    assert s.assigned_cpus() == P("1-3")
    assert s.pod_entry_cpus() == P("4")
    assert list(s.iter_assignments()) == [("pod1", "a", P("1-2")), ("pod1", "b", P("3"))]


def test_get_cpu_assignments_is_a_copy() -> None:
    s = _state()
    got = s.get_cpu_assignments()
    got["pod1"]["a"] = P("9")
    got["x"] = {}
    assert s.get_cpu_set("pod1", "a") == P("1-2")
    assert "x" not in s.assignments
    pods = s.get_pod_cpu_assignments()
    pods["pod9"] = P("1")
    assert s.get_pod_cpu_set("pod9") is None


def test_delete_drops_emptied_pod() -> None:
    s = _state()
    s.delete("pod1", "a")
    assert s.assignments == {"pod1": {"b": P("3")}}
    s.delete("pod1", "b")
    assert s.assignments == {}
    s.delete("pod1", "b")  # absent: no error
    s.delete("nope", "x")


def test_delete_pod_keeps_containers() -> None:
    s = CPUManagerState(P("0"), {"p": {"c": P("1")}}, {"p": P("1-2")})
    s.delete_pod("p")
    assert s.pod_entries == {}
    assert s.get_cpu_set("p", "c") == P("1")


def test_setters_and_clear() -> None:
    s = CPUManagerState()
    s.set_default_cpu_set(P("0-3"))
    s.set_cpu_set("p", "c", P("4"))
    s.set_pod_cpu_set("p", P("4-5"))
    assert s == CPUManagerState(P("0-3"), {"p": {"c": P("4")}}, {"p": P("4-5")})
    s.set_cpu_assignments({"q": {"d": P("7")}})
    s.set_pod_cpu_assignments({})
    assert s == CPUManagerState(P("0-3"), {"q": {"d": P("7")}})
    s.clear_state()
    assert s == CPUManagerState()


def test_copy_is_independent_and_restore_rolls_back() -> None:
    s = _state()
    c = s.copy()
    assert c == s and c is not s
    c.set_cpu_set("pod1", "a", P("9"))
    c.set_cpu_set("pod3", "x", P("8"))
    c.set_default_cpu_set(P("0"))
    c.delete_pod("pod2")
    assert s == _state()
    assert c != s
    c.restore(s)
    assert c == s
    c.set_cpu_set("pod1", "z", P("1"))
    assert s.get_cpu_set("pod1", "z") is None


def test_copies_share_nothing_a_writer_can_see_in_either_direction() -> None:
    s = _state()
    assert s.assigned_cpus() == P("1-3")  # cached before the copy: the copy carries it
    c = s.copy()
    s.set_cpu_set("pod1", "a", P("6"))  # the original writes: the copy keeps the old map
    s.delete("pod1", "b")
    assert c == _state() and c.assigned_cpus() == P("1-3")
    assert s.get_cpu_set("pod1", "b") is None and s.assigned_cpus() == P("6")
    c.delete("pod1", "a")
    c.delete("pod1", "b")
    c.set_cpu_set("pod1", "n", P("7"))  # a pod emptied then filled again
    assert c.assigned_cpus() == P("7") and s.get_cpu_set("pod1", "n") is None
    c.copy().set_cpu_set("pod1", "n", P("0"))  # a second generation writes
    assert c.get_cpu_set("pod1", "n") == P("7") and c.assigned_cpus() == P("7")


def test_equality_with_other_types() -> None:
    assert _state() != "state"
    assert _state() == _state()


def test_dict_round_trip() -> None:
    s = _state()
    d = s.to_dict()
    assert d == {
        "defaultCpuSet": "0,5-7",
        "entries": {"pod1": {"a": "1-2", "b": "3"}},
        "podEntries": {"pod2": "4"},
    }
    assert CPUManagerState.from_dict(d) == s
    assert CPUManagerState.from_dict({}) == CPUManagerState()
    assert "pod1" in repr(s)


@pytest.mark.parametrize(
    ("d", "fragment"),
    [
        ({"defaultCpuSet": "1-"}, "defaultCpuSet"),
        ({"defaultCpuSet": 3}, "defaultCpuSet"),
        ({"entries": {"p": {"c": "x"}}}, "entries.p.c"),
        ({"entries": {"p": "0"}}, "entries.p"),
        ({"entries": []}, "entries"),
        ({"podEntries": {"p": "3-1"}}, "podEntries.p"),
        ({"podEntries": "0"}, "podEntries"),
    ],
    ids=[
        "bad-default",
        "default-not-text",
        "bad-entry",
        "entry-not-map",
        "entries-list",
        "bad-pod-entry",
        "pod-entries-text",
    ],
)
def test_from_dict_errors_name_the_field(d: dict[str, object], fragment: str) -> None:
    with pytest.raises(CPUStateFormatError) as err:
        CPUManagerState.from_dict(d)
    assert fragment in str(err.value)


def test_from_dict_rejects_non_mapping() -> None:
    with pytest.raises(CPUStateFormatError):
        CPUManagerState.from_dict([])  # type: ignore[arg-type]
