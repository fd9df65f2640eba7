"""Time to serve the topology page of the 512-thread preset (target: median <= 30 ms).

Run: .venv/bin/python bench/bench_web.py [--runs N]
Measures whole requests through Starlette's TestClient (routing, loader, Jinja rendering,
response), after one warm-up request that builds and caches the view. Prints figures only.
"""

from __future__ import annotations

import argparse
import sys
import time

from _common import request_line, time_requests, tmp_settings
from fastapi.testclient import TestClient

from app.web.app import create_app

PRESET = "server-2s-8numa-512t"
TARGET_MS = 30.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tmp_settings() as settings:
        client = TestClient(create_app(settings))
        page = f"/topologies/{PRESET}"
        started = time.perf_counter()
        first = client.get(page)
        cold_ms = (time.perf_counter() - started) * 1000
        assert first.status_code == 200 and first.text.count("data-cpu=") == 512
        cases = [
            ("page", page, {}),
            ("htmx fragment", page, {"HX-Request": "true"}),
            ("JSON twin", f"{page}.json", {}),
        ]
        print(f"bench_web: {PRESET}, {args.runs} runs each (TestClient, warm cache)")
        print(f"  first request (builds the view): {cold_ms:7.2f} ms")
        median_page = 0.0
        for label, path, headers in cases:
            timing = time_requests(client, path, args.runs, headers)
            if label == "page":
                median_page = timing.median_ms
            size = len(client.get(path, headers=headers).content)
            print(request_line(label, timing, size))
        verdict = "OK" if median_page <= TARGET_MS else "SLOWER THAN TARGET"
        print(f"  page median {median_page:.2f} ms vs target {TARGET_MS:.0f} ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
