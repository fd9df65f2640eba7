"""The bare endpoint ``bench_web_json`` compares against: FastAPI returning fixed bytes.

``GET /bare`` answers the bytes of the file named by ``NUMASCOPE_BENCH_BODY`` (read once at
start) as ``application/json``; no middleware, no dependencies, no lookups.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from starlette.responses import Response

BODY = Path(os.environ["NUMASCOPE_BENCH_BODY"]).read_bytes()

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.get("/bare")
async def bare() -> Response:
    return Response(BODY, media_type="application/json")
