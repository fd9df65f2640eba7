"""YAML and JSON decoding with the limits of ``app.domain.limits``.

PyYAML's ``safe_load`` is safe against code execution, not against size: a 567-byte document
of nested aliases (``a: &a [x, x, …]``, ``b: &b [*a, *a, …]``…) composes into a handful of
nodes but expands to a million values once the callers walk it, and a thousand nested ``[``
end in ``RecursionError`` inside the composer. ``SafeLimitedLoader`` counts while composing,
before anything is constructed:

* the *expanded* size of every node (an alias counts the whole subtree it points to, each
  time it is used), refused above ``MAX_NODES``;
* the nesting depth, refused above ``MAX_DEPTH``;
* integers longer than ``MAX_DIGITS`` characters (``int()`` would raise a ``ValueError`` past
  4,300 digits, and sexagesimal ``1:2:3…`` would build huge numbers).

``loads_json`` scans the text first (``check_json_text``) and refuses long integers while
decoding. Both raise ``InputLimitError``; YAML syntax errors stay ``yaml.YAMLError``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from app.domain.limits import (
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_NODES,
    InputLimitError,
    check_digits,
    check_json_text,
    depth_error,
    nodes_error,
)

_INT_TAG = "tag:yaml.org,2002:int"


class SafeLimitedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents beyond the limits (see the module doc)."""

    field = "document"
    max_depth = MAX_DEPTH
    max_nodes = MAX_NODES

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}
        self._total = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:
                raise InputLimitError(self.field, "a YAML alias refers to itself")
            return node
        self._depth += 1
        if self._depth > self.max_depth:
            raise depth_error(self.field, self.max_depth)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        # The expanded size: an alias child counts its whole subtree each time it is used.
        size = 1
        if isinstance(node, SequenceNode):
            size += sum(self._sizes.get(id(c), 1) for c in node.value)
        elif isinstance(node, MappingNode):
            size += sum(
                self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value
            )
        if size > self.max_nodes:
            raise nodes_error(self.field, self.max_nodes)
        self._sizes[id(node)] = size
        return node

    def compose_document(self) -> Node | None:
        node = super().compose_document()
        if node is not None:
            self._total += self._sizes.get(id(node), 1)
            if self._total > self.max_nodes:
                raise nodes_error(self.field, self.max_nodes)
        self._sizes.clear()  # ids may be reused by the next document's nodes
        return node

    def construct_yaml_int(self, node: ScalarNode) -> int:
        check_digits(self.field, str(node.value), MAX_DIGITS)
        value: int = super().construct_yaml_int(node)
        return value


SafeLimitedLoader.add_constructor(_INT_TAG, SafeLimitedLoader.construct_yaml_int)


def _loader(field: str) -> type[SafeLimitedLoader]:
    return type("SafeLimitedLoaderFor", (SafeLimitedLoader,), {"field": field})


def load_yaml(text: str, field: str = "document") -> Any:
    """One YAML document (``None`` for empty text), within the limits."""
    loader = _loader(field)(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml_all(text: str, field: str = "document") -> list[Any]:
    """Every document of a YAML stream, within the limits (the node count spans them all)."""
    loader = _loader(field)(text)
    docs: list[Any] = []
    try:
        while loader.check_data():
            docs.append(loader.get_data())
    finally:
        loader.dispose()
    return docs


def _parse_int(field: str) -> Any:
    def parse(text: str) -> int:
        check_digits(field, text)
        return int(text)

    return parse


def loads_json(text: str, field: str = "document") -> Any:
    """``json.loads`` within the limits (depth, container count, digits)."""
    check_json_text(field, text)
    return json.loads(text, parse_int=_parse_int(field))


__all__ = ["InputLimitError", "SafeLimitedLoader", "load_yaml", "load_yaml_all", "loads_json"]
