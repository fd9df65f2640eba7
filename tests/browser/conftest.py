"""Shared by the browser tests: Debian's chromium through Playwright, the app served by uvicorn
on a free localhost port, a page that records console errors, and screenshots.

The browser is skipped when missing, unless NUMASCOPE_REQUIRE_BROWSER=1 (CI), which makes a
missing browser a failure. Screenshots land in test-artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from app.settings import Settings
from app.web.app import create_app

CHROMIUM = os.environ.get("NUMASCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
VIEWPORT = {"width": 1400, "height": 900}


def require_browser() -> None:
    if Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK):
        return
    reason = f"{CHROMIUM} is missing (install Debian's chromium: sh scripts/ensure-chromium.sh)"
    if os.environ.get("NUMASCOPE_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@dataclass
class LiveServer:
    """An app served by uvicorn in a background thread; ``url`` has no trailing slash."""

    url: str
    app: FastAPI
    _server: Any = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _sock: socket.socket = field(repr=False)

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


def serve(app: FastAPI) -> LiveServer:
    import uvicorn

    # Listening before the thread starts: the browser's first connection waits in the backlog.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    return LiveServer(f"http://127.0.0.1:{port}", app, server, thread, sock)


@pytest.fixture(scope="module")
def live_server() -> Iterator[Callable[[Settings], LiveServer]]:
    """``live_server(settings)`` serves ``create_app(settings)``; stopped after the module."""
    started: list[LiveServer] = []

    def start(settings: Settings) -> LiveServer:
        server = serve(create_app(settings))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page_errors() -> list[str]:
    """Console errors and uncaught exceptions of ``page``, in order."""
    return []


@pytest.fixture
def page(browser: Any, page_errors: list[str]) -> Iterator[Any]:
    """A fresh page (1400x900) whose console errors land in ``page_errors``."""
    p = browser.new_page(viewport=VIEWPORT)
    p.on("console", lambda m: page_errors.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: page_errors.append(str(e)))
    try:
        yield p
    finally:
        p.close()


@dataclass(frozen=True)
class Screenshots:
    """``screenshot(page_or_locator, name)`` writes ``<folder>/<name>.png``."""

    folder: Path

    def __call__(self, target: Any, name: str, *, full_page: bool = True) -> Path:
        from playwright.sync_api import Page

        self.folder.mkdir(exist_ok=True)
        path = self.folder / f"{name}.png"
        if isinstance(target, Page):
            target.screenshot(path=str(path), full_page=full_page)
        else:  # a locator: just that element
            target.screenshot(path=str(path))
        return path


@pytest.fixture
def screenshot() -> Screenshots:
    return Screenshots(ARTIFACTS)
