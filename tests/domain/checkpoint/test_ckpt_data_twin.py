"""A 1.37 file whose inline part is its own data's text is read in one decode
(``app.domain.checkpoint.data_twin``): the file and data objects are the two decodes' own, the
loaders' results are the same, and any file that is not laid out so (edited inline part, a
case-folded key, other spacing) is left to the usual decodes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.domain.checkpoint import (
    Reader,
    load_cpu_checkpoint,
    load_memory_checkpoint,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.content import file_content
from app.domain.checkpoint.data_twin import read_twin
from app.domain.checkpoint.detect import detect_tree
from app.domain.checkpoint.gojson_decode import unmarshal_text
from app.domain.checkpoint.gojson_scan import forget, parse
from tests.domain.checkpoint.ckpt_samples import CPU_STATE

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from bench_checkpoint import states  # the bench's 250-pod node

_, MEMORY_STATE = states()
_, MEMORY_X4 = states(containers=4)
FILES = {
    "cpu V4": (write_cpu_checkpoint(CPU_STATE, "V4"), C.CPU_FORMATS, "V4"),
    "memory V3": (write_memory_checkpoint(MEMORY_STATE, "V3"), M.MEMORY_FORMATS, "V3"),
    "memory V3 x4": (write_memory_checkpoint(MEMORY_X4, "V3"), M.MEMORY_FORMATS, "V3"),
}


@pytest.mark.parametrize("name", FILES)
def test_twin_read_is_both_decodes(name: str) -> None:
    text, formats, version = FILES[name]
    twin = read_twin(parse(text), text, formats, version, None)
    assert twin is not None, "a file as the kubelet writes it is read in one decode"
    obj, data = twin
    full, err = formats.decode(parse(text), version)
    assert err is None
    own_data = formats.new("data")
    assert unmarshal_text(full["Data"], formats.data_t, own_data) is None
    assert data == own_data
    assert {k: v for k, v in obj.items() if k != "CheckpointData"} == full
    assert obj["CheckpointData"] is data


@pytest.mark.parametrize("gate", [True, False])
@pytest.mark.parametrize("name", FILES)
def test_loads_are_the_same_either_way(name: str, gate: bool) -> None:
    """The same file with one space added after its last comma is not laid out as the kubelet
    writes it: read by the usual decodes; both reads give the same state."""
    text, formats, _ = FILES[name]
    spaced = text[: text.rindex(",")] + ", " + text[text.rindex(",") + 1 :]
    assert read_twin(parse(spaced), spaced, formats, *FILES[name][2:], None) is None
    if formats is C.CPU_FORMATS:
        reader = Reader("1.37", gate, "static")
        a, b = load_cpu_checkpoint(text, reader), load_cpu_checkpoint(spaced, reader)
    else:
        reader = Reader("1.37", gate, "Static")
        a, b = load_memory_checkpoint(text, reader), load_memory_checkpoint(spaced, reader)
    forget()
    assert a.accepted and b.accepted
    assert a.state == b.state and a.loaded_as == b.loaded_as
    assert [x.to_dict() for x in a.attempts] == [x.to_dict() for x in b.attempts]


def _edited(text: str, edit: str) -> str:
    doc = json.loads(text)
    if edit == "inline differs":
        doc["policyName"] = doc["policyName"] + "x"
    elif edit == "folded key":
        doc = {"Checksum": 0, **doc}
    elif edit == "inline type error":
        doc["policyName"] = 7
    return json.dumps(doc, separators=(",", ":"))


@pytest.mark.parametrize("edit", ["inline differs", "folded key", "inline type error"])
def test_other_layouts_are_decoded_the_usual_way(edit: str) -> None:
    text, formats, version = FILES["memory V3"]
    edited = _edited(text, edit)
    assert read_twin(parse(edited), edited, formats, version, None) is None
    result = load_memory_checkpoint(edited, Reader("1.37", True, "Static"))
    if edit == "inline type error":
        assert not result.accepted
        assert "cannot unmarshal number into Go struct field" in (result.error or "")


@pytest.mark.parametrize("name", ["cpu V4", "memory V3"])
def test_the_data_string_may_be_escaped_any_way(name: str) -> None:
    """The layout is matched as text except the data string, which only has to parse to a
    text starting with the inline part: quotes written as \\u0022 read in one decode too."""
    text, formats, version = FILES[name]
    start = text.rindex(',"data":"') + len(',"data":"')
    end = text.rindex('","dataChecksum":')
    escaped = text[:start] + text[start:end].replace('\\"', "\\u0022") + text[end:]
    assert escaped != text
    twin = read_twin(parse(escaped), escaped, formats, version, None)
    assert twin is not None
    assert twin[1] == read_twin(parse(text), text, formats, version, None)[1]
    # a member written with a space is another layout: the usual decodes
    spaced = escaped.replace(',"dataChecksum":', ', "dataChecksum":')
    assert read_twin(parse(spaced), spaced, formats, version, None) is None


@pytest.mark.parametrize("name", FILES)
def test_a_file_content_is_the_same_read_in_one_decode(name: str) -> None:
    """``file_content`` given the file's text reads a file laid out as the kubelet writes it
    in one decode: the same content (state, inline part, problems) as the usual decodes."""
    text, formats, version = FILES[name]
    info = detect_tree(parse(text), "cpu" if formats is C.CPU_FORMATS else "memory")
    assert info.version == version
    forget()
    usual = file_content(parse(text), info)
    forget()
    assert read_twin(parse(text), text, formats, version, None) is not None
    assert file_content(parse(text), info, text) == usual
    assert usual.state is not None and usual.inline is not None


def test_a_file_content_with_a_bad_cpuset_has_the_same_problems_either_way() -> None:
    """A cpuset no kubelet parses, in the inline part and the data alike: each part's
    problem is reported, in the same order, whichever way the file is decoded."""
    good = write_cpu_checkpoint(CPU_STATE, "V4")
    text = good.replace('\\"defaultCpuSet\\":\\"0-1,8-11\\"', '\\"defaultCpuSet\\":\\"3-1\\"')
    text = text.replace('"defaultCpuSet":"0-1,8-11"', '"defaultCpuSet":"3-1"')
    assert text.count("3-1") == 2
    tree = parse(text)
    info = detect_tree(tree, "cpu")
    forget()
    usual = file_content(parse(text), info)
    forget()
    tree = parse(text)
    assert read_twin(tree, text, C.CPU_FORMATS, "V4", None) is not None
    assert file_content(tree, info, text) == usual
    assert len(usual.problems) == 2
