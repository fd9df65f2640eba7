"""``store.indented_json``: the text of ``json.dumps(value, indent=2)`` (what ``pods.json``'s
entries were made with), for any plain JSON value, at any indentation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.services.nodes.store import indented_json

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from('"\\\n\u2028<&\x00'))
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_equals_the_standard_encoder(value: Any) -> None:
    assert indented_json(value) == json.dumps(value, indent=2)


@settings(max_examples=100, deadline=None)
@given(_values)
def test_a_nested_value_is_indented_as_the_document_around_it(value: Any) -> None:
    lines = json.dumps(value, indent=2).splitlines()
    assert "    " + indented_json(value, "\n    ") == "\n".join("    " + line for line in lines)


@pytest.mark.parametrize("value", [{1: "a"}, {"a": {None: 1}}, [object()], {"a": {1, 2}}])
def test_what_is_not_plain_json_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        indented_json(value)
