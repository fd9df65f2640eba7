"""PodResources v1 messages as canonical proto3 JSON and as wire bytes.

The JSON is what ``google.protobuf.json_format`` prints for the generated messages (the
mapping of podresources.md §9): lowerCamelCase ``json_name``s (``NUMANode.ID`` stays
``"ID"``), 64-bit integers as strings, defaults omitted, set-but-empty messages as ``{}``,
``shareId`` printed whenever it is set. Nothing here writes JSON by hand: every key and value
comes from json_format. Messages are converted to and from the dataclasses by
``podresources_pb``; a node's ``List`` and ``Get`` answers are cached per pod by
``podresources_cache``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from app.adapters.podresources_pb import PB_CLASS, from_message, to_message
from app.domain.podresources import build_allocatable_response
from app.domain.snapshot import NodeSnapshot

__all__ = [
    "PodResourcesJSONError",
    "allocatable_json",
    "message_from_bytes",
    "message_from_dict",
    "message_to_dict",
    "message_to_json",
]


class PodResourcesJSONError(ValueError):
    """A JSON document or wire payload that is not a valid PodResources message."""


T = TypeVar("T")

# -- JSON and wire bytes ------------------------------------------------------------------


def message_to_dict(value: Any) -> dict[str, Any]:
    """Canonical proto3 JSON (as a dict) of a dataclass value or a generated message."""
    msg = value if isinstance(value, Message) else to_message(value)
    return json_format.MessageToDict(msg)


def message_to_json(value: Any, indent: int | None = None) -> str:
    """Canonical proto3 JSON text of a dataclass value or a generated message."""
    msg = value if isinstance(value, Message) else to_message(value)
    return json_format.MessageToJson(msg, indent=indent)


def message_from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Parse canonical JSON (JSON names or proto names) into the dataclass ``cls``."""
    pb_cls = PB_CLASS.get(cls)
    if pb_cls is None:
        raise TypeError(f"not a PodResources message type: {cls.__name__}")
    if not isinstance(data, Mapping):
        raise PodResourcesJSONError(
            f"{cls.__name__}: expected a JSON object, got {type(data).__name__}"
        )
    try:
        msg = json_format.ParseDict(dict(data), pb_cls())
    except json_format.ParseError as exc:
        raise PodResourcesJSONError(f"{cls.__name__}: {exc}") from None
    result: T = from_message(msg)
    return result


def message_from_bytes(cls: type[T], data: bytes) -> T:
    """Decode wire bytes (packed or unpacked repeated ints, unknown fields skipped)."""
    pb_cls = PB_CLASS.get(cls)
    if pb_cls is None:
        raise TypeError(f"not a PodResources message type: {cls.__name__}")
    msg = pb_cls()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise PodResourcesJSONError(f"{cls.__name__}: invalid wire data: {exc}") from None
    result: T = from_message(msg)
    return result


def allocatable_json(snapshot: NodeSnapshot) -> dict[str, Any]:
    """``GetAllocatableResources`` of a node as canonical JSON."""
    return message_to_dict(build_allocatable_response(snapshot))
