"""JSON answers encoded once: the bytes, their strong ETag and their gzip form (issue 10 pt 1).

A node's JSON (PodResources List/Get/Allocatable, the node and pod JSON twins, the API node)
only changes when the node does, so ``NodeViews`` (one per node version) keeps an
``EncodedMemo`` and every request after the first answers the same ``EncodedJSON``: no model
dump, no ``json.dumps``, no hashing, no compression on the hot path.

The bytes are what FastAPI would have sent for the same value: a pydantic model through
``model_dump_json`` (the models serialise by alias, as the response models do), anything else
through ``json.dumps`` with Starlette's ``JSONResponse`` settings (compact separators, UTF-8,
no NaN). The ETag is strong (RFC 9110 §8.8.1: it changes with any byte of the body): a BLAKE2b
digest of the bytes, so equal bodies get equal tags in every worker and replica without any
shared counter. The gzip form is made on first demand, at level 6, and its tag is the plain
tag with ``-gz`` (a strong tag names one representation, and the encoding is part of it).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel

GZIP_LEVEL = 6
#: An answer that fits in one TCP segment (Ethernet's MSS is 1,448 bytes) arrives no sooner
#: compressed, and compressing it costs the server more than sending it: a single-pod admission
#: answer (500-900 bytes) is sent as it is.
GZIP_MINIMUM = 1400


class EncodedJSON:
    """One JSON body with its strong ETag; the gzip form is made once, when first asked."""

    __slots__ = ("_gzip", "body", "etag")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.etag = f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'
        self._gzip: bytes | None = None

    @property
    def gzip_etag(self) -> str:
        return f'{self.etag[:-1]}-gz"'

    def gzipped(self) -> bytes:
        if self._gzip is None:
            # mtime=0: the same bytes every time, as a strong tag promises.
            self._gzip = gzip.compress(self.body, compresslevel=GZIP_LEVEL, mtime=0)
        return self._gzip

    def matches(self, if_none_match: str) -> bool:
        """Whether an ``If-None-Match`` header names this body (either encoding). The weak
        comparison RFC 9110 §13.1.2 prescribes for it: ``W/"x"`` matches ``"x"``."""
        wanted = if_none_match.strip()
        if wanted == "*":
            return True
        mine = (self.etag, self.gzip_etag)
        for tag in wanted.split(","):
            tag = tag.strip()
            if tag.startswith("W/"):
                tag = tag[2:]
            if tag in mine:
                return True
        return False


def encode(value: Any) -> EncodedJSON:
    """The bytes FastAPI would send for ``value`` (a pydantic model or plain JSON data)."""
    if isinstance(value, BaseModel):
        return EncodedJSON(value.model_dump_json(by_alias=True).encode())
    return EncodedJSON(json_bytes(value))


def json_bytes(value: Any) -> bytes:
    """Plain JSON data as Starlette's ``JSONResponse`` writes it (without an ETag: parts of
    an answer encoded once and joined, as the fleet fit's rows)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


class EncodedMemo:
    """Encoded answers of one node version by key, the newest ``limit`` kept. Thread-safe:
    two threads may both encode the same key once; the second result is dropped."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._items: OrderedDict[Hashable, EncodedJSON] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def peek(self, key: Hashable) -> EncodedJSON | None:
        """The encoded answer of ``key`` if there is one (never encodes)."""
        return self._items.get(key)

    def get(self, key: Hashable, build: Callable[[], Any]) -> EncodedJSON:
        """The encoded answer of ``key``, encoding ``build()`` the first time."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        made = encode(build())
        with self._lock:
            found = self._items.setdefault(key, made)
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return found
