"""The V4/V3 writers encode the values shared by ``data`` and the inline part once
(``gojson_encode.marshal`` fragments) and check the document for escapes with an ASCII fast
path; the files must stay exactly what the plain composition writes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from app.domain.checkpoint import (
    CPUCheckpointState,
    MemoryCheckpointState,
    write_cpu_checkpoint,
    write_memory_checkpoint,
)
from app.domain.checkpoint import cpu as C
from app.domain.checkpoint import memory as M
from app.domain.checkpoint.checksum import string_checksum, struct_checksum
from app.domain.checkpoint.gojson_encode import encode_fragment, marshal
from app.domain.checkpoint.gotypes import STRING_T
from app.domain.cpuset import CPUSet
from tests.domain.checkpoint.test_ckpt_codecs import cpu_states, memory_states


def plain_cpu_v4(state: CPUCheckpointState) -> str:
    inline = C.cpu_go_value(state, "V2")
    data = marshal(C.cpu_data_value(state), C.CPU_DATA_T)
    inline["Checksum"] = struct_checksum(inline, C.CPU_V2_T, C.LEGACY_HEADER)
    inline["Data"] = data
    inline["DataChecksum"] = string_checksum(data)
    return marshal(inline, C.CPU_V4_T)


def plain_memory_v3(state: MemoryCheckpointState) -> str:
    inline = M.memory_go_value(state, "V1")
    data = marshal(M.memory_data_value(state), M.MEMORY_DATA_T)
    inline["Checksum"] = struct_checksum(inline, M.MEMORY_V1_T, M.LEGACY_HEADER)
    inline["Data"] = data
    inline["DataChecksum"] = string_checksum(data)
    return marshal(inline, M.MEMORY_V3_T)


@settings(max_examples=80, deadline=None)
@given(cpu_states(pod_entries=True))
def test_cpu_v4_writer_matches_the_plain_composition(state: CPUCheckpointState) -> None:
    assert write_cpu_checkpoint(state, "V4") == plain_cpu_v4(state)


@settings(max_examples=60, deadline=None)
@given(memory_states(pod_entries=True))
def test_memory_v3_writer_matches_the_plain_composition(state: MemoryCheckpointState) -> None:
    assert write_memory_checkpoint(state, "V3") == plain_memory_v3(state)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("plain", id="ascii"),
        pytest.param("a<b>&c", id="html"),
        pytest.param("é\u2028", id="non-ascii-and-line-separator"),
        pytest.param("\ud800", id="surrogate"),
    ],
)
def test_marshal_with_fragments_equals_marshal(name: str) -> None:
    state = CPUCheckpointState("static", CPUSet.parse("0-3"), {name: {name: CPUSet([1])}})
    value = C.cpu_go_value(state, "V2")
    entries_t = next(f.type for f in C.CPU_V2_T.fields if f.go_name == "Entries")
    fragments = {"Entries": encode_fragment(value["Entries"], entries_t)}
    assert marshal(value, C.CPU_V2_T, fragments=fragments) == marshal(value, C.CPU_V2_T)


def test_fragments_are_for_structs_only() -> None:
    with pytest.raises(TypeError, match="plain structs"):
        marshal("x", STRING_T, fragments={"X": '"y"'})
