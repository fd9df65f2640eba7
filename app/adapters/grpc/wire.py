"""The PodResources v1 messages the client (``app.adapters.grpc.client``) sends and receives,
in plain Python over the proto3 wire format (protobuf.dev ``programming-guides/encoding``),
with the schema of ``proto/podresources/v1/api.proto``.

Why not the generated messages: loading protobuf and the generated module costs the node agent
about 3.4 MiB of resident memory and 18-20 ms of start-up CPU (issue 20 pt 7), for three
answers of a few message types. The servers of this project and the JSON of
``app.adapters.podresources_json`` keep the generated messages; tests decode random
messages those encode, here and with protobuf, and compare.

Decoding follows what protobuf's parsers do: unknown fields, and known fields on an unexpected
wire type, are skipped; a repeated ``int64`` is read packed or not; the last value of a scalar
field wins; a message field given twice is the merge of both (their bytes parsed as one);
``int64`` is two's complement in 64 bits, ``uint64`` the low 64 bits; strings must be UTF-8.
A malformed message raises ``WireError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from app.domain import podresources as pr

VARINT, I64, LEN, SGROUP, EGROUP, I32 = range(6)
_U64 = (1 << 64) - 1


class WireError(ValueError):
    """Bytes that are not a valid message."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` (its low 64 bits) and the position after it."""
    value = shift = 0
    for i in range(pos, min(pos + 10, len(buf))):
        byte = buf[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & _U64, i + 1
        shift += 7
    raise WireError("truncated or overlong varint")


def _skip_group(buf: bytes, pos: int, number: int) -> int:
    """The position after the end of the group ``number`` whose fields start at ``pos``."""
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        if key & 7 == EGROUP:
            if key >> 3 != number:
                raise WireError("mismatched end of group")
            return pos
        pos = _skip(buf, pos, key)
    raise WireError("unterminated group")


def _skip(buf: bytes, pos: int, key: int) -> int:
    """The position after the value of an unknown field with ``key``."""
    wire = key & 7
    if wire == VARINT:
        return _varint(buf, pos)[1]
    if wire in (I64, I32):
        end = pos + (8 if wire == I64 else 4)
    elif wire == LEN:
        size, pos = _varint(buf, pos)
        end = pos + size
    elif wire == SGROUP:
        return _skip_group(buf, pos, key >> 3)
    else:
        raise WireError(f"invalid wire type {wire}")
    if end > len(buf):
        raise WireError("truncated field")
    return end


def fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """``(field number, wire type, value)`` of each field of a message: an int for a varint,
    the bytes of a length-delimited field, ``None`` for the others (skipped)."""
    pos, end = 0, len(buf)
    while pos < end:
        # One-byte keys, lengths and values (nearly all of them) without a call.
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire in (VARINT, LEN):
            if pos < end and buf[pos] < 0x80:
                value, pos = buf[pos], pos + 1
            else:
                value, pos = _varint(buf, pos)
            if wire == VARINT:
                yield number, wire, value
                continue
            if pos + value > end:
                raise WireError("truncated field")
            yield number, wire, buf[pos : pos + value]
            pos += value
        else:
            pos = _skip(buf, pos, key)
            yield number, wire, None


def listed_pods(buf: bytes) -> list[bytes]:
    """The bytes of each ``PodResources`` of a ``ListPodResourcesResponse``, in order."""
    return [value for number, wire, value in fields(buf) if number == 1 and wire == LEN]


def _signed(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise WireError("a string field is not valid UTF-8") from None


def _int64s(out: list[int], wire: int, value: Any) -> None:
    """Add a repeated ``int64``'s value, one (varint) or packed (length-delimited)."""
    if wire == VARINT:
        out.append(_signed(value))
    elif wire == LEN:
        pos = 0
        while pos < len(value):
            item, pos = _varint(value, pos)
            out.append(_signed(item))


# -- the messages: field number -> (attribute, kind, decoder of a message field) -------------
STRING, UINT64, INT64, INT64S, STRINGS, MESSAGE, MESSAGES = range(7)
Decoder = Callable[[bytes], Any]
Schema = dict[int, tuple[str, int, Decoder | None]]


def _read(buf: bytes, schema: Schema) -> dict[str, Any]:
    """The fields of ``schema`` in ``buf`` by attribute: strings decoded, repeated fields as
    tuples, a message field decoded by its decoder (without one: its bytes, merged when
    repeated, or the list of their bytes)."""
    values: dict[str, Any] = {}
    for number, wire, value in fields(buf):
        field = schema.get(number)
        if field is None:
            continue
        name, kind, _ = field
        if kind == INT64S:
            _int64s(values.setdefault(name, []), wire, value)
        elif wire == VARINT and kind in (UINT64, INT64):
            values[name] = _signed(value) if kind == INT64 else value
        elif wire != LEN:
            continue  # a known field on another wire type: an unknown field to protobuf
        elif kind == STRING:
            values[name] = _text(value)
        elif kind == STRINGS:
            values.setdefault(name, []).append(_text(value))
        elif kind == MESSAGE:
            values[name] = values.get(name, b"") + value
        else:
            values.setdefault(name, []).append(value)
    for name, kind, decode in schema.values():
        if name not in values or kind < INT64S:
            continue
        if kind in (INT64S, STRINGS):
            values[name] = tuple(values[name])
        elif decode is not None:
            value = values[name]
            values[name] = decode(value) if kind == MESSAGE else tuple(map(decode, value))
    return values


def _message(cls: type, schema: Schema) -> Decoder:
    """The decoder of the dataclass ``cls`` (its defaults for absent fields)."""
    return lambda buf: cls(**_read(buf, schema))


_numa = _message(pr.NUMANode, {1: ("id", INT64, None)})
_topology = _message(pr.TopologyInfo, {1: ("nodes", MESSAGES, _numa)})
_memory = _message(
    pr.ContainerMemory,
    {
        1: ("memory_type", STRING, None),
        2: ("size", UINT64, None),
        3: ("topology", MESSAGE, _topology),
    },
)
_devices = _message(
    pr.ContainerDevices,
    {
        1: ("resource_name", STRING, None),
        2: ("device_ids", STRINGS, None),
        3: ("topology", MESSAGE, _topology),
    },
)
_claim = _message(
    pr.ClaimResource,
    {
        1: ("cdi_devices", MESSAGES, _message(pr.CDIDevice, {1: ("name", STRING, None)})),
        2: ("driver_name", STRING, None),
        3: ("pool_name", STRING, None),
        4: ("device_name", STRING, None),
        5: ("share_id", STRING, None),  # proto3 optional: absent is None
    },
)
_dynamic = _message(
    pr.DynamicResource,
    {
        2: ("claim_name", STRING, None),
        3: ("claim_namespace", STRING, None),
        4: ("claim_resources", MESSAGES, _claim),
    },
)
_container = _message(
    pr.ContainerResources,
    {
        1: ("name", STRING, None),
        2: ("devices", MESSAGES, _devices),
        3: ("cpu_ids", INT64S, None),
        4: ("memory", MESSAGES, _memory),
        5: ("dynamic_resources", MESSAGES, _dynamic),
    },
)
#: A ``PodResources`` message.
pod: Callable[[bytes], pr.PodResources] = _message(
    pr.PodResources,
    {
        1: ("name", STRING, None),
        2: ("namespace", STRING, None),
        3: ("containers", MESSAGES, _container),
        4: ("cpu_ids", INT64S, None),
        5: ("memory", MESSAGES, _memory),
    },
)
#: An ``AllocatableResourcesResponse`` message.
allocatable: Callable[[bytes], pr.AllocatableResourcesResponse] = _message(
    pr.AllocatableResourcesResponse,
    {
        1: ("devices", MESSAGES, _devices),
        2: ("cpu_ids", INT64S, None),
        3: ("memory", MESSAGES, _memory),
    },
)


def got_pod(buf: bytes) -> bytes | None:
    """The bytes of the ``PodResources`` of a ``GetPodResourcesResponse`` (``None``: unset)."""
    found: bytes | None = _read(buf, {1: ("pod", MESSAGE, None)}).get("pod")
    return found


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string_field(number: int, text: str) -> bytes:
    """A string field as protobuf writes it: absent when empty (proto3)."""
    if not text:
        return b""
    data = text.encode()
    return _varint_bytes(number << 3 | LEN) + _varint_bytes(len(data)) + data


def get_request(request: pr.GetPodResourcesRequest) -> bytes:
    """A ``GetPodResourcesRequest`` encoded (``List`` and ``GetAllocatableResources`` send the
    empty message, no bytes)."""
    return _string_field(1, request.pod_name) + _string_field(2, request.pod_namespace)
