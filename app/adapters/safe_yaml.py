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

Streams are parsed and composed by libyaml when PyYAML has it and libyaml bounds nesting
itself (``CParser``; the counts above are then made on each composed document, aliases being
shared nodes, before anything is constructed; with an older libyaml its events are composed in
Python); constructing stays the Python one, so the values are the same. When libyaml refuses a
stream it is parsed again in Python, whose error is the one reported (the messages differ
between the two).

``loads_json`` scans the text first (``check_json_text``) and refuses long integers while
decoding. Both raise ``InputLimitError``; YAML syntax errors stay ``yaml.YAMLError``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import Node, ScalarNode
from yaml.resolver import Resolver

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


class _LimitBase:
    """What both limited loaders share: the field named in errors, the limits, the running
    count of expanded nodes and the integer check."""

    field = "document"
    max_depth = MAX_DEPTH
    max_nodes = MAX_NODES
    _total: int

    def _count(self, size: int) -> None:
        self._total += size
        if self._total > self.max_nodes:
            raise nodes_error(self.field, self.max_nodes)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        check_digits(self.field, str(node.value), MAX_DIGITS)
        value: int = super().construct_yaml_int(node)  # type: ignore[misc]
        return value


class _Limits(_LimitBase):
    """The counting composer of the Python loader (see the module doc)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)  # type: ignore[call-arg]
        self._reset_counts()

    def _reset_counts(self) -> None:
        self._depth = 0
        # The expanded size of each anchored node (what an alias to it counts).
        self._sizes: dict[int, int] = {}
        # Nodes counted so far in the stream, expanded: a node adds 1 once composed, an alias
        # the size of the node it refers to; a node's size is what its composing added.
        self._total = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(AliasEvent):  # type: ignore[attr-defined]
            node = super().compose_node(parent, index)  # type: ignore[misc]
            size = self._sizes.get(id(node))
            if size is None:
                raise InputLimitError(self.field, "a YAML alias refers to itself")
            self._count(size)
            return node
        self._depth += 1
        if self._depth > self.max_depth:
            raise depth_error(self.field, self.max_depth)
        anchor = self.peek_event().anchor  # type: ignore[attr-defined]
        before = self._total
        try:
            node = super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1
        self._count(1)
        if anchor is not None:
            self._sizes[id(node)] = self._total - before
        return node

    def compose_document(self) -> Node | None:
        node: Node | None = super().compose_document()  # type: ignore[misc]
        self._sizes.clear()  # ids may be reused by the next document's nodes
        return node


class SafeLimitedLoader(_Limits, yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents beyond the limits (see the module doc)."""


SafeLimitedLoader.add_constructor(_INT_TAG, SafeLimitedLoader.construct_yaml_int)  # type: ignore[type-var]


def _libyaml_bounds_nesting(parser: Any) -> bool:
    """Whether libyaml refuses deep nesting itself (the one bundled with PyYAML 6 stops at
    1,000 levels): only then may its recursive C composer build the nodes."""
    deep = "[" * 10_000 + "]" * 10_000
    try:
        parser(deep).get_single_node()
    except yaml.YAMLError as err:
        return "nesting depth" in str(err)
    except Exception:
        return False
    return False


class _GraphLimits(_LimitBase):
    """The limits checked on a document libyaml composed (aliases are shared nodes): the same
    counts as ``_Limits``, met in the same order: a node met for the first time is where it was
    written, met again it is an alias, met while still being walked an alias to itself."""

    _sizes: dict[int, int]

    def get_node(self) -> Node | None:
        return self._checked(super().get_node())  # type: ignore[misc]

    def get_single_node(self) -> Node | None:
        return self._checked(super().get_single_node())  # type: ignore[misc]

    def _checked(self, node: Node | None) -> Node | None:
        if node is not None:
            self._sizes = {}
            self._walk(node, 1)
            self._sizes.clear()  # ids may be reused by the next document's nodes
        return node

    def _walk(self, node: Node, depth: int) -> None:
        """Count ``node``, written at nesting ``depth``, as ``_Limits`` counts it composing."""
        if depth > self.max_depth:
            raise depth_error(self.field, self.max_depth)
        sizes = self._sizes
        before = self._total
        value = node.value
        if type(value) is list:  # a sequence, or a mapping's (key, value) pairs
            sizes[id(node)] = -1  # being walked
            for item in value:
                for child in item if type(item) is tuple else (item,):
                    known = sizes.get(id(child))
                    if known is None:
                        self._walk(child, depth + 1)
                    elif known < 0:
                        raise InputLimitError(self.field, "a YAML alias refers to itself")
                    else:
                        self._count(known)
        self._count(1)
        sizes[id(node)] = self._total - before


_FastLimitedLoader: Any = None
try:
    from yaml.cyaml import CParser  # type: ignore[attr-defined]
except ImportError:  # PyYAML built without libyaml: the Python parser only
    pass
else:
    if _libyaml_bounds_nesting(CParser):

        class _FastLimitedLoader(_GraphLimits, CParser, SafeConstructor, Resolver):  # type: ignore[no-redef]
            """The limited loader on libyaml's parser and composer (``_GraphLimits``)."""

            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)
                self._total = 0

    else:  # an older libyaml: its events only, composed (and counted) in Python

        class _FastLimitedLoader(_Limits, Composer, CParser, SafeConstructor, Resolver):  # type: ignore[no-redef]
            """``SafeLimitedLoader`` on libyaml's parser (``Composer`` before it: the Python
            composer, not libyaml's, builds the nodes)."""

            def __init__(self, stream: str) -> None:
                CParser.__init__(self, stream)
                SafeConstructor.__init__(self)
                Resolver.__init__(self)
                Composer.__init__(self)
                self._reset_counts()

    _FastLimitedLoader.add_constructor(_INT_TAG, _FastLimitedLoader.construct_yaml_int)


def _load(text: str, field: str, read: Any) -> Any:
    """``read(loader)`` with the libyaml loader, or with the Python one when libyaml refuses
    the text (its error is the one reported)."""
    if _FastLimitedLoader is not None:
        fast = None
        try:
            fast = _FastLimitedLoader(text)
            fast.field = field
            return read(fast)
        except yaml.YAMLError:
            pass
        finally:
            if fast is not None:
                fast.dispose()
    loader = SafeLimitedLoader(text)
    loader.field = field
    try:
        return read(loader)
    finally:
        loader.dispose()


def load_yaml(text: str, field: str = "document") -> Any:
    """One YAML document (``None`` for empty text), within the limits."""
    return _load(text, field, lambda loader: loader.get_single_data())


def load_yaml_all(text: str, field: str = "document") -> list[Any]:
    """Every document of a YAML stream, within the limits (the node count spans them all)."""

    def read(loader: Any) -> list[Any]:
        docs: list[Any] = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs

    return _load(text, field, read)


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
