"""Go's strconv as the kubelet's texts use it: Quote, ParseBool, Atoi (table tests)."""

from __future__ import annotations

import pytest

from app.domain.golang.strconv import go_atoi, go_quote, parse_go_bool


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        pytest.param("abc", '"abc"', id="plain"),
        pytest.param("", '""', id="empty"),
        pytest.param("1.3", '"1.3"', id="digits"),
        pytest.param('a"b', '"a\\"b"', id="quote"),
        pytest.param("a\\b", '"a\\\\b"', id="backslash"),
        pytest.param("a\nb", '"a\\nb"', id="newline"),
        pytest.param("\a", '"\\a"', id="bell"),
        pytest.param("\b", '"\\b"', id="backspace"),
        pytest.param("\f", '"\\f"', id="form-feed"),
        pytest.param("\v", '"\\v"', id="vertical-tab"),
        pytest.param("\t\r", '"\\t\\r"', id="tab-return"),
        pytest.param("\x00", '"\\x00"', id="nul"),
        pytest.param("\x01\x1f", '"\\x01\\x1f"', id="controls"),
        pytest.param("\x7f", '"\\x7f"', id="del"),
        pytest.param("\x80", '"\\u0080"', id="c1-control"),
        pytest.param("é", '"é"', id="latin"),
        pytest.param("\u00a0", '"\\u00a0"', id="nbsp-is-not-print"),
        pytest.param("\u200b", '"\\u200b"', id="zero-width-space"),
        pytest.param("\ufffd", '"\ufffd"', id="replacement-char-prints"),
        pytest.param("\ud800", '"\\ufffd"', id="lone-surrogate"),
        pytest.param("\U0001f600", '"\U0001f600"', id="emoji-prints"),
        pytest.param("\U000e0001", '"\\U000e0001"', id="astral-format-char"),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("text", "value"),
    [(t, True) for t in ("1", "t", "T", "TRUE", "true", "True")]
    + [(t, False) for t in ("0", "f", "F", "FALSE", "false", "False")],
    ids=repr,
)
def test_parse_go_bool_accepts_go_spellings(text: str, value: bool) -> None:
    assert parse_go_bool(text) is value


@pytest.mark.parametrize("text", ["yes", "", "tRUE", " true", "2", "on", "\v"], ids=repr)
def test_parse_go_bool_rejects_others_with_go_text(text: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_go_bool(text)
    assert str(err.value) == f"strconv.ParseBool: parsing {go_quote(text)}: invalid syntax"


@pytest.mark.parametrize(
    ("text", "value"), [("8", 8), ("+8", 8), ("-3", -3), ("9223372036854775807", 2**63 - 1)]
)
def test_go_atoi_accepts(text: str, value: int) -> None:
    assert go_atoi(text) == value


@pytest.mark.parametrize("text", ["", " 8", "8.0", "0x8", "1_0", "٣"])
def test_go_atoi_rejects_with_go_text(text: str) -> None:
    with pytest.raises(ValueError) as err:
        go_atoi(text)
    assert str(err.value) == f"strconv.Atoi: parsing {go_quote(text)}: invalid syntax"


def test_go_atoi_out_of_range() -> None:
    with pytest.raises(ValueError) as err:
        go_atoi("9223372036854775808")
    assert str(err.value) == 'strconv.Atoi: parsing "9223372036854775808": value out of range'
