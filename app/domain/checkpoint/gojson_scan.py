"""Go ``encoding/json`` syntax: the generic tree and the scanner (follows Go's
encoding/json scanner.go and decode.go's ``checkValid`` and ``unquote``, as of Go 1.22-1.24).

``parse`` checks the syntax of the whole text and builds a generic tree. Objects become
``JObj`` (a list of ``(key, value)`` pairs, so repeated keys survive), numbers ``GoNumber``
(the literal text, so ``1.0`` stays distinguishable from ``1``), strings ``str`` (unquoted the
way Go does: lone surrogate escapes become U+FFFD). A syntax error is reported with Go's text
(``unexpected end of JSON input``, ``invalid character 'x' looking for beginning of value``...).

The fast path uses the C-accelerated ``json`` module; anything it refuses or could treat
differently from Go (NaN, lone surrogates, deep nesting) goes through a small iterative scanner
that mirrors Go's scanner and its messages. Nothing here recurses on the input's depth.
Decoding the tree into Go values is ``gojson_decode``.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from app.domain.checkpoint.errors import MAX_NESTING_DEPTH
from app.domain.golang.strconv import go_quote

# -- values of the generic tree ------------------------------------------------------------


class JObj(list):
    """A JSON object as the ordered list of its ``(key, value)`` pairs (duplicates kept)."""

    __slots__ = ()


class GoNumber(str):
    """A JSON number kept as its literal text."""

    __slots__ = ()


# -- kept trees ------------------------------------------------------------------------------
# One file is parsed by every check that reads it (detection, checksums, each reader, the
# consistency checks, the start-up model), and a fleet's nodes often have the same file (an
# empty node's, one workload's): ``parse`` keeps the trees of the last texts, and ``TreeMemo``s
# keep answers about those trees (decodes, detection, checksums, reads) for as long as the tree
# is kept. Memory stays bounded by the trees kept: many small texts, a few large ones.

#: Texts up to this length count as small (a state file of a few pods is 0.4-2 KB).
SMALL_TEXT = 8192
SMALL_KEPT = 512
LARGE_KEPT = 4

_lock = threading.RLock()
_small: OrderedDict[str, Any] = OrderedDict()
_large: OrderedDict[str, Any] = OrderedDict()
_held: dict[int, Any] = {}  # id -> tree, for every tree kept
_memos: list[TreeMemo] = []


def _keep(text: str, tree: Any) -> Any:
    """Keep ``tree`` as the text's tree; the one kept already if another thread was first."""
    kept, limit = (_small, SMALL_KEPT) if len(text) <= SMALL_TEXT else (_large, LARGE_KEPT)
    with _lock:
        first = kept.get(text)
        if first is not None:
            return first
        kept[text] = tree
        _held[id(tree)] = tree
        while len(kept) > limit:
            _, old = kept.popitem(last=False)
            _held.pop(id(old), None)
            for memo in _memos:
                memo.drop(old)
    return tree


def _kept_tree(text: str) -> Any | None:
    kept = _small if len(text) <= SMALL_TEXT else _large
    with _lock:
        tree = kept.get(text)
        if tree is not None:
            kept.move_to_end(text)
        return tree


def forget() -> None:
    """Drop every kept tree and answer (the benches time cold reads this way)."""
    with _lock:
        _small.clear()
        _large.clear()
        _held.clear()
        for memo in _memos:
            memo.clear()
    for clear in FORGET:
        clear()


#: Other caches of answers about texts, dropped by ``forget``.
FORGET: list[Callable[[], object]] = []


class TreeMemo:
    """Answers of a function of a kept parsed tree (shared by ``parse``) and a few hashable
    arguments, kept as long as the tree is; a tree ``parse`` does not keep gets no memo. The
    answers are shared between callers: they must not be changed."""

    def __init__(self) -> None:
        self._kept: dict[int, dict[tuple[Any, ...], Any]] = {}
        _memos.append(self)

    def clear(self) -> None:
        with _lock:
            self._kept.clear()

    def drop(self, tree: Any) -> None:
        with _lock:
            self._kept.pop(id(tree), None)

    def get(self, tree: Any, *args: Any) -> tuple[bool, Any]:
        """``(True, answer)`` when known, else ``(False, None)``."""
        with _lock:
            if _held.get(id(tree)) is not tree:
                return False, None
            answers = self._kept.get(id(tree))
            if answers is None or args not in answers:
                return False, None
            return True, answers[args]

    def put(self, tree: Any, answer: Any, *args: Any) -> Any:
        with _lock:
            if _held.get(id(tree)) is tree:
                self._kept.setdefault(id(tree), {})[args] = answer
        return answer


# -- errors ----------------------------------------------------------------------------------


