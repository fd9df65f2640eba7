"""Throughput of the JSON endpoints on real uvicorn servers (issue 10 point 1).

Run: .venv/bin/python bench/bench_web_json.py [--seconds S] [--rounds N] [--pods N]
Starts Numascope under uvicorn (one process, SQLite, no demo nodes), creates the 512-thread
node through the API and admits ``--pods`` pods (``bench/_web_node.py``), then starts a bare
FastAPI app (``bench/_bare_app.py``) answering the very bytes of that node's PodResources
List. A load generator (wrk if installed, else an asyncio client; 16 keep-alive connections)
hits the bare endpoint and the List endpoint in turn, ``--rounds`` times, and prints the
median requests per second of each and their ratio (target: List >= 0.5 x bare). Then the
other JSON endpoints, and the List again with ``If-None-Match`` (304 answers).
Prints figures only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import httpx
from _load import generator_name, requests_per_second
from _web_node import NODE, TOPOLOGY, app_env, populate, uvicorn_server

TARGET_RATIO = 0.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with uvicorn_server("app.web.app:make_app", env=app_env(tmp), factory=True) as base:
            admitted = populate(base, args.pods)
            api = f"{base}/api/v1/nodes/{NODE}"
            some = httpx.get(f"{api}/podresources").json()["podResources"][0]
            body = httpx.get(f"{api}/podresources").content
            (tmp / "body.json").write_bytes(body)
            bare_env = {"NUMASCOPE_BENCH_BODY": str(tmp / "body.json")}
            with uvicorn_server("_bare_app:app", env=bare_env) as bare_base:
                assert httpx.get(f"{bare_base}/bare").content == body
                print(
                    f"bench_web_json: {TOPOLOGY}, {admitted}/{args.pods} pods, List "
                    f"{len(body) / 1024:.0f} KiB; {generator_name()}, {args.connections} "
                    f"connections, {args.rounds} rounds of {args.seconds:.0f} s"
                )

                def rate(url: str, **kw: object) -> float:
                    return requests_per_second(
                        url, seconds=args.seconds, connections=args.connections, **kw
                    )

                bare, listed = [], []
                for _ in range(args.rounds):
                    bare.append(rate(f"{bare_base}/bare"))
                    listed.append(rate(f"{api}/podresources"))
                b, v = statistics.median(bare), statistics.median(listed)
                ratio = v / b if b else 0.0
                print(f"  bare FastAPI endpoint      {b:9.0f} req/s  (rounds: {_fmt(bare)})")
                print(f"  PodResources List          {v:9.0f} req/s  (rounds: {_fmt(listed)})")
                verdict = "OK" if ratio >= TARGET_RATIO else "BELOW TARGET"
                print(f"  ratio List / bare          {ratio:9.2f}      target >= 0.5: {verdict}")
            others = [
                ("PodResources Get", f"{api}/podresources/{some['namespace']}/{some['name']}"),
                ("Allocatable", f"{api}/allocatable"),
                ("API node", api),
                ("node JSON twin", f"{base}/nodes/{NODE}.json"),
                ("nodes index", f"{base}/api/v1/nodes"),
            ]
            for label, url in others:
                size = len(httpx.get(url).content)
                print(f"  {label:<26} {rate(url):9.0f} req/s  ({size / 1024:.0f} KiB)")
            etag = httpx.get(f"{api}/podresources").headers.get("etag")
            if etag:
                probe = httpx.get(f"{api}/podresources", headers={"If-None-Match": etag})
                assert probe.status_code == 304, probe.status_code
                r304 = rate(f"{api}/podresources", headers={"If-None-Match": etag}, expect_304=True)
                print(f"  List, If-None-Match (304)  {r304:9.0f} req/s")
            else:
                print("  List, If-None-Match        no ETag")
    return 0


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.0f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
