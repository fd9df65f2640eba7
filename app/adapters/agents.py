"""The hub's HTTP client of the agents (httpx, asynchronous): their summaries with conditional
requests, fit dry runs and upgrade checks fanned out to them.

Every call has a timeout and reads at most ``max_bytes`` of the answer (streamed, so a huge body
costs no more than the cap); anything but a well-formed JSON object is an ``AgentError`` whose
message says what the agent did (refused the connection, timed out, answered 502, answered
something that is not JSON…). Nothing here raises anything else for an agent's behaviour.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

USER_AGENT = "numascope-hub"


class AgentError(Exception):
    """An agent did not give a usable answer (``message`` says how)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class AgentAnswer:
    status: int
    etag: str | None
    doc: dict[str, Any] | None  # None for a 304


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({exc.__class__.__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {exc}" if str(exc) else "cannot connect"
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

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        ok: tuple[int, ...] = (200,),
    ) -> AgentAnswer:
        try:
            request = self._client.build_request(method, url, headers=headers, content=content)
            response = await self._client.send(request, stream=True)
            try:
                if response.status_code == 304:
                    return AgentAnswer(304, response.headers.get("etag"), None)
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
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            raise AgentError("answered something that is not JSON") from None
        if not isinstance(doc, dict):
            raise AgentError("answered JSON that is not an object")
        return AgentAnswer(response.status_code, response.headers.get("etag"), doc)

    async def summary(self, base: str, etag: str | None) -> AgentAnswer:
        headers = {"If-None-Match": etag} if etag else None
        return await self._request("GET", f"{base}/api/v1/summary", headers=headers)

    async def dry_run(self, base: str, node: str, body: bytes, content_type: str) -> AgentAnswer:
        return await self._request(
            "POST",
            f"{base}/api/v1/nodes/{quote(node, safe='')}/pods?dryRun=true",
            headers={"Content-Type": content_type},
            content=body,
            ok=(200, 201, 404, 409, 422, 503),  # the node's own answer, errors included
        )

    async def upgrade(self, base: str, node: str, query: str) -> AgentAnswer:
        return await self._request(
            "GET",
            f"{base}/api/v1/nodes/{quote(node, safe='')}/upgrade?{query}",
            ok=(200, 404, 422, 503),
        )

    async def node_get(self, base: str, node: str, path: str = "") -> AgentAnswer:
        """``GET`` one of node ``node``'s pages' JSON twins or API answers on its agent
        (``path`` after ``/nodes/{node}``, or ``.json`` for the node's own): the hub serves
        a remote node's pages from them. The agent's error answers are answers too."""
        url = f"{base}/{_node_path(node, path)}"
        return await self._request("GET", url, ok=(200, 404, 409, 422, 503))

    async def node_post(
        self, base: str, node: str, path: str, body: bytes = b"", content_type: str = ""
    ) -> AgentAnswer:
        """``POST`` to node ``node``'s API on its agent (a dry run, a rehearsal)."""
        headers = {"Content-Type": content_type} if content_type else None
        url = f"{base}/{_node_path(node, path)}"
        return await self._request(
            "POST", url, headers=headers, content=body, ok=(200, 201, 404, 409, 422, 503)
        )


def _node_path(node: str, path: str) -> str:
    quoted = quote(node, safe="")
    if path.startswith("/api/v1"):
        return f"api/v1/nodes/{quoted}{path.removeprefix('/api/v1')}"
    return f"nodes/{quoted}{path}"


def _error_text(body: bytes) -> str:
    """The agent's own error message when it sent one, else the start of the body."""
    try:
        doc = json.loads(body)
        message = doc["error"]["message"]
        if isinstance(message, str):
            return message[:300]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        pass
    return body[:120].decode("utf-8", "replace") or "(empty body)"
