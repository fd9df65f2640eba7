"""``SummaryFeed`` (the agent's watch stream) on its own, over summaries given as contract
models: what a stream from each kind of version sends, every line checked with the contract
(``tests/fleet/test_fleet_watch.py`` runs it in real agent processes)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from app.contracts.summary import NodeSummaryV1, SummaryWatchEventV1
from app.services.fleet.agent_summary import SummaryFeed


def summary(name: str, pods: int) -> NodeSummaryV1:
    return NodeSummaryV1.model_validate(
        {
            "node": name,
            "source": "simulation",
            "simulated": True,
            "release": "1.37",
            "policies": {
                "cpuManagerPolicy": "static",
                "memoryManagerPolicy": "Static",
                "topologyManagerPolicy": "restricted",
                "topologyManagerScope": "pod",
                "podLevelResources": True,
                "podLevelResourceManagers": True,
            },
            "topology": {"name": "t", "sockets": 1, "numaNodes": 1, "cpus": 8, "memoryBytes": 1},
            "pods": pods,
            "rejected": 0,
        }
    )


async def stream(feed: SummaryFeed, rv: str, until: Callable[[dict[str, Any]], bool]) -> list[Any]:
    """The events of one stream from ``rv`` up to the first ``until`` accepts (or its end)."""
    out = []
    async for line in feed.watch(rv, 0.05):
        event = json.loads(line)
        SummaryWatchEventV1.model_validate(event)  # every line is the contract
        out.append(event)
        if until(event):
            break
    return out


def kinds(events: list[Any]) -> list[tuple[str, str | None]]:
    return [(e["type"], (e.get("object") or {}).get("node")) for e in events]


def bookmark(e: dict[str, Any]) -> bool:
    return bool(e["type"] == "BOOKMARK")


def test_list_resume_delete_and_expiry() -> None:
    asyncio.run(_list_resume_delete_and_expiry())


async def _list_resume_delete_and_expiry() -> None:
    nodes = [summary("a", 0), summary("b", 0)]
    feed = SummaryFeed(lambda: list(nodes), tick=0.01, history=3)
    listed = await stream(feed, "", bookmark)
    assert kinds(listed) == [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None)]
    assert listed[-1]["initialEventsEnd"] is True
    rv = listed[-1]["resourceVersion"]
    # Nothing changed: a resume sends only a bookmark at the same version.
    same = await stream(feed, rv, bookmark)
    assert kinds(same) == [("BOOKMARK", None)] and same[0]["resourceVersion"] == rv
    # One node changed, one deleted: a resume sends exactly those.
    nodes[:] = [summary("a", 1)]
    feed.apply(list(nodes))  # what the feed's task does on its next read
    resumed = await stream(feed, rv, bookmark)
    assert kinds(resumed) == [("MODIFIED", "a"), ("DELETED", "b"), ("BOOKMARK", None)]
    assert resumed[0]["object"]["pods"] == 1
    # More changes than the history holds: the old version has expired.
    for pods in range(2, 6):
        nodes[:] = [summary("a", pods)]
        feed.apply(list(nodes))
    expired = await stream(feed, rv, lambda e: False)
    assert [e["type"] for e in expired] == ["ERROR"]
    assert expired[0]["status"]["code"] == 410
    # A version of another process (another epoch) is expired too, never a partial replay.
    other = await stream(feed, "0123abcd-1", lambda e: False)
    assert [e["type"] for e in other] == ["ERROR"]
    assert "not of this agent process" in other[0]["status"]["message"]


def test_an_open_stream_gets_a_change_as_it_happens() -> None:
    nodes = [summary("a", 0)]
    feed = SummaryFeed(lambda: list(nodes), tick=0.01)

    async def run() -> list[Any]:
        out = []
        async for line in feed.watch("", 0.05):
            event = json.loads(line)
            out.append(event)
            if event.get("initialEventsEnd"):
                nodes[:] = [summary("a", 7)]  # the next read of the nodes sees it
            if event["type"] == "MODIFIED":
                break
        return out

    events = asyncio.run(run())
    assert kinds(events)[:2] == [("ADDED", "a"), ("BOOKMARK", None)]
    assert events[-1]["object"]["pods"] == 7
