"""One search over the dashboard (issue 21 "Beyond", k9s-style; ``/search``, reached with ``/``
on every page): nodes by name, pods by ``namespace/name`` on every node, a CPU's owner on
every node (``cpu:37``), and the dashboard's own pages by title. A CPU is answered from the
same CPU map cells as the node page, so "owner" means what the map shows (a pod's exclusive
slice or shared pool, the node shared pool, reserved).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from app.services.node_views import NodeViews, node_url, pod_url
from app.services.nodes.catalog import NodeCatalog
from app.services.nodes.errors import NodeInputError

MAX_RESULTS = 50
MAX_QUERY = 200
# The pages one can search for: (title, path, words).
PAGES = (
    ("Nodes", "/nodes", "nodes simulated observed list"),
    ("Topologies", "/topologies", "topologies machines presets sysfs host"),
    ("Checkpoint inspector", "/checkpoints", "checkpoints state files inspector upload"),
    ("Glossary", "/glossary", "glossary words pools isolation hint"),
    ("Fleet", "/fleet", "fleet hub agents fit upgrade"),
    ("API documentation", "/docs", "api openapi swagger"),
    ("Metrics", "/metrics", "metrics prometheus"),
)
POOL_TEXT = {
    "reserved": "reserved",
    "node-shared": "node shared pool",
    "pod-shared": "pod shared pool",
    "exclusive": "exclusive",
}


class SearchHit(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    kind: str  # "node" | "pod" | "cpu" | "page"
    title: str
    detail: str = ""
    url: str


class SearchView(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    query: str
    hits: list[SearchHit]
    more: bool = False  # cut at MAX_RESULTS


def _cpu(text: str) -> int | None:
    if not text.lower().startswith("cpu:"):
        return None
    value = text[4:].strip()
    if not value.isdigit() or len(value) > 6:
        raise NodeInputError(f"q: {text!r} is not cpu:<one CPU id>", "q")
    return int(value)


def search(catalog: NodeCatalog, query: str, *, hub: bool = False) -> SearchView:
    """``cpu:N`` finds who holds CPU N on every node; any other text finds nodes, pods and
    pages whose name contains it."""
    q = query.strip()
    if len(q) > MAX_QUERY:
        raise NodeInputError(f"q: longer than {MAX_QUERY} characters", "q")
    if not q:
        return SearchView(query="", hits=[])
    hits: list[SearchHit] = []
    cpu = _cpu(q)
    for name in catalog.names():
        views = catalog.get(name).views()
        if cpu is None:
            hits.extend(_name_hits(name, views, q.lower()))
        elif (hit := _cpu_hit(name, views, cpu)) is not None:
            hits.append(hit)
    if cpu is None:
        hits.extend(_page_hits(q.lower(), hub))
    return SearchView(query=q, hits=hits[:MAX_RESULTS], more=len(hits) > MAX_RESULTS)


def _cpu_hit(name: str, views: NodeViews, cpu: int) -> SearchHit | None:
    """Who holds CPU ``cpu`` of node ``name`` (``None``: the node has no such CPU)."""
    cell = views.map.cells.get(cpu)
    if cell is None:
        return None
    label = next((e.label for e in views.map.legend if e.owner == cell.owner), cell.owner)
    owner = label if cell.pool in ("exclusive", "pod-shared") else POOL_TEXT[cell.pool]
    url = pod_url(name, *cell.pod.split("/", 1)) if cell.pod else node_url(name)
    detail = f"{POOL_TEXT[cell.pool]} on {name}"
    return SearchHit(kind="cpu", title=f"CPU {cpu} on {name}: {owner}", detail=detail, url=url)


def _name_hits(name: str, views: NodeViews, needle: str) -> list[SearchHit]:
    """The node when its name holds ``needle``, and its pods whose key does."""
    hits = []
    if needle in name.lower():
        hits.append(SearchHit(kind="node", title=name, detail="node", url=node_url(name)))
    for row in views.pods:
        if needle in row.key.lower():
            hits.append(
                SearchHit(
                    kind="pod",
                    title=row.key,
                    detail=f"pod on {name} · {row.qos_class}",
                    url=pod_url(name, row.namespace, row.name),
                )
            )
    return hits


def _page_hits(needle: str, hub: bool) -> list[SearchHit]:
    """The pages whose title or words hold ``needle`` (the fleet page only on a hub)."""
    return [
        SearchHit(kind="page", title=title, detail="page", url=path)
        for title, path, words in PAGES
        if (path != "/fleet" or hub) and (needle in title.lower() or needle in words)
    ]
