"""Go encoding/json semantics: syntax errors, typed decoding, encoding."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.domain.checkpoint.cpu import CPU_V1_T, CPU_V3_T, decode_cpu, new_cpu_checkpoint
from app.domain.checkpoint.errors import CheckpointTooLargeError
from app.domain.checkpoint.gojson_decode import Decoder, unmarshal
from app.domain.checkpoint.gojson_encode import marshal
from app.domain.checkpoint.gojson_scan import (
    GoNumber,
    GoSyntaxError,
    JObj,
    _Scanner,
    forget,
    parse,
)
from app.domain.checkpoint.gotext import go_text
from app.domain.checkpoint.gotypes import STRING_T, fold_name
from app.domain.checkpoint.memory import MEMORY_V1_T, decode_memory, new_memory_checkpoint


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "unexpected end of JSON input"),
        ("{", "unexpected end of JSON input"),
        ('{"a":1', "unexpected end of JSON input"),
        ('{"a" 1}', "invalid character '1' after object key"),
        ('{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
        ("[1 2]", "invalid character '2' after array element"),
        ("{1:2}", "invalid character '1' looking for beginning of object key string"),
        ("x", "invalid character 'x' looking for beginning of value"),
        ("1.", "invalid character ' ' after decimal point in numeric literal"),
        ("1.x", "invalid character 'x' after decimal point in numeric literal"),
        ("-", "invalid character ' ' in numeric literal"),
        ("1e+", "invalid character ' ' in exponent of numeric literal"),
        ("tru", "invalid character ' ' in literal true (expecting 'e')"),
        ("nulL", "invalid character 'L' in literal null (expecting 'l')"),
        ('"a\nb"', "invalid character '\\n' in string literal"),
        ('"\\q"', "invalid character 'q' in string escape code"),
        ('"\\u12x4"', "invalid character 'x' in \\u hexadecimal character escape"),
        ('{"a":1}}', "invalid character '}' after top-level value"),
        ("01", "invalid character '1' after top-level value"),
        ('{"a":NaN}', "invalid character 'N' looking for beginning of value"),
        ("'a'", "invalid character '\\'' looking for beginning of value"),
        ("[" * 10001, "invalid character '[' exceeded max depth"),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_syntax_errors_use_go_messages(text: str, message: str) -> None:
    with pytest.raises(GoSyntaxError) as exc:
        parse(text)
    assert str(exc.value) == message


def test_nesting_up_to_go_limit_is_accepted_without_recursion() -> None:
    deep = "[" * 5000 + "]" * 5000
    value = parse(deep)
    depth = 0
    while value:
        value = value[0]
        depth += 1
    assert depth == 4999


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'"\xe2\x82A"', "\ufffd\ufffdA"),  # truncated sequence: one U+FFFD per byte
        (b'"\xed\xa0\x80"', "\ufffd\ufffd\ufffd"),  # UTF-8 encoded surrogate
        (b'"\xff"', "\ufffd"),
        (b'"\\ud800x"', "\ufffdx"),  # lone surrogate escape
        (b'"\\udc00\\ud83d\\ude00"', "\ufffd😀"),
        (b'"\\u00e9\\/\\b"', "é/\b"),
    ],
    ids=["truncated", "cesu", "ff", "lone-high", "low-then-pair", "escapes"],
)
def test_strings_are_unquoted_like_go(raw: bytes, expected: str) -> None:
    assert parse(go_text(raw)) == expected


def test_numbers_keep_their_literal_and_objects_keep_duplicates() -> None:
    tree = parse('{"a": 1.0, "a": 1e3, "b": [-0]}')
    assert type(tree) is JObj
    assert tree == [("a", "1.0"), ("a", "1e3"), ("b", ["-0"])]
    assert all(type(v) is GoNumber for _, v in tree[:2])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_fast_and_slow_parsers_agree(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=1)
    assert parse(text) == _Scanner(text).parse()


def test_too_large_input_is_refused() -> None:
    with pytest.raises(CheckpointTooLargeError, match="16 MiB"):
        go_text(b" " * (16 * 1024 * 1024 + 1))


def test_keys_match_exactly_first_then_case_insensitively() -> None:
    tree = parse('{"defaultCPUSet":"1","DEFAULTCPUSET":"2","defaultCpuSet":"3","policyname":"p"}')
    obj = new_cpu_checkpoint("V1")
    assert unmarshal(tree, CPU_V1_T, obj) is None
    assert obj["DefaultCPUSet"] == "3"  # repeated keys: the last one wins
    assert obj["PolicyName"] == "p"


def test_kelvin_and_long_s_fold_onto_ascii_letters() -> None:
    assert fold_name("chec\u212asum") == fold_name("checksum")
    assert fold_name("\u017ftatic") == "STATIC"
    obj = new_cpu_checkpoint("V1")
    unmarshal(parse('{"chec\u212asum": 7}'), CPU_V1_T, obj)
    assert obj["Checksum"] == 7


def test_unknown_keys_are_ignored_and_missing_keys_keep_constructor_values() -> None:
    obj, err = decode_cpu(parse('{"unknown": {"deep": [1, 2]}, "policyName": "none"}'), "V3")
    assert err is None
    assert obj == {
        "PolicyName": "none",
        "DefaultCPUSet": "",
        "Entries": {},
        "PodEntries": {},
        "Checksum": 0,
    }


def test_null_sets_maps_nil_and_leaves_scalars() -> None:
    obj, err = decode_memory(
        parse('{"policyName": null, "machineState": null, "entries": null, "checksum": null}'),
        "V1",
    )
    assert err is None
    assert obj == {"PolicyName": "", "MachineState": None, "Entries": None, "Checksum": 0}


def test_repeated_map_keys_merge_contents() -> None:
    tree = parse(
        '{"entries": {"a": {"x": "1"}}, "entries": {"b": {}}, "entries": {"a": {"y": "2"}}}'
    )
    obj, err = decode_cpu(tree, "V2")
    assert err is None
    assert obj["Entries"] == {"a": {"y": "2"}, "b": {}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"entries": {"pod": {"c": "1"}}}',
            "json: cannot unmarshal object into Go struct field CPUManagerCheckpointV1.entries "
            "of type string",
        ),
        (
            '{"checksum": 1.0}',
            "json: cannot unmarshal number 1.0 into Go struct field CPUManagerCheckpointV1.checksum "
            "of type checksum.Checksum",
        ),
        (
            '{"checksum": -1}',
            "json: cannot unmarshal number -1 into Go struct field CPUManagerCheckpointV1.checksum "
            "of type checksum.Checksum",
        ),
        (
            '{"policyName": 5}',
            "json: cannot unmarshal number into Go struct field CPUManagerCheckpointV1.policyName "
            "of type string",
        ),
        ("[]", "json: cannot unmarshal array into Go value of type state.CPUManagerCheckpointV1"),
    ],
    ids=["object-into-string", "float-into-uint", "negative-uint", "number-into-string", "top"],
)
def test_type_errors_have_go_texts(text: str, message: str) -> None:
    _, err = decode_cpu(parse(text), "V1")
    assert err is not None and str(err) == message


def test_type_errors_keep_decoding_and_report_the_first() -> None:
    obj, err = decode_cpu(parse('{"checksum": "x", "policyName": 1, "defaultCpuSet": "0-3"}'), "V1")
    assert "of type checksum.Checksum" in str(err)
    assert obj["DefaultCPUSet"] == "0-3"  # later keys were still decoded


def test_nested_type_error_names_the_field_path() -> None:
    text = '{"machineState": {"0": {"memoryMap": {"memory": {"total": "big"}}}}}'
    _, err = decode_memory(parse(text), "V1")
    assert str(err) == (
        "json: cannot unmarshal string into Go struct field "
        "MemoryTable.machineState.memoryMap.total of type uint64"
    )


def test_int_map_keys_are_parsed_and_bad_ones_reported() -> None:
    obj, err = decode_memory(parse('{"machineState": {"01": null, "x": null}}'), "V1")
    assert obj["MachineState"] == {1: None}
    assert "cannot unmarshal number x into" in str(err)


def test_pod_entry_errors_stop_the_decoder_and_keep_partial_maps() -> None:
    text = '{"podEntries": {"a": {"cpuSet": "1-2"}, "b": {"cpuSet": "x"}}, "checksum": 5}'
    obj, err = decode_cpu(parse(text), "V3")
    assert str(err) == 'failed to parse cpuset: strconv.Atoi: parsing "x": invalid syntax'
    assert set(obj["PodEntries"]) == {"a"}  # decoded before the failing element
    assert obj["Checksum"] == 0  # decoding stopped: later keys were not read


def test_pod_entry_null_is_an_empty_cpuset() -> None:
    obj, err = decode_cpu(parse('{"podEntries": {"a": null, "b": {}}}'), "V3")
    assert err is None
    assert str(obj["PodEntries"]["a"]["CPUSet"]) == ""
    assert obj["PodEntries"]["b"]["CPUSet"] is not None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '"1-2"',
            "json: cannot unmarshal string into Go struct field CPUManagerCheckpointV3.podEntries "
            "of type state.podEntryJSON",
        ),
        (
            '{"cpuSet": 5}',
            "json: cannot unmarshal number into Go struct field "
            "CPUManagerCheckpointV3.podEntries.cpuSet of type string",
        ),
    ],
    ids=["string", "number-cpuset"],
)
def test_pod_entry_type_errors_get_the_outer_context(entry: str, message: str) -> None:
    # The error UnmarshalJSON returns goes through the outer decoder's addErrorContext.
    _, err = decode_cpu(parse('{"podEntries": {"a": ' + entry + "}}"), "V3")
    assert str(err) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", '"plain"'),
        ("<a>&b", '"\\u003ca\\u003e\\u0026b"'),
        ("line\u2028sep\u2029", '"line\\u2028sep\\u2029"'),
        ('q"b\\s', '"q\\"b\\\\s"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x01\x1f\x7f", '"\\u0001\\u001f\x7f"'),
        ("naïve 容器 😀", '"naïve 容器 😀"'),
    ],
    ids=["plain", "html", "line-separators", "quote-backslash", "short", "controls", "utf8"],
)
def test_strings_are_encoded_like_go(value: str, expected: str) -> None:
    assert marshal(value, STRING_T) == expected


def test_encoding_sorts_map_keys_by_text_and_keeps_struct_order() -> None:
    value = {
        "PolicyName": "none",
        "MachineState": {10: None, 2: None, 1: None},
        "Entries": {},
        "Checksum": 3,
    }
    assert marshal(value, MEMORY_V1_T) == (
        '{"policyName":"none","machineState":{"1":null,"10":null,"2":null},"checksum":3}'
    )


def test_marshal_then_parse_then_unmarshal_round_trips_v3() -> None:
    obj, err = decode_cpu(
        parse('{"policyName":"static","podEntries":{"p":{"cpuSet":"7,8,9"}},"checksum":1}'), "V3"
    )
    assert err is None
    text = marshal(obj, CPU_V3_T)
    assert (
        text
        == '{"policyName":"static","defaultCpuSet":"","podEntries":{"p":{"cpuSet":"7-9"}},"checksum":1}'
    )


_BLOCK_KEYS = st.sampled_from(
    ["numaAffinity", "NUMAAFFINITY", "type", "Type", "size", "SIZE", "unknown"]
)
_BLOCK_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(["memory", "", "hugepages-2Mi"]),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.sampled_from([0, -1, 10**18 - 1, 10**18, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**19]),
    st.sampled_from([1.5, 1e3, -0.0]),
    st.lists(st.one_of(st.integers(min_value=-3, max_value=2**64), st.text(max_size=2))),
    st.just({}),
)


@settings(max_examples=300, deadline=None)
@example([[("size", 2**64), ("type", "memory")], [("SIZE", "1"), ("numaAffinity", [0, 1])]])
@example([[("size", 2**64 - 1), ("Type", 5), ("size", -1)], [("type", None), ("size", 1.5)]])
@given(st.lists(st.lists(st.tuples(_BLOCK_KEYS, _BLOCK_VALUES), max_size=6), max_size=3))
def test_block_fast_path_decodes_like_the_tracked_decoder(
    blocks: list[list[tuple[str, object]]],
) -> None:
    """The memory block's untracked fast path (plain strings and short digit runs written
    straight into the field) gives the value and error presence the tracked decoder gives."""
    objects = [
        "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in b) + "}" for b in blocks
    ]
    text = '{"entries": {"pod": {"c": [' + ",".join(objects) + "]}}}"
    tree = parse(text)
    values = []
    for track in (False, True):
        obj = new_memory_checkpoint("V1")
        d = Decoder(track=track)
        d.decode(tree, MEMORY_V1_T, obj)
        values.append((obj, d.saved is None))
    assert values[0] == values[1]


@pytest.mark.parametrize(
    ("number", "value", "error"),
    [
        ("0", 0, None),
        ("268435456", 268435456, None),
        ("999999999999999999", 999999999999999999, None),
        ("9223372036854775807", 9223372036854775807, None),
        ("9223372036854775808", None, "number 9223372036854775808 into Go struct field"),
        ("1.0", None, "number 1.0 into Go struct field"),
        ("-1", -1, None),
    ],
)
def test_a_number_seen_again_decodes_as_the_first_time(
    number: str, value: int | None, error: str | None
) -> None:
    """Numbers repeat by the thousand in a state file (their values are remembered): each
    occurrence, in an int field, a slice of ints or a block, decodes like the first, read cold
    (``forget``) or not."""
    node = f'{{"numberOfAssignments": {number}, "cells": [{number}, {number}]}}'
    text = f'{{"machineState": {{"0": {node}, "1": {node}}}}}'
    for _ in range(2):
        obj, err = decode_memory(parse(text), "V1")
        if error is None:
            assert err is None
            for state in obj["MachineState"].values():
                assert state["NumberOfAssignments"] == value
                assert state["Cells"] == [value, value]
        else:
            assert err is not None and error in str(err)
        forget()
