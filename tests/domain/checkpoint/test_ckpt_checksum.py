"""go-spew ForHash texts and FNV-1a checksums against the spec's and upstream's vectors."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.checkpoint.checksum import (
    SHORT_TEXT,
    _long_checksum,
    _short_checksum,
    fnv1a_32,
    string_checksum,
    text_checksum,
)
from app.domain.checkpoint.cpu import (
    CPU_V2_T,
    CPU_V3_T,
    LEGACY_HEADER,
    V3_HEADER,
    decode_cpu,
)
from app.domain.checkpoint.detect import compute_checksum
from app.domain.checkpoint.gojson_scan import forget, parse
from app.domain.checkpoint.gospew import sdump_for_hash
from app.domain.checkpoint.memory import MEMORY_V1_T, decode_memory


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"", 0x811C9DC5), (b"a", 0xE40C292C), (b"foobar", 0xBF9CF968), (b"ab", 1294271946)],
    ids=["empty", "a", "foobar", "ab"],
)
def test_fnv1a_32_reference_values(data: bytes, expected: int) -> None:
    assert fnv1a_32(data) == expected


def test_string_checksum_upstream_vector() -> None:
    assert string_checksum('{"policyName":"none","defaultCPUSet":"4-6"}') == 657950972


CPU_V2_TEXT = (
    "(*state.CPUManagerCheckpoint){PolicyName:(string)none DefaultCPUSet:(string)1-3 "
    "Entries:(map[string]map[string]string)map[pod:map[container1:4-6 container2:1-3]] "
    "Checksum:(checksum.Checksum)0}"
)


def test_cpu_v2_hashed_text_and_checksum() -> None:
    content = (
        '{"policyName":"none","defaultCpuSet":"1-3","entries":{"pod":{"container2":"1-3",'
        '"container1":"4-6"}},"checksum":3610638499}'
    )
    obj, err = decode_cpu(parse(content), "V2")
    assert err is None
    obj["Checksum"] = 0
    text = sdump_for_hash(obj, CPU_V2_T, LEGACY_HEADER)
    assert text == CPU_V2_TEXT
    assert text_checksum(text) == 3610638499


CPU_V3_CONTENT = (
    '{"policyName":"static","defaultCPUSet":"1-2","entries":{"pod1":{"container1":"5-6",'
    '"container2":"3-4"}},"podEntries":{"pod2":{"cpuSet":"7,8,9"}},"checksum":0}'
)
CPU_V3_TEXT = (
    "(*state.CPUManagerCheckpoint){PolicyName:(string)static DefaultCPUSet:(string)1-2 "
    "Entries:(map[string]map[string]string)map[pod1:map[container1:5-6 container2:3-4]] "
    "PodEntries:(state.PodCPUAssignments)map[pod2:{CPUSet:(cpuset.CPUSet){elems:"
    "(map[int]struct {})map[7:{} 8:{} 9:{}]}}] Checksum:(checksum.Checksum)0}"
)


def test_cpu_v3_hashed_text_parses_the_pod_cpuset() -> None:
    obj, err = decode_cpu(parse(CPU_V3_CONTENT), "V3")
    assert err is None
    text = sdump_for_hash(obj, CPU_V3_T, LEGACY_HEADER)
    assert text == CPU_V3_TEXT
    assert text_checksum(text) == 766259872
    assert text_checksum(sdump_for_hash(obj, CPU_V3_T, V3_HEADER)) == 2284712151


MEM_V1_CONTENT = (
    '{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":'
    '{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},'
    '"cells":[]}},"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory",'
    '"size":512}]}},"checksum":4215593881}'
)
MEM_V1_TEXT = (
    "(*state.MemoryManagerCheckpoint){PolicyName:(string)static MachineState:(state.NUMANodeMap)"
    "map[0:<*>{NumberOfAssignments:(int)0 MemoryMap:(map[v1.ResourceName]*state.MemoryTable)"
    "map[memory:<*>{TotalMemSize:(uint64)2048 SystemReserved:(uint64)512 Allocatable:(uint64)1536 "
    "Reserved:(uint64)512 Free:(uint64)1024}] Cells:([]int)[]}] Entries:"
    "(state.ContainerMemoryAssignments)map[pod:map[container1:[{NUMAAffinity:([]int)[0] "
    "Type:(v1.ResourceName)memory Size:(uint64)512}]]] Checksum:(checksum.Checksum)0}"
)


def test_memory_v1_hashed_text_and_checksum() -> None:
    obj, err = decode_memory(parse(MEM_V1_CONTENT), "V1")
    assert err is None
    obj["Checksum"] = 0
    text = sdump_for_hash(obj, MEMORY_V1_T, "state.MemoryManagerCheckpoint")
    assert text == MEM_V1_TEXT
    assert text_checksum(text) == 4215593881


@pytest.mark.parametrize(
    ("cells", "rendered"),
    [("[]", "Cells:([]int)[]"), ("null", "Cells:([]int)<nil>"), (None, "Cells:([]int)<nil>")],
    ids=["empty", "null", "missing"],
)
def test_nil_and_empty_slices_render_differently(cells: str | None, rendered: str) -> None:
    node = '{"numberOfAssignments":0,"memoryMap":{}' + (
        f',"cells":{cells}}}' if cells is not None else "}"
    )
    obj, err = decode_memory(parse('{"machineState":{"0":' + node + "}}"), "V1")
    assert err is None
    assert rendered in sdump_for_hash(obj, MEMORY_V1_T, "state.MemoryManagerCheckpoint")


def test_nil_pointer_last_in_map_drops_the_next_fields_type() -> None:
    obj, err = decode_memory(parse('{"policyName":"p","machineState":{"0":null}}'), "V1")
    assert err is None
    text = sdump_for_hash(obj, MEMORY_V1_T, "state.MemoryManagerCheckpoint")
    assert "MachineState:(state.NUMANodeMap)map[0:<nil>] Entries:map[] Checksum:" in text


def test_nil_pointer_not_last_keeps_types() -> None:
    obj, _ = decode_memory(
        parse('{"machineState":{"0":null,"1":{"memoryMap":null,"cells":[1]}}}'), "V1"
    )
    text = sdump_for_hash(obj, MEMORY_V1_T, "state.MemoryManagerCheckpoint")
    assert "map[0:<nil> 1:<*>{NumberOfAssignments:(int)0 MemoryMap:(map[" in text
    assert "Entries:(state.ContainerMemoryAssignments)map[]" in text


def test_nil_memory_table_last_in_memory_map_affects_cells() -> None:
    obj, _ = decode_memory(parse('{"machineState":{"0":{"memoryMap":{"memory":null}}}}'), "V1")
    text = sdump_for_hash(obj, MEMORY_V1_T, "state.MemoryManagerCheckpoint")
    assert "map[memory:<nil>] Cells:<nil>}]" in text


def test_map_keys_sort_numerically_in_spew() -> None:
    obj, _ = decode_memory(parse('{"machineState":{"10":null,"2":null,"1":null}}'), "V1")
    text = sdump_for_hash(obj, MEMORY_V1_T, "state.MemoryManagerCheckpoint")
    assert "map[1:<nil> 2:<nil> 10:<nil>]" in text


def test_struct_checksum_covers_decoded_value_not_bytes() -> None:
    spaced = '{ "policyName" : "none", "defaultCpuSet":"1-3", "checksum": 1694838852 }'
    compact = '{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}'
    assert compute_checksum(spaced, "cpu_v1") == compute_checksum(compact, "cpu_v1") == 1694838852


@pytest.mark.parametrize(
    ("content", "algorithm", "expected"),
    [
        (
            '{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"pod-a":{"c1":"2-3"}},'
            '"checksum":941340455}',
            "cpu_v2_legacy",
            941340455,
        ),
        (
            '{"policyName":"static","defaultCpuSet":"0-1,6-7","entries":{"pod-a":{"c1":"2-3"}},'
            '"podEntries":{"pod-a":{"cpuSet":"2-5"}},"checksum":3279530564}',
            "cpu_v3_legacy",
            3279530564,
        ),
        (
            '{"policyName":"static","defaultCpuSet":"0-1,6-7","entries":{"pod-a":{"c1":"2-3"}},'
            '"podEntries":{"pod-a":{"cpuSet":"2,3,4,5"}}}',
            "cpu_v3_legacy",
            3279530564,
        ),
        (MEM_V1_CONTENT, "mem_v1", 4215593881),
    ],
    ids=["cpu-v2", "cpu-v3", "cpu-v3-noncanonical-set", "mem-v1"],
)
def test_spec_worked_examples(content: str, algorithm: str, expected: int) -> None:
    assert compute_checksum(content, algorithm) == expected


def test_memory_v2_upstream_vector() -> None:
    content = MEM_V1_CONTENT.replace(
        ',"checksum":4215593881',
        ',"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}},'
        '"checksum":1278640530',
    )
    assert compute_checksum(content, "mem_v2_legacy") == 1278640530


def _fnv1a_32_by_definition(data: bytes) -> int:
    h = 2166136261
    for byte in data:
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=6000))
def test_fnv_is_fnv1a_32_by_its_definition(data: bytes) -> None:
    assert fnv1a_32(data) == _fnv1a_32_by_definition(data)


@pytest.mark.parametrize("size", [SHORT_TEXT - 1, SHORT_TEXT, SHORT_TEXT + 1, 3 * SHORT_TEXT])
def test_remembered_text_checksums_are_the_hash_of_the_text(size: int) -> None:
    text = "".join(random.Random(size).choice("{}[]:,abc\u00e9") for _ in range(size))
    forget()
    first = text_checksum(text)
    assert first == fnv1a_32(text.encode("utf-8"))
    assert text_checksum(text) == first  # remembered: the same answer
    kept = _short_checksum if size <= SHORT_TEXT else _long_checksum
    assert kept.cache_info().currsize == 1
    forget()
    assert kept.cache_info().currsize == 0
