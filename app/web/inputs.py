"""What routes read from requests beyond path parameters (``app.web.deps``): the kubelet
release and the ``PodLevelResourceManagers`` gate of upgrade questions (``ReleaseQuery``,
``GateQuery``) and of the restart forms, a Pod manifest sent as the body (YAML, or JSON
``{"manifest": ...}``), and the OpenAPI words for a missing node. Several routers read them, so
they live here and not in one router.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import Query
from starlette.requests import Request

from app.domain.kubelet_config import RELEASES
from app.services.nodes.errors import NodeInputError

MAX_BODY_BYTES = 1024 * 1024
NOT_FOUND_NODE: dict[int | str, dict[str, Any]] = {404: {"description": "No such node"}}
#: The target release of an upgrade question (``check_release``) and its gate (``parse_gate``).
ReleaseQuery = Annotated[str, Query(description="Kubelet release: " + ", ".join(RELEASES))]
GateQuery = Annotated[
    str | None, Query(alias="podLevelResourceManagers", description="The gate: true or false")
]


def parse_gate(value: str | None) -> bool | None:
    if value is None or value == "":
        return None
    lowered = value.strip().lower()
    if lowered in ("true", "1", "on", "yes"):
        return True
    if lowered in ("false", "0", "off", "no"):
        return False
    raise NodeInputError(
        f"podLevelResourceManagers: Invalid value: {value!r}: use true or false",
        "podLevelResourceManagers",
    )


def gate_choice(value: str) -> bool | None:
    """The restart forms' gate: ``on``, ``off``, or ``keep`` (or empty) for the node's own."""
    if value in ("", "keep"):
        return None
    if value in ("on", "off"):
        return value == "on"
    raise NodeInputError(
        f"podLevelResourceManagers: expected on, off or keep, got {value!r}",
        "podLevelResourceManagers",
    )


def check_release(release: str) -> str:
    if release not in RELEASES:
        raise NodeInputError(
            f"release: Unsupported value: {release!r}: supported values: "
            + ", ".join(f'"{r}"' for r in RELEASES),
            "release",
        )
    return release


async def manifest_text(request: Request) -> str:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise NodeInputError("manifest: is larger than 1 MiB", "manifest")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NodeInputError("manifest: the body is not UTF-8 text", "manifest") from None
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            doc = json.loads(text) if text.strip() else None
        except json.JSONDecodeError as err:
            raise NodeInputError(
                f"manifest: not valid JSON at line {err.lineno}, column {err.colno}", "manifest"
            ) from None
        if isinstance(doc, dict) and set(doc) == {"manifest"}:
            manifest = doc["manifest"]
            if not isinstance(manifest, str):
                raise NodeInputError("manifest: expected a string", "manifest")
            return manifest
    return text
