"""web/rendering.py: filters, fragment choice and the Vary header."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import HTMLResponse

from app.web.rendering import _add_vary, format_bytes, percent, wants_fragment


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(0, "0 B", id="zero"),
        pytest.param(512, "512 B", id="bytes"),
        pytest.param(1024, "1 KiB", id="kib"),
        pytest.param(1536 * 1024**2, "1.5 GiB", id="fraction"),
        pytest.param(64 * 1024**3, "64 GiB", id="gib"),
        pytest.param(3 * 1024**4 // 2, "1.5 TiB", id="tib"),
        pytest.param(None, "–", id="none"),
    ],
)
def test_format_bytes(value: int | None, text: str) -> None:
    assert format_bytes(value) == text


@given(st.integers(min_value=0, max_value=2**60))
@settings(max_examples=60)
def test_format_bytes_never_fails_and_uses_binary_units(n: int) -> None:
    number, unit = format_bytes(n).split(" ")
    assert unit in {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
    assert 0 <= float(number) < 1024 or unit == "PiB"


@pytest.mark.parametrize(
    ("part", "whole", "pct"),
    [(0, 0, 0.0), (1, 4, 25.0), (1, 3, 33.3), (5, 5, 100.0)],
    ids=["empty", "quarter", "third", "all"],
)
def test_percent(part: int, whole: int, pct: float) -> None:
    assert percent(part, whole) == pct


def _request(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": raw})


@pytest.mark.parametrize(
    ("headers", "fragment"),
    [
        pytest.param({}, False, id="plain"),
        pytest.param({"HX-Request": "true"}, True, id="htmx"),
        pytest.param(
            {"HX-Request": "true", "HX-History-Restore-Request": "true"}, False, id="restore"
        ),
        pytest.param({"HX-Request": "true", "HX-Boosted": "true"}, False, id="boosted"),
        pytest.param({"HX-Request": "1"}, False, id="not-true"),
    ],
)
def test_wants_fragment(headers: dict[str, str], fragment: bool) -> None:
    assert wants_fragment(_request(headers)) is fragment


@pytest.mark.parametrize(
    ("existing", "result"),
    [
        pytest.param(None, "HX-Request", id="none"),
        pytest.param("Accept-Encoding", "Accept-Encoding, HX-Request", id="append"),
        pytest.param("hx-request", "hx-request", id="already"),
    ],
)
def test_add_vary(existing: str | None, result: str) -> None:
    response = HTMLResponse("x")
    if existing is not None:
        response.headers["Vary"] = existing
    _add_vary(response, "HX-Request")
    assert response.headers["vary"] == result


def test_format_bytes_never_shows_1024_of_a_unit() -> None:
    # Found by the property test above: one decimal rounded 1023.96 TiB up to "1024.0 TiB".
    assert format_bytes(1125844931261236) == "1.0 PiB"
    assert format_bytes(1024**4 * 1023 + 1024**3 * 900) == "1023.9 TiB"
    assert format_bytes(1024**3 * 1023 + 1024**2 * 1000) == "1.0 TiB"