class GoJSONError(Exception):
    """An error ``json.Unmarshal`` returns; ``str(err)`` is Go's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class GoSyntaxError(GoJSONError):
    """``*json.SyntaxError``."""


def _quote_char(ch: str) -> str:
    """encoding/json's ``quoteChar`` of the byte Go's scanner stopped at."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    if ch >= "\x80":
        # Go looks at the first byte of the UTF-8 sequence and shows it as a Latin-1 rune.
        ch = chr(ch.encode("utf-8", "surrogatepass")[0])
    return "'" + go_quote(ch)[1:-1] + "'"


# -- parsing -------------------------------------------------------------------------------------

_EOF = "unexpected end of JSON input"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def parse(text: str) -> Any:
    """Check the syntax like Go's ``checkValid`` and return the generic tree (shared: the
    same text gives the same kept tree, which no one may change).

    Raises ``GoSyntaxError`` with Go's message (each time: errors are not kept).
    """
    tree = _kept_tree(text)
    if tree is None:
        tree = _parse(text)
        if type(tree) is JObj or type(tree) is list:  # a scalar has nothing to share
            tree = _keep(text, tree)
    return tree


#: A number's ``GoNumber`` for the fast path: one object per text, as a state file repeats a
#: few sizes and NUMA ids by the thousand (a cache hit costs less than building the string).
_number = functools.lru_cache(maxsize=4096)(GoNumber)
FORGET.append(_number.cache_clear)


def _parse(text: str) -> Any:
    if not _SURROGATE_ESCAPE.search(text):
        try:
            return json.loads(
                text,
                object_pairs_hook=JObj,
                parse_float=_number,
                parse_int=_number,
                parse_constant=_reject_constant,
            )
        except (ValueError, RecursionError):
            pass
    return _Scanner(text).parse()


_WS = frozenset(" \t\n\r")
_SIMPLE_STRING = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}

_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}

# scanner states
_VALUE, _KEY_OR_END, _KEY, _COLON, _OBJ_NEXT, _ARR_FIRST, _ARR_NEXT, _END = range(8)


