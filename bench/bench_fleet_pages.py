"""Weight and server time of ``/fleet`` and its JSON twins on a hub with ``--demo-fleet 1000``
(issue 8: the page <= 300 KB of HTML, <= 100 ms server time).

Run: .venv/bin/python bench/bench_fleet_pages.py [--nodes N] [--runs N]
Builds a hub app with N simulated nodes of its own (``app.services.nodes.demo_fleet``, fixed
seed), waits until they are built, then through Starlette's TestClient (routing, loader, rendering,
middleware; no network) prints for ``/fleet`` (first page, as a browser opens it), the htmx
fragment of a filtered view, ``/fleet.json``, ``GET /api/v1/fleet`` (and its 304) and the
heatmap ``/fleet/heatmap.svg``: size uncompressed, median / p90 / best of warm requests; and
the heatmap's size gzipped and the CPU time of drawing it. Prints figures only.
"""

from __future__ import annotations

import argparse
import time

from _common import request_line, time_requests, tmp_settings
from fastapi.testclient import TestClient

from app.web.app import create_app

HTML_LIMIT_KB = 300
SERVER_MS = 100.0


def bench(nodes: int, runs: int) -> None:
    with tmp_settings(hub=True, demo_fleet=nodes, allowed_hosts=("testserver",)) as settings:
        app = create_app(settings)
        with TestClient(app) as client:
            started = time.perf_counter()
            app.state.hub.fleet.ready.wait()
            built = time.perf_counter() - started
            print(f"hub with --demo-fleet {nodes}: {nodes} simulated nodes built in {built:.1f} s")
            page = client.get("/fleet")
            shown = page.text.count("<tr class=")
            print(f"  /fleet shows {shown} rows per page (of {nodes}), paged with a Next link")
            hub = app.state.hub
            client.get("/fleet")  # the document built
            cpu = time.process_time()
            hub.view._heatmap = None  # draw it again, timed
            drawn, svg = hub.view.heatmap()
            cpu = time.process_time() - cpu
            gz = client.get("/fleet/heatmap.svg", headers={"Accept-Encoding": "gzip"})
            print(
                f"  heatmap of {drawn.nodes} nodes: {len(svg.body) / 1024:.0f} KiB SVG "
                f"({gz.num_bytes_downloaded / 1024:.0f} KiB as sent gzipped), drawn in "
                f"{cpu * 1000:.0f} ms CPU once per fleet change"
            )
            cases = [
                ("/fleet", "/fleet", {}),
                ("fragment", "/fleet?sort=free&minFree=4", {"HX-Request": "true"}),
                ("/fleet.json", "/fleet.json", {}),
                ("/api/v1/fleet", "/api/v1/fleet", {}),
                ("heatmap.svg", "/fleet/heatmap.svg", {}),
            ]
            for label, path, headers in cases:
                size = len(client.get(path, headers=headers).content)
                timing = time_requests(client, path, runs, headers, warmup=2)
                print(request_line(label, timing, size))
                if label == "/fleet":
                    page_ms, page_kb = timing.median_ms, size / 1024
            etag = client.get("/api/v1/fleet").headers["etag"]
            r = client.get("/api/v1/fleet", headers={"If-None-Match": etag})
            t0 = time.perf_counter()
            for _ in range(runs):
                client.get("/api/v1/fleet", headers={"If-None-Match": etag})
            each = (time.perf_counter() - t0) / runs * 1000
            print(f"  /api/v1/fleet with If-None-Match: HTTP {r.status_code}, {each:.2f} ms each")
            ok = page_kb <= HTML_LIMIT_KB and page_ms <= SERVER_MS
            print(
                f"goal: /fleet <= {HTML_LIMIT_KB} KB and <= {SERVER_MS:.0f} ms: "
                f"{page_kb:.0f} KB, {page_ms:.1f} ms -> {'met' if ok else 'NOT met'}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    bench(args.nodes, args.runs)


if __name__ == "__main__":
    main()
