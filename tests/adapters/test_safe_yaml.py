"""Bounded decoding (app.adapters.safe_yaml, app.domain.limits): YAML alias bombs, deep
nesting and huge numbers end in InputLimitError before the decoder explodes (issue 13, points
4 and 8), in manifests, kubelet configurations and the cpuset/topology parsers."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.adapters.kubelet_files import parse_kubelet_config_text
from app.adapters.manifests import ManifestLimitError, parse_pod_manifests
from app.adapters.safe_yaml import load_yaml, load_yaml_all, loads_json
from app.domain.checkpoint.gocpuset import GoCPUSetError, parse_go_cpuset
from app.domain.cpuset import CPUSet, CPUSetError
from app.domain.kubelet_config import KubeletConfigError
from app.domain.limits import InputLimitError, check_tree
from app.domain.topology.spec import parse_topology_spec
from app.domain.topology.synthetic import TopologySpecError


def alias_bomb_pods() -> str:
    """A List whose items expand to 10**6 pods through nine levels of aliases."""
    pod = (
        "&p {apiVersion: v1, kind: Pod, metadata: {name: p, namespace: d}, "
        "spec: {containers: [{name: c}]}}"
    )
    lines = [f"a0: &a0 [{pod}, *p, *p, *p, *p, *p, *p, *p, *p, *p]"]
    for i in range(1, 6):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append("kind: List\nitems: *a5")
    return "\n".join(lines) + "\n"


BOMB = alias_bomb_pods()


def test_the_bomb_is_small_and_refused_fast() -> None:
    assert len(BOMB) < 700
    started = time.perf_counter()
    with pytest.raises(ManifestLimitError) as err:
        parse_pod_manifests(BOMB)
    assert time.perf_counter() - started < 1.0
    assert err.value.field == "manifest"
    assert "aliases are expanded" in str(err.value)


def test_aliases_within_the_limit_still_work() -> None:
    docs = load_yaml_all("- &x {a: 1}\n- *x\n- <<: *x\n  b: 2\n")
    assert docs == [[{"a": 1}, {"a": 1}, {"a": 1, "b": 2}]]


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(InputLimitError, match="refers to itself"):
        load_yaml("a: &a [*a]")


@pytest.mark.parametrize("levels", [65, 1000, 10_000])
def test_deep_nesting(levels: int) -> None:
    flow = "[" * levels + "]" * levels
    with pytest.raises(InputLimitError, match="nested deeper than 64"):
        load_yaml(f"a: {flow}")
    with pytest.raises(InputLimitError, match="nested deeper than 64"):
        loads_json(f'{{"a": {flow}}}')
    with pytest.raises(ManifestLimitError):
        parse_pod_manifests(f"a: {flow}")


def test_nesting_of_64_levels_is_fine() -> None:
    assert load_yaml("[" * 63 + "]" * 63) is not None


def test_huge_numbers() -> None:
    big = "7" * 5000
    with pytest.raises(InputLimitError, match="5000 digits"):
        load_yaml(f"n: {big}")
    with pytest.raises(InputLimitError, match="5000 digits"):
        loads_json(f'{{"n": {big}}}')
    with pytest.raises(InputLimitError):
        load_yaml("n: " + ":".join(["59"] * 200))  # sexagesimal
    assert loads_json(f'{{"s": "{big}"}}') == {"s": big}  # strings may hold digits


def test_check_tree_is_iterative() -> None:
    deep: list[object] = []
    cur = deep
    for _ in range(5000):
        nxt: list[object] = []
        cur.append(nxt)
        cur = nxt
    with pytest.raises(InputLimitError):
        check_tree("doc", deep)


def test_kubelet_configuration_limits() -> None:
    with pytest.raises(KubeletConfigError, match="nested deeper"):
        parse_kubelet_config_text("evictionHard: " + "[" * 1000 + "]" * 1000)
    with pytest.raises(KubeletConfigError, match="digits"):
        parse_kubelet_config_text("maxPods: " + "1" * 5000)


def test_cpusets_with_huge_ids() -> None:
    big = "1" * 5000
    for text in (big, f"0-{big}", f"{big}-{big}", "0" * 5000 + "1"):
        if text.lstrip("0") == "1":
            assert CPUSet.parse(text) == CPUSet([1])
            continue
        with pytest.raises(CPUSetError, match="larger than"):
            CPUSet.parse(text)
        with pytest.raises(GoCPUSetError, match="value out of range"):
            parse_go_cpuset(text)


def test_topology_spec_with_huge_numbers() -> None:
    with pytest.raises(TopologySpecError, match="out of range"):
        parse_topology_spec(f"sockets={'1' * 5000},cores_per_numa=2")


LIBYAML_CASES = [
    "a: 1\nb: [1, 2.5, -3, 0x1f, 0o17, 1_000]\n",
    "---\nc: &x {d: 1}\ne: *x\n---\n- null\n- ~\n- true\n- Off\n",
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",
    "when: 2024-01-02T03:04:05Z\nday: 2024-01-02\nbin: !!binary aGVsbG8=\n",
    "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}]\n",
    "q: 'it''s'\nd: \"tab\\there \\u00e9\"\nblock: |\n  two\n  lines\nfold: >\n  one\n  line\n",
    "n: " + "9" * 5000 + "\n",
    "sexagesimal: 1:2:3\nf: .inf\ng: -.nan\nk: ? complex\n",
    "a: [unclosed\n",
    "bad: \x07bell\n",
    "key: value\n\tindented with a tab: x\n",
    "a: b: c\n",
    "- &a [*a]\n",
    "[" * 200 + "]" * 200 + "\n",
    BOMB,
    "",
    "# only a comment\n",
    "\ufeffbom: yes\n",
]


def _python_only(text: str) -> object:
    """What the pure-Python limited loader answers (values, or the error's type and text)."""
    from app.adapters.safe_yaml import SafeLimitedLoader

    try:
        loader = SafeLimitedLoader(text)
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    except Exception as err:
        return (type(err), str(err))


@pytest.mark.parametrize("text", LIBYAML_CASES)
def test_libyaml_parsing_answers_as_the_python_parser(text: str) -> None:
    """The values (or the refusal, with its message) are the pure-Python loader's."""
    try:
        answer: object = load_yaml_all(text)
    except Exception as err:
        answer = (type(err), str(err))
    expected = _python_only(text)
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        # nan is never equal to itself: compare the text of the values
        assert repr(answer) == repr(expected)
    else:
        assert answer == expected or repr(answer) == repr(expected)


def test_libyaml_composes_here() -> None:
    """The libyaml on this machine bounds nesting, so the cases above and below run through
    its composer and the graph checks (not only the Python composer)."""
    from app.adapters.safe_yaml import _FastLimitedLoader, _GraphLimits

    assert issubclass(_FastLimitedLoader, _GraphLimits)


@st.composite
def _flow_yaml(draw: st.DrawFn) -> str:
    """A flow-style document with anchors on some nodes and aliases to anchors already
    written (or still open: an alias to itself), several documents sometimes."""
    anchors: list[str] = []  # written so far, in order
    open_: list[str] = []

    def node(depth: int) -> str:
        kind = draw(st.sampled_from(["scalar", "alias", "seq", "map"] if depth < 7 else ["scalar"]))
        if kind == "alias" and anchors:
            return "*" + draw(st.sampled_from(anchors))
        anchor = ""
        if draw(st.booleans()):
            name = f"a{len(anchors) + len(open_)}"
            anchor = f"&{name} "
        else:
            name = ""
        if kind in ("scalar", "alias"):
            text = anchor + draw(st.sampled_from(["1", "x", "null", "2.5", "'s'", "0x1f"]))
            if name:
                anchors.append(name)
            return text
        if name:
            open_.append(name)
            anchors.append(name)  # an alias inside refers to a node still being written
        items = [node(depth + 1) for _ in range(draw(st.integers(0, 3)))]
        if name:
            open_.remove(name)
        if kind == "seq":
            return anchor + "[" + ", ".join(items) + "]"
        keys = [f"k{i}" for i in range(len(items))]
        return anchor + "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items, strict=True)) + "}"

    docs = []
    for _ in range(draw(st.integers(1, 2))):
        anchors.clear()
        docs.append(node(1))
    return "---\n" + "\n---\n".join(docs) + "\n"


@settings(max_examples=300, deadline=None)
@given(text=_flow_yaml(), max_depth=st.integers(2, 8), max_nodes=st.integers(3, 80))
def test_libyaml_limits_answer_as_the_python_composer(
    text: str, max_depth: int, max_nodes: int
) -> None:
    """Under any limits, composing in libyaml and counting on its nodes answers what the
    Python composer counting as it goes answers: the same values or the same refusal."""
    from app.adapters import safe_yaml

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(safe_yaml._LimitBase, "max_depth", max_depth)
        mp.setattr(safe_yaml._LimitBase, "max_nodes", max_nodes)
        try:
            answer: object = load_yaml_all(text)
        except Exception as err:
            answer = (type(err), str(err))
        assert repr(answer) == repr(_python_only(text))
