"""Limits on untrusted input: how big, how deep, how many items, how many digits.

Every text Numascope decodes from a request, an upload, a manifest file or a kubelet
configuration goes through these limits *before* the decoder could explode: Python's
``json`` and PyYAML recurse once per nesting level (about 1,000 levels end in
``RecursionError``), ``int()`` refuses strings over 4,300 digits with a ``ValueError``, and a
YAML alias bomb of a few hundred bytes expands to millions of nodes. The numbers below are far
above anything a real Pod, KubeletConfiguration or state file needs (a Pod manifest nests
about 10 levels; a 512-CPU state file has a few thousand entries) and small enough that the
worst accepted input stays cheap.

``InputLimitError`` carries ``field`` (what was too big), ``detail``, ``message``
(``"<field>: <detail>"``) and ``too_large``
(``True``: the input is too large as a whole, HTTP 413; otherwise 422).

This module is pure standard library; the adapters (YAML, JSON) and the web guard use it.
"""

from __future__ import annotations

import re

#: Request bodies of the JSON/YAML API (manifests, node definitions).
MAX_BODY_BYTES = 1024 * 1024
#: Nesting levels of a JSON or YAML document (mappings and sequences).
MAX_DEPTH = 64
#: Nodes of a YAML or JSON document once every alias is expanded.
MAX_NODES = 200_000
#: Digits of one number (a CPU id, a count, a checksum: uint64 has 20 digits).
MAX_DIGITS = 100
#: Pods in one admission request (a ``List``, several documents).
MAX_PODS = 5_000
#: Containers (init, regular, sidecar) in one pod.
MAX_CONTAINERS = 500


class InputLimitError(ValueError):
    """An input exceeds one of the limits above."""

    def __init__(self, field: str, detail: str, *, too_large: bool = False) -> None:
        message = f"{field}: {detail}"
        super().__init__(message)
        self.field = field
        self.detail = detail
        self.message = message
        self.too_large = too_large


def check_size(field: str, size: int, limit: int = MAX_BODY_BYTES) -> None:
    """Refuse ``size`` bytes above ``limit`` (413)."""
    if size > limit:
        raise InputLimitError(
            field,
            f"{size} bytes is larger than the limit of {limit} bytes",
            too_large=True,
        )


def check_digits(field: str, text: str, limit: int = MAX_DIGITS) -> None:
    """Refuse a number written with more than ``limit`` characters (before ``int()``)."""
    if len(text) > limit:
        raise InputLimitError(
            field, f"a number of {len(text)} digits is longer than {limit} digits"
        )


def depth_error(field: str, limit: int = MAX_DEPTH) -> InputLimitError:
    return InputLimitError(field, f"nested deeper than {limit} levels")


def nodes_error(field: str, limit: int = MAX_NODES) -> InputLimitError:
    return InputLimitError(
        field,
        f"more than {limit} values once YAML aliases are expanded (an alias bomb?)",
    )


# -- JSON text, scanned without decoding -----------------------------------------------------------

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_LONG_NUMBER = re.compile(rf"[0-9]{{{MAX_DIGITS + 1},}}")


def check_json_text(
    field: str,
    text: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
) -> None:
    """Check JSON text's nesting depth, number of containers and number lengths without
    decoding it (strings are skipped, so brackets and digits inside strings do not count).
    Malformed text passes: the decoder reports it in its own words."""
    bare = _STRING.sub('""', text)
    if _LONG_NUMBER.search(bare):
        longest = max(len(m.group()) for m in _LONG_NUMBER.finditer(bare))
        raise InputLimitError(
            field, f"a number of {longest} digits is longer than {MAX_DIGITS} digits"
        )
    depth = 0
    opened = 0
    for m in _BRACKETS.finditer(bare):
        if m.group() in "[{":
            depth += 1
            opened += 1
            if depth > max_depth:
                raise depth_error(field, max_depth)
        else:
            depth -= 1
    if opened > max_nodes:
        raise InputLimitError(field, f"more than {max_nodes} objects and arrays")


def check_tree(field: str, value: object, *, max_depth: int = MAX_DEPTH) -> None:
    """Check an already decoded tree (dicts, lists) iteratively: depth and size."""
    stack: list[tuple[object, int]] = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list | tuple):
            children = list(item)
        else:
            continue
        if depth > max_depth:
            raise depth_error(field, max_depth)
        seen += len(children)
        if seen > MAX_NODES:
            raise nodes_error(field)
        stack.extend((c, depth + 1) for c in children)
