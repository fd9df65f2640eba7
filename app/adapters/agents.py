"""The hub's HTTP client of the agents (httpx, asynchronous): their summaries with conditional
requests, fit dry runs and upgrade checks fanned out to them.

Every call has one deadline for the whole answer (connecting, the headers and every byte of the
body: an agent trickling a byte a second is cut off at the deadline, not kept while each read
stays under httpx's per-read timeout; a dry run or an upgrade check, work on the agent, gets
``WORK_FACTOR`` times the summary's) and reads at most ``max_bytes`` of the answer (streamed, so
a huge body costs no more than the cap). A summary is parsed with its contract
(``app.contracts.summary.SummaryDocumentV1``); dry-run and upgrade answers with the contracts'
bounded JSON parser (``app.contracts.base.parse_json``: no ``NaN``, bounded depth and numbers).
Anything else is an ``AgentError`` whose message says what the agent did (refused the
connection, timed out, answered 502, answered something that is not JSON, answered a summary
whose ``nodes[0].numa[0].available`` is not an integer…) and whose ``field`` names the field
that broke the contract. Nothing here raises anything else for an agent's behaviour.

``watch`` follows an agent's ``GET /api/v1/summary/watch`` stream (its own connection pool,
unbounded: one long-lived connection per agent, where the pooled requests above share
``concurrency`` connections). Opening it (connect and headers) holds a slot of the caller's
semaphore, so a thousand agents reconnecting at once connect a bounded number at a time; each
event is one line, read whole within ``idle`` seconds (an agent trickling bytes, or silent past
a few of its bookmark intervals, is cut off) and at most ``max_bytes`` long, and parsed with
``SummaryWatchEventV1``; a stream that breaks mid-way ends like one the agent closed (the
reconnect says whether the agent is still there). An agent that has no watch route (404/405: an older agent) raises
``WatchUnsupportedError``, and the hub polls it instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from app.contracts.base import ContractError, parse, parse_json
from app.contracts.summary import SummaryDocumentV1, SummaryWatchEventV1

USER_AGENT = "numascope-hub"
#: A dry run or an upgrade check is work on the agent: its answer may take this many times
#: the deadline of a summary (which is served from cached bytes).
WORK_FACTOR = 2
#: Seconds httpx's per-operation timeouts run past the whole-answer deadline.
BACKSTOP = 1.0


class AgentError(Exception):
    """An agent did not give a usable answer (``message`` says how; ``field``: the field of
    its answer that broke the contract, when that was why)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class WatchUnsupportedError(AgentError):
    """The agent has no watch route (an older agent): poll it."""


@dataclass(frozen=True, slots=True)
class AgentAnswer:
    status: int
    etag: str | None
    doc: dict[str, Any] | None  # None for a 304


@dataclass(frozen=True, slots=True)
class SummaryAnswer:
    etag: str | None
    doc: SummaryDocumentV1 | None  # None for a 304


