"""The limits every contract shares, and parsing an untrusted answer into a contract.

A document from another process (an agent answering the hub) may be from another version,
truncated, or hostile. Parsing with ``parse`` goes through pydantic-core's JSON parser, which
refuses nesting deeper than ``MAX_JSON_DEPTH`` (the error names the path where it happens)
before any model sees the data; the models then bound every integer, string and list and refuse
``NaN``/``Infinity`` (not JSON, read as floats so the field holding one is named). Everything is strict: a string where a number belongs, or ``true`` where a count
belongs, is refused rather than coerced. Unknown fields are dropped (an agent of a newer
version may send more), so only fields someone reads are kept.

``ContractError.field`` is the path of the first bad field in the JSON's own names
(``nodes[0].numa[1].available``), so the hub can say which field made it drop an answer.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

import pydantic_core
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)
from pydantic.alias_generators import to_camel

#: Nesting pydantic-core's JSON parser allows (fixed there; documented here for readers).
MAX_JSON_DEPTH = 200
#: The largest count or size a contract accepts: 2^53, the largest integer every JSON reader
#: (JavaScript included) holds exactly; 8 PiB as bytes, far above any node.
MAX_INT = 2**53
#: Characters of a free text (an error message, a finding).
MAX_TEXT = 4096
#: Characters of a short token (a policy name, a source, a verdict).
MAX_TOKEN = 128
#: Characters of a Kubernetes object name (DNS-1123 subdomain).
MAX_NAME = 253
#: Characters of any string of a page's JSON twin (a configuration's text, a CPU list of
#: thousands of ids): far above any real one, far below the agent client's byte cap.
MAX_STRING = 1 << 20
#: Items of one list or map of a document (a node's CPUs, pods, log entries).
MAX_ITEMS = 100_000
#: Nesting of a free-form part of a document (a kubelet configuration, a PodResources answer).
MAX_FREE_DEPTH = 32


#: The model settings of every document another process reads (contracts and the node view
#: contract): camelCase on the wire (Python names accepted too), finite numbers, frozen.
WIRE_CONFIG = ConfigDict(
    alias_generator=to_camel,
    populate_by_name=True,
    serialize_by_alias=True,
    allow_inf_nan=False,
    frozen=True,
)


class Contract(BaseModel):
    """The base of every contract: camelCase on the wire, strict types, finite numbers,
    unknown fields dropped, frozen."""

    model_config = WIRE_CONFIG | ConfigDict(strict=True, extra="ignore")


Count = Annotated[int, Field(ge=0, le=MAX_INT)]
#: A signed integer a JSON reader holds exactly.
Int = Annotated[int, Field(ge=-MAX_INT, le=MAX_INT)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Token = Annotated[str, StringConstraints(max_length=MAX_TOKEN)]
Release = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,3}\.[0-9]{1,3}$")]
#: A path on the answering server (``/nodes/a``), never another site.
LocalPath = Annotated[str, StringConstraints(max_length=2048, pattern=r"^/([^/\s\\][^\s\\]*)?$")]


def _free_form(value: dict[str, Any]) -> dict[str, Any]:
    _check_free(value, 0)
    return value


def _check_free(value: Any, depth: int) -> None:
    """Bound a free-form JSON value: nesting, items per container, string sizes, integers
    (``NaN``/``Infinity`` are refused by the model's ``allow_inf_nan=False`` only for declared
    floats, so they are refused here too)."""
    if depth > MAX_FREE_DEPTH:
        raise ValueError(f"nested deeper than {MAX_FREE_DEPTH} levels")
    if isinstance(value, dict | list):
        if len(value) > MAX_ITEMS:
            raise ValueError(f"more than {MAX_ITEMS} items")
        items = value.values() if isinstance(value, dict) else value
        if isinstance(value, list) and value and all(type(x) is int for x in value):
            # A list of ids (``cpuIds``: most of a node's pools), checked at C speed.
            if max(value) > MAX_INT or min(value) < -MAX_INT:
                raise ValueError(f"an integer larger than {MAX_INT}")
            return
        for item in items:
            _check_free(item, depth + 1)
    elif isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ValueError(f"a string longer than {MAX_STRING} characters")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not a finite number")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise ValueError(f"an integer larger than {MAX_INT}")


#: A free-form JSON object (a kubelet configuration as the node holds it, a PodResources
#: answer), bounded in depth, items, strings and numbers.
FreeForm = Annotated[dict[str, Any], AfterValidator(_free_form)]


class ContractError(ValueError):
    """A document does not fit its contract: ``field`` is the first bad field's JSON path
    (``""``: the document as a whole), ``problem`` what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        self.message = f"{field}: {problem}" if field else problem
        super().__init__(self.message)


