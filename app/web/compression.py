"""gzip for text answers when the client accepts it (issue 10 pt 2).

Starlette's ``GZipMiddleware`` does the compressing (bodies of at least ``minimum_size``;
never server-sent events, images or answers that already carry a ``Content-Encoding``, such
as the cached JSON of ``app.web.conditional``). It looks for the substring ``gzip`` in
``Accept-Encoding``, so ``gzip;q=0`` ("anything but gzip") would get gzip: ``Compression``
decides with ``accepts_gzip`` instead, the one reading of the header both places share.
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.gzip import GZipMiddleware, IdentityResponder
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def accepts_gzip(headers: Headers) -> bool:
    """Whether ``Accept-Encoding`` lists gzip with a non-zero quality."""
    for item in headers.get("accept-encoding", "").split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip"):
            q = params.strip().lower().replace(" ", "")
            if not q.startswith("q="):
                return True
            try:
                return float(q[2:]) > 0
            except ValueError:
                return False
    return False


class Compression:
    """gzip the answers of ``app`` for clients that accept it (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, minimum_size: int, compresslevel: int) -> None:
        self.app = app
        self.minimum_size = minimum_size
        self.gzip = GZipMiddleware(app, minimum_size=minimum_size, compresslevel=compresslevel)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif accepts_gzip(Headers(scope=scope)):
            await self.gzip(scope, receive, send)
        else:  # still says Vary: Accept-Encoding on bodies that would have been compressed
            await self.app(scope, receive, self._identity(send))

    def _identity(self, send: Send) -> Send:
        """Starlette's ``IdentityResponder`` holds back every answer's start until its first
        body part; a whole JSON body of known length (the cached API answers) needs no wait:
        it gets the same ``Vary`` from its ``Content-Length`` and passes straight through."""
        identity: IdentityResponder | None = None
        direct = False

        async def relay(message: Message) -> None:
            nonlocal direct, identity
            if message["type"] == "http.response.start":
                headers = Headers(raw=message.get("headers", []))
                length = headers.get("content-length", "")
                direct = (
                    message["status"] != 206
                    and "content-encoding" not in headers
                    and headers.get("content-type", "").startswith("application/json")
                    and length.isdigit()
                )
                if not direct:
                    # Made only here: its set-up costs more than a cached answer's relay.
                    identity = IdentityResponder(self.app, self.minimum_size)
                    identity.send = send
                    await identity.send_with_compression(message)
                    return
                if int(length) >= self.minimum_size:
                    vary = MutableHeaders(raw=list(message.get("headers", [])))
                    vary.add_vary_header("Accept-Encoding")
                    message = {**message, "headers": vary.raw}
                await send(message)
            elif direct or identity is None:
                await send(message)
            else:
                await identity.send_with_compression(message)

        return relay
