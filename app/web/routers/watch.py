"""``GET /api/v1/nodes/{node}/watch``: the node's change token, for pages that refresh in place.

The answer is ``{"node", "source", "token"}`` with the token as a strong ETag and
``Cache-Control: no-cache``; a request whose ``If-None-Match`` names the current token gets
``304 Not Modified`` with no body, so a page that polls every few seconds costs a few hundred
bytes while nothing changes (``app.services.watch`` says what the token covers). The node
page's ``static/js/watch.js`` is the client; any HTTP client may poll it the same way.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.services.fleet.agent_summary import etag_matches
from app.services.watch import WatchState, watch_state
from app.web.deps import NodeSourceDep

api = APIRouter(prefix="/api/v1", tags=["nodes"])

NO_CACHE = "no-cache"


def watch_response(request: Request, state: WatchState) -> Response:
    headers = {"ETag": state.etag, "Cache-Control": NO_CACHE}
    if etag_matches(request.headers.get("if-none-match"), state.etag):
        return Response(status_code=304, headers=headers)
    return JSONResponse(state.to_dict(), headers=headers)


@api.get(
    "/nodes/{node}/watch",
    name="api_node_watch",
    summary="The node's change token (poll with If-None-Match: 304 while unchanged)",
    responses={
        200: {
            "description": "The current token, also the ETag",
            "content": {
                "application/json": {
                    "example": {"node": "worker-7", "source": "observed", "token": "o-3f…"}
                }
            },
        },
        304: {"description": "Unchanged since the token named in If-None-Match"},
        404: {"description": "No such node"},
        503: {"description": "The observed node cannot be observed"},
    },
)
def api_node_watch(request: Request, source: NodeSourceDep) -> Response:
    return watch_response(request, watch_state(source))


__all__ = ["api", "watch_response"]