def json_path(loc: tuple[int | str, ...]) -> str:
    """``("nodes", 0, "numa", 1, "available")`` -> ``nodes[0].numa[1].available``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = str(part)[:60]
            out += f".{text}" if out else text
    return out


def contract_error(exc: ValidationError) -> ContractError:
    """The first error of ``exc`` as a ``ContractError`` (the input value is left out: it is
    the untrusted data itself)."""
    first = exc.errors(include_url=False, include_input=False)[0]
    problem = first["msg"]
    if first["type"] == "json_invalid":
        return ContractError("", "not valid JSON (" + problem.removeprefix("Invalid JSON: ") + ")")
    return ContractError(json_path(tuple(first["loc"])), problem)


M = TypeVar("M", bound=BaseModel)


def checked(model: type[BaseModel], doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` unchanged, once it fits ``model``: for a producer that builds its document as a
    dict (its bytes stay as they were) and checks it against the contract its readers use."""
    model.model_validate(doc)
    return doc


def parse(model: type[M], body: bytes) -> M:
    """``body`` as ``model``, or ``ContractError`` naming the first bad field. The JSON is read
    first (``NaN``/``Infinity`` kept as floats, so the model names the field that holds one
    rather than the parser refusing the whole text), then checked by the model."""
    value = _read(body)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise contract_error(exc) from None


def parse_json(body: bytes) -> Any:
    """``body`` as a JSON value with the contract parser's limits (no ``NaN``/``Infinity``,
    nesting at most ``MAX_JSON_DEPTH``, integers at most ``MAX_INT``), or ``ContractError``
    naming where: for the parts of an answer passed on as the node gave them."""
    value = _read(body)
    _check_numbers(value, ())
    return value


def _read(body: bytes) -> Any:
    try:
        return pydantic_core.from_json(body, allow_inf_nan=True)
    except ValueError as exc:
        text = str(exc)
        if "recursion limit exceeded" in text:
            where = _too_deep(body)
            if where:
                raise ContractError(where, f"nested deeper than {MAX_JSON_DEPTH} levels") from None
        raise ContractError("", f"not valid JSON ({text})") from None


def _too_deep(body: bytes) -> str:
    """Where ``body`` (JSON the parser refused for its depth) first nests deeper than
    ``MAX_JSON_DEPTH``: the path of its first four levels (``nodes[0].policies.a…``). A scan of
    the text up to that point, counting brackets outside strings."""
    text = body.decode("utf-8", "replace")
    stack: list[list[Any]] = []  # per open container: [is_object, key or index, awaiting a key]
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if stack and stack[-1][0] and stack[-1][2]:
                stack[-1][1] = text[i + 1 : j]
            i = j + 1
            continue
        if c in "{[":
            if len(stack) >= MAX_JSON_DEPTH:
                parts = tuple(entry[1] for entry in stack if entry[1] is not None)
                return json_path(parts[:4]) + ("…" if len(parts) > 4 else "")
            stack.append([True, None, True] if c == "{" else [False, 0, False])
        elif c in "}]" and stack:
            stack.pop()
        elif c == ":" and stack:
            stack[-1][2] = False
        elif c == "," and stack:
            if stack[-1][0]:
                stack[-1][2] = True
            else:
                stack[-1][1] += 1
        i += 1
    return ""


def _check_numbers(value: Any, loc: tuple[int | str, ...]) -> None:
    """Refuse a float that overflowed to infinity (``1e400`` parses as ``inf``) and integers
    past ``MAX_INT`` (the parser's depth limit bounds this walk)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(v, (*loc, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_numbers(v, (*loc, i))
    elif isinstance(value, float) and not math.isfinite(value):
        raise ContractError(json_path(loc), "Input should be a finite number")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise ContractError(json_path(loc), f"Input should be at most {MAX_INT} in size")