@dataclass(frozen=True, slots=True)
class _Raw:
    status: int
    etag: str | None
    body: bytes | None  # None for a 304


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({exc.__class__.__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {exc}" if str(exc) else "cannot connect"
    if isinstance(exc, (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)):
        # The agent went away mid-answer or mid-stream (killed, restarted, network cut).
        detail = str(exc) or exc.__class__.__name__
        return f"connection lost ({detail})"
    return f"{exc.__class__.__name__}: {exc}" if str(exc) else exc.__class__.__name__


class AgentClient:
    """One pooled ``httpx.AsyncClient`` for every agent."""

    def __init__(self, *, timeout: float, max_bytes: int, concurrency: int) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            limits=limits,
            # identity: the byte cap below counts raw bytes, and agents gzip when asked
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "application/json",
                "Accept-Encoding": "identity",
            },
            follow_redirects=False,
            trust_env=False,
        )
        self._streams = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "application/x-ndjson",
                "Accept-Encoding": "identity",
            },
            follow_redirects=False,
            trust_env=False,
        )

    async def aclose(self) -> None:
        await self._client.aclose()
        await self._streams.aclose()

    async def watch(
        self,
        base: str,
        resource_version: str,
        *,
        bookmark: float,
        idle: float,
        connects: asyncio.Semaphore,
    ) -> AsyncIterator[SummaryWatchEventV1]:
        """The events of the agent's watch stream from ``resource_version`` (see the module
        docstring); ends when the agent ends the stream."""
        params = {"resourceVersion": resource_version, "bookmarkSeconds": f"{bookmark:g}"}
        timeout = httpx.Timeout(self.timeout, read=idle + BACKSTOP)
        request = self._streams.build_request(
            "GET", f"{base}/api/v1/summary/watch", params=params, timeout=timeout
        )
        try:
            async with connects:
                async with asyncio.timeout(self.timeout):
                    response = await self._streams.send(request, stream=True)
        except TimeoutError:
            raise AgentError(
                f"timed out (no answer within the {self.timeout:g} s deadline)"
            ) from None
        except httpx.HTTPError as exc:
            raise AgentError(_describe(exc)) from None
        try:
            if response.status_code in (404, 405):
                raise WatchUnsupportedError(f"has no watch route (HTTP {response.status_code})")
            if response.status_code != 200:
                body = await self._head(response)
                raise AgentError(f"answered HTTP {response.status_code}: {_error_text(body)}")
            async for line in self._lines(response, idle):
                yield _event(line)
        finally:
            await response.aclose()

    async def _head(self, response: httpx.Response) -> bytes:
        """The start of an error answer (for its message), within the deadline."""
        try:
            async with asyncio.timeout(self.timeout):
                async for chunk in response.aiter_raw():
                    return chunk[:4096]
        except (TimeoutError, httpx.HTTPError):
            pass
        return b""

    async def _lines(self, response: httpx.Response, idle: float) -> AsyncIterator[bytes]:
        """Whole lines of the stream, each within ``idle`` seconds and ``max_bytes``."""
        cap = self.max_bytes
        buffer = b""
        chunks = aiter(response.aiter_raw())
        try:
            while True:
                try:
                    async with asyncio.timeout(idle):  # the rest of a line within one deadline
                        while True:
                            chunk = await anext(chunks)
                            buffer += chunk
                            if b"\n" in chunk:
                                break
                            if len(buffer) > cap:
                                raise AgentError(f"sent a watch event over the {cap}-byte cap")
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    raise AgentError(
                        f"timed out (no whole event within {idle:g} s on its watch stream)"
                    ) from None
                except httpx.HTTPError:
                    return  # broken mid-way, as by a killed agent: reconnecting tells
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if len(line) > cap:
                        raise AgentError(f"sent a watch event over the {cap}-byte cap")
                    if line.strip():
                        yield line
                if len(buffer) > cap:
                    raise AgentError(f"sent a watch event over the {cap}-byte cap")
        finally:
            await response.aclose()

    async def _request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        ok: tuple[int, ...] = (200,),
        deadline: float | None = None,
    ) -> _Raw:
        """The answer's bytes within one deadline for the whole answer (``timeout`` unless
        ``deadline`` says otherwise)."""
        limit = self.timeout if deadline is None else deadline
        try:
            async with asyncio.timeout(limit):
                return await self._read(method, url, headers, content, ok, limit)
        except TimeoutError:
            raise AgentError(
                f"timed out (no complete answer within the {limit:g} s deadline)"
            ) from None

    async def _read(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None,
        content: bytes | None,
        ok: tuple[int, ...],
        limit: float,
    ) -> _Raw:
        try:
            # httpx's own per-operation timeouts are a backstop behind the whole-answer deadline.
            timeout = httpx.Timeout(limit + BACKSTOP)
            request = self._client.build_request(
                method, url, headers=headers, content=content, timeout=timeout
            )
            response = await self._client.send(request, stream=True)
            try:
                if response.status_code == 304:
                    return _Raw(304, response.headers.get("etag"), None)
                declared = response.headers.get("content-length")
                if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                    raise AgentError(f"answer of {declared} bytes is over the {self.max_bytes} cap")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_raw():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise AgentError(f"answer is over the {self.max_bytes}-byte cap")
                    chunks.append(chunk)
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            raise AgentError(_describe(exc)) from None
        body = b"".join(chunks)
        if response.status_code not in ok:
            raise AgentError(f"answered HTTP {response.status_code}: {_error_text(body)}")
        return _Raw(response.status_code, response.headers.get("etag"), body)

    async def _json(self, method: str, url: str, **kwargs: Any) -> AgentAnswer:
        """An answer that is a JSON object, passed on as the node gave it (bounded)."""
        raw = await self._request(method, url, **kwargs)
        if raw.body is None:
            return AgentAnswer(raw.status, raw.etag, None)
        try:
            doc = parse_json(raw.body)
        except ContractError as exc:
            field = exc.field or None
            problem = "is not JSON" if not field else f"has {field}: {exc.problem}"
            raise AgentError(f"answered something that {problem}", field) from None
        if not isinstance(doc, dict):
            raise AgentError("answered JSON that is not an object")
        return AgentAnswer(raw.status, raw.etag, doc)

    async def summary(self, base: str, etag: str | None) -> SummaryAnswer:
        """The agent's summary document, checked against ``SummaryDocumentV1``."""
        headers = {"If-None-Match": etag} if etag else None
        raw = await self._request("GET", f"{base}/api/v1/summary", headers=headers)
        if raw.body is None:
            return SummaryAnswer(raw.etag, None)
        try:
            doc = parse(SummaryDocumentV1, raw.body)
        except ContractError as exc:
            if not exc.field:
                raise AgentError(f"answered something that is not JSON: {exc.problem}") from None
            raise AgentError(
                f"answered a summary whose {exc.field} breaks the contract: {exc.problem}",
                exc.field,
            ) from None
        return SummaryAnswer(raw.etag, doc)

    async def node_get(
        self, base: str, node: str, path: str = "", *, work: bool = False
    ) -> AgentAnswer:
        """``GET`` one of node ``node``'s pages' JSON twins or API answers on its agent
        (``path`` after ``/nodes/{node}``, or ``.json`` for the node's own): the hub serves
        a remote node's pages from them. The agent's error answers are answers too. ``work``:
        the agent computes the answer (an upgrade verdict), so it gets the longer deadline."""
        url = f"{base}/{_node_path(node, path)}"
        deadline = self.timeout * (WORK_FACTOR if work else 1)
        return await self._json("GET", url, ok=(200, 404, 409, 422, 503), deadline=deadline)

    async def node_post(
        self, base: str, node: str, path: str, body: bytes = b"", content_type: str = ""
    ) -> AgentAnswer:
        """``POST`` to node ``node``'s API on its agent (a dry run, a rehearsal: work on the
        agent, with the longer deadline)."""
        headers = {"Content-Type": content_type} if content_type else None
        url = f"{base}/{_node_path(node, path)}"
        return await self._json(
            "POST",
            url,
            headers=headers,
            content=body,
            ok=(200, 201, 404, 409, 422, 503),  # the node's own answer, errors included
            deadline=self.timeout * WORK_FACTOR,
        )


