"""Load generators for the web benches: ``wrk`` (Debian's package) when it is installed, else a
small asyncio HTTP/1.1 client with keep-alive connections.

``requests_per_second(url, seconds, connections, headers)`` returns the rate of completed
requests; any status outside ``ok`` stops the bench, so a 404 is never measured as speed.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

WRK = shutil.which("wrk")


def generator_name() -> str:
    return "wrk" if WRK else "asyncio client"


def requests_per_second(
    url: str,
    *,
    seconds: float = 5.0,
    connections: int = 16,
    headers: Mapping[str, str] | None = None,
    expect_304: bool = False,
) -> float:
    if WRK:
        return _wrk(url, seconds, connections, headers or {}, expect_304)
    return asyncio.run(_python(url, seconds, connections, headers or {}, expect_304))


def _wrk(
    url: str, seconds: float, connections: int, headers: Mapping[str, str], expect_304: bool
) -> float:
    args = [WRK, "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s"]
    for k, v in headers.items():
        args += ["-H", f"{k}: {v}"]
    out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if rate is None:
        raise SystemExit(f"wrk: no figure in its output:\n{out}")
    # wrk counts 3xx with 2xx; a 304 run is checked by the caller's probe request.
    if non2xx is not None and int(non2xx.group(1)):
        raise SystemExit(f"{url}: {non2xx.group(1)} responses were not 2xx/3xx")
    return float(rate.group(1))


async def _python(
    url: str, seconds: float, connections: int, headers: Mapping[str, str], expect_304: bool
) -> float:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}\r\n".encode()
    want = 304 if expect_304 else 200
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < deadline:
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                if status != want:
                    raise SystemExit(f"{url}: HTTP {status}")
                length = re.search(rb"(?i)content-length:\s*(\d+)", head)
                if length is not None:
                    await reader.readexactly(int(length.group(1)))
                done += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    return done / (time.perf_counter() - started)
