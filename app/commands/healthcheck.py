"""``numascope healthcheck``: does the server running beside this command answer ``/healthz``?
::

    numascope healthcheck [--pid PID] [--timeout SECONDS]

The image's ``HEALTHCHECK``. It asks the server where it listens instead of assuming: it finds
the ``numascope serve`` process (``--pid``, else PID 1 when that is one — the container's main
process — else the lowest such PID), reads that process's own command line and environment from
``/proc`` and builds its settings exactly as ``serve`` did (flags over ``NUMASCOPE_*`` over the
defaults), so ``serve --port 9000`` is probed on 9000 whatever this command's environment says.
A wildcard bind (``0.0.0.0``, ``::``) is probed on loopback.

Exit codes (the Docker/OCI health check contract): 0 healthy, 1 unhealthy (the reason on
stderr); 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

PROG = "numascope healthcheck"
PROC = Path("/proc")


class Unhealthy(Exception):
    pass


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "healthcheck",
        help="exit 0 when the numascope server beside this command answers /healthz",
        description="Probe /healthz of the running `numascope serve` on the address it really "
        "listens on (read from that process's command line and environment).",
    )
    parser.add_argument("--pid", type=int, default=None, help="the server's PID (default: find it)")
    parser.add_argument(
        "--timeout", type=float, default=5.0, help="seconds to wait for the answer (default 5)"
    )
    parser.set_defaults(func=run)


def serve_args(cmdline: list[str]) -> list[str] | None:
    """The arguments from ``serve`` on, when ``cmdline`` runs ``numascope serve``."""
    for i, word in enumerate(cmdline[:-1]):
        launcher = os.path.basename(word) == "numascope" or (
            word == "app.cli" and i > 0 and cmdline[i - 1] == "-m"
        )
        if launcher and cmdline[i + 1] == "serve":
            return cmdline[i + 1 :]
    return None


def _read_proc(pid: int, name: str) -> list[str]:
    raw = (PROC / str(pid) / name).read_bytes()
    return [w.decode("utf-8", "surrogateescape") for w in raw.split(b"\0") if w]


def find_server(pid: int | None) -> tuple[int, list[str]]:
    """The server's PID and its ``serve …`` arguments."""
    if pid is not None:
        candidates = [pid]
    else:
        others = sorted(int(p.name) for p in PROC.iterdir() if p.name.isdigit() and p.name != "1")
        candidates = [1, *others]
    for candidate in candidates:
        if candidate == os.getpid():
            continue
        try:
            args = serve_args(_read_proc(candidate, "cmdline"))
        except OSError:
            continue
        if args is not None:
            return candidate, args
    if pid is not None:
        raise Unhealthy(f"process {pid} is not a running `numascope serve`")
    raise Unhealthy("no `numascope serve` process is running")


def probe_url(pid: int, args: list[str]) -> str:
    """The ``/healthz`` URL of the server ``pid`` started with ``args``."""
    from pydantic import ValidationError

    from app.cli import build_parser
    from app.commands.serve import build_settings

    try:
        environ = dict(w.split("=", 1) for w in _read_proc(pid, "environ") if "=" in w)
    except OSError as err:
        raise Unhealthy(f"the environment of process {pid} is not readable: {err}") from None
    try:
        parsed = build_parser().parse_args(args)
    except SystemExit:
        raise Unhealthy(f"process {pid}: its command line does not parse: {args}") from None
    # The settings read os.environ: this one-off process takes the server's.
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        settings = build_settings(parsed)
    except ValidationError as err:
        raise Unhealthy(f"process {pid}: its settings are invalid: {err}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if settings.port == 0:
        raise Unhealthy(f"process {pid} listens on a port chosen at start (--port 0)")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.host, settings.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}/healthz"


def run(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        print(f"{PROG}: --timeout must be positive", file=sys.stderr)
        return 2
    try:
        pid, serve = find_server(args.pid)
        url = probe_url(pid, serve)
        # No proxy: the server is on this machine.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(url, timeout=args.timeout) as answer:
                status = answer.status
        except urllib.error.HTTPError as err:
            status = err.code
        except (OSError, ValueError) as err:
            raise Unhealthy(f"{url}: {err}") from None
        if status != 200:
            raise Unhealthy(f"{url}: HTTP {status}")
    except Unhealthy as err:
        print(f"{PROG}: unhealthy: {err}", file=sys.stderr)
        return 1
    print(f"healthy: {url}")
    return 0