def _node_path(node: str, path: str) -> str:
    quoted = quote(node, safe="")
    if path.startswith("/api/v1"):
        return f"api/v1/nodes/{quoted}{path.removeprefix('/api/v1')}"
    return f"nodes/{quoted}{path}"


def _event(line: bytes) -> SummaryWatchEventV1:
    """One line of a watch stream as its contract (an event without the part its type needs
    breaks the contract too, naming the part)."""
    try:
        event = parse(SummaryWatchEventV1, line)
    except ContractError as exc:
        if not exc.field:
            raise AgentError(
                f"streamed a watch event that is not JSON: {exc.problem}", "event"
            ) from None
        raise AgentError(
            f"streamed a watch event whose {exc.field} breaks the contract: {exc.problem}",
            exc.field,
        ) from None
    if event.type in ("ADDED", "MODIFIED", "DELETED") and event.object is None:
        raise AgentError(f"streamed a {event.type} event without its object", "object")
    if event.type == "ERROR" and event.status is None:
        raise AgentError("streamed an ERROR event without its status", "status")
    return event


def _error_text(body: bytes) -> str:
    """The agent's own error message when it sent one, else the start of the body."""
    try:
        doc = parse_json(body)
        message = doc["error"]["message"]
        if isinstance(message, str):
            return message[:300]
    except (ContractError, KeyError, TypeError, IndexError):
        pass
    return body[:120].decode("utf-8", "replace") or "(empty body)"