class _Scanner:
    """An iterative JSON parser with Go's error messages (encoding/json scanner.go)."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.n = len(text)

    def error(self, i: int, context: str) -> GoSyntaxError:
        # At the end of the input Go's scanner is fed one ' ' (scanner.eof), so a literal,
        # number or escape cut short reports "invalid character ' ' <context>".
        ch = self.s[i] if i < self.n else " "
        return GoSyntaxError(f"invalid character {_quote_char(ch)} {context}")

    def parse(self) -> Any:
        s, n = self.s, self.n
        self.stack: list[Any] = []  # JObj / list under construction
        self.keys: list[str] = []  # pending keys of the open objects
        self.result: Any = None
        steps = self._steps()
        state = _VALUE
        i = 0
        while True:
            while i < n and s[i] in _WS:
                i += 1
            if state == _END:
                if i < n:
                    raise self.error(i, "after top-level value")
                return self.result
            if i >= n:
                raise GoSyntaxError(_EOF)
            state, i = steps[state](i, s[i])

    def _steps(self) -> tuple[Any, ...]:
        """What each state does with the next non-space character: (next state, position)."""
        return (
            self._value,  # _VALUE
            self._key_or_end,  # _KEY_OR_END
            self._key,  # _KEY
            self._colon,  # _COLON
            self._after("}", _KEY, "after object key:value pair"),  # _OBJ_NEXT
            self._first_element,  # _ARR_FIRST
            self._after("]", _VALUE, "after array element"),  # _ARR_NEXT
        )

    def _value(self, i: int, c: str) -> tuple[int, int]:
        if c == "{" or c == "[":
            if len(self.stack) + 1 > MAX_NESTING_DEPTH:
                raise self.error(i, "exceeded max depth")
            self.stack.append(JObj() if c == "{" else [])
            return (_KEY_OR_END if c == "{" else _ARR_FIRST), i + 1
        if c == '"':
            value, i = self._string(i)
        elif c == "-" or "0" <= c <= "9":
            value, i = self._number(i)
        elif c in _LITERALS:
            value, i = self._literal(i, *_LITERALS[c])
        else:
            raise self.error(i, "looking for beginning of value")
        return self._finish(value), i

    def _key_or_end(self, i: int, c: str) -> tuple[int, int]:
        return self._close(i) if c == "}" else self._key(i, c)

    def _key(self, i: int, c: str) -> tuple[int, int]:
        if c != '"':
            raise self.error(i, "looking for beginning of object key string")
        key, i = self._string(i)
        self.keys.append(key)
        return _COLON, i

    def _colon(self, i: int, c: str) -> tuple[int, int]:
        if c != ":":
            raise self.error(i, "after object key")
        return _VALUE, i + 1

    def _after(self, closer: str, next_state: int, context: str) -> Any:
        """The step after a member (``}``) or an element (``]``): a comma goes on to the
        next one, the closer ends the container."""

        def step(i: int, c: str) -> tuple[int, int]:
            if c == ",":
                return next_state, i + 1
            if c != closer:
                raise self.error(i, context)
            return self._close(i)

        return step

    def _first_element(self, i: int, c: str) -> tuple[int, int]:
        return self._close(i) if c == "]" else self._value(i, c)

    def _close(self, i: int) -> tuple[int, int]:
        """The open object or array ends at ``i``."""
        return self._finish(self.stack.pop()), i + 1

    def _finish(self, value: Any) -> int:
        """A complete value: the result, a member of the open object or an element."""
        stack = self.stack
        if not stack:
            self.result = value
            return _END
        top = stack[-1]
        if type(top) is JObj:
            top.append((self.keys.pop(), value))
            return _OBJ_NEXT
        top.append(value)
        return _ARR_NEXT

    def _literal(self, i: int, word: str, value: Any) -> tuple[Any, int]:
        s = self.s
        for k in range(1, len(word)):
            j = i + k
            if j >= self.n or s[j] != word[k]:
                raise self.error(j, f"in literal {word} (expecting {_quote_char(word[k])})")
        return value, i + len(word)

    def _number(self, i: int) -> tuple[GoNumber, int]:
        s, n = self.s, self.n
        m = _NUMBER.match(s, i)
        if m is not None:
            end = m.end()
            lit = m.group(0)
            # Go's scanner would continue into a '.' or an exponent that the match stopped
            # short of ("1." or "1e" need digits): walk the literal for its error instead.
            dangling = end < n and (
                (s[end] == "." and "." not in lit and "e" not in lit and "E" not in lit)
                or (s[end] in "eE" and "e" not in lit and "E" not in lit)
            )
            if not dangling:
                return GoNumber(lit), end
        # Walk the literal to find Go's error position and context.
        j = i
        if s[j] == "-":
            j += 1
            if j >= n or not ("0" <= s[j] <= "9"):
                raise self.error(j, "in numeric literal")
        if s[j] == "0":
            j += 1
        else:
            while j < n and "0" <= s[j] <= "9":
                j += 1
        if j < n and s[j] == ".":
            j += 1
            if j >= n or not ("0" <= s[j] <= "9"):
                raise self.error(j, "after decimal point in numeric literal")
            while j < n and "0" <= s[j] <= "9":
                j += 1
        if j < n and s[j] in "eE":
            j += 1
            if j < n and s[j] in "+-":
                j += 1
            if j >= n or not ("0" <= s[j] <= "9"):
                raise self.error(j, "in exponent of numeric literal")
            while j < n and "0" <= s[j] <= "9":
                j += 1
        return GoNumber(s[i:j]), j

    def _string(self, i: int) -> tuple[str, int]:
        s, n = self.s, self.n
        j = i + 1
        m = _SIMPLE_STRING.match(s, j)
        end = m.end() if m else j
        if end < n and s[end] == '"':
            return s[j:end], end + 1
        out = [s[j:end]]
        k = end
        while True:
            if k >= n:
                raise GoSyntaxError(_EOF)
            c = s[k]
            if c == '"':
                return "".join(out), k + 1
            if c < " ":
                raise self.error(k, "in string literal")
            if c == "\\":
                k = self._escape(k + 1, out)
                continue
            m = _SIMPLE_STRING.match(s, k)
            stop = m.end() if m and m.end() > k else k + 1
            out.append(s[k:stop])
            k = stop

    def _escape(self, k: int, out: list[str]) -> int:
        """The escape after the backslash at ``k - 1``, unquoted into ``out``; where the
        string goes on."""
        s, n = self.s, self.n
        e = s[k] if k < n else " "
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            return k + 1
        if e != "u":
            raise self.error(k, "in string escape code")
        r, k = self._hex4(k + 1)
        if not 0xD800 <= r < 0xE000:
            out.append(chr(r))
            return k
        # utf16.DecodeRune with the next \uXXXX, else U+FFFD (Go's unquote).
        if r < 0xDC00 and s.startswith("\\u", k) and k + 6 <= n:
            hx = s[k + 2 : k + 6]
            if all(h in _HEX for h in hx):
                r2 = int(hx, 16)
                if 0xDC00 <= r2 < 0xE000:
                    out.append(chr(0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00)))
                    return k + 6
        out.append("\ufffd")
        return k

    def _hex4(self, k: int) -> tuple[int, int]:
        s = self.s
        for j in range(k, k + 4):
            if j >= self.n or s[j] not in _HEX:
                raise self.error(j, "in \\u hexadecimal character escape")
        return int(s[k : k + 4], 16), k + 4
