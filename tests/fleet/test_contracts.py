"""The agent summary contract (``app.contracts.summary``), both sides: what an agent writes
passes it, and every wrong, oversized or hostile field of an answer is refused with the field
named, before the hub keeps anything of it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.contracts.base import MAX_INT, ContractError, parse, parse_json
from app.contracts.fleet import FitAnswer, FleetDocument, UpgradeAnswer
from app.contracts.summary import NodeSummaryV1, SummaryDocumentV1
from app.services.demo import classic_pod
from app.web.app import create_app
from tests.helpers import make_settings


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """An agent with the demo nodes (every kind of node the demo has)."""
    tmp: Path = tmp_path_factory.mktemp("contract-agent")
    with TestClient(create_app(make_settings(tmp, demo=True))) as client:
        yield client


@pytest.fixture(scope="module")
def good(agent: TestClient) -> dict[str, Any]:
    doc: dict[str, Any] = agent.get("/api/v1/summary").json()
    assert len(doc["nodes"]) >= 2
    return doc


def _with(doc: dict[str, Any], path: str, value: Any) -> bytes:
    """``doc`` with the field at ``path`` (dots; digits index lists) set to ``value``, as the
    bytes an agent would send (``value`` may be raw JSON text in a ``Raw``)."""
    doc = copy.deepcopy(doc)
    target: Any = doc
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    marker = "\u0000RAW\u0000"
    raw = value.text if isinstance(value, Raw) else None
    target[int(last) if last.isdigit() else last] = marker if raw is not None else value
    text = json.dumps(doc)
    if raw is not None:
        text = text.replace(json.dumps(marker), raw)
    return text.encode()


class Raw:
    """JSON text put in as it is (``NaN``, a 4,300-digit number, deep nesting)."""

    def __init__(self, text: str) -> None:
        self.text = text


def test_what_an_agent_writes_passes_the_contract(agent: TestClient, good: dict[str, Any]) -> None:
    doc = parse(SummaryDocumentV1, json.dumps(good).encode())
    assert [n.node for n in doc.nodes] == [n["node"] for n in good["nodes"]]
    # The model writes exactly what the agent served (the agent builds it with the model).
    assert doc.model_dump(mode="json") == good
    one = agent.get(f"/api/v1/nodes/{good['nodes'][0]['node']}/summary")
    assert parse(NodeSummaryV1, one.content).node == good["nodes"][0]["node"]


DEEP = "[" * 950 + "]" * 950


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        pytest.param("nodes.0.numa.0.available", "lots", "nodes[0].numa[0].available", id="str"),
        pytest.param("nodes.0.numa.0.total", -1, "nodes[0].numa[0].total", id="negative"),
        pytest.param("nodes.0.numa.0.exclusive", True, "nodes[0].numa[0].exclusive", id="bool"),
        pytest.param("nodes.0.numa.0.free", 1.5, None, id="unknown-field-dropped"),
        pytest.param(
            "nodes.0.numa.0.exclusive", Raw("9" * 4300), "nodes[0].numa[0].exclusive", id="4300"
        ),
        pytest.param("nodes.0.pods", MAX_INT + 1, "nodes[0].pods", id="over-2^53"),
        pytest.param("nodes.0.policies", Raw(DEEP), "nodes[0].policies[0]…", id="nested-950"),
        pytest.param(
            "nodes.0.policies.cpuManagerPolicy",
            {"a": 1},
            "nodes[0].policies.cpuManagerPolicy",
            id="policy-object",
        ),
        pytest.param(
            "nodes.0.featureGates.PodLevelResources",
            Raw("NaN"),
            "nodes[0].featureGates.PodLevelResources",
            id="nan",
        ),
        pytest.param(
            "nodes.0.featureGates.X", Raw("-Infinity"), "nodes[0].featureGates.X", id="infinity"
        ),
        pytest.param("nodes.0.node", "x" * 300, "nodes[0].node", id="long-name"),
        pytest.param("nodes.0.node", "Not/A/Name", "nodes[0].node", id="bad-name"),
        pytest.param("nodes.0.node", "Laptop_2.local", None, id="host-name-is-a-name"),
        pytest.param("nodes.0.node", "a b", "nodes[0].node", id="space"),
        pytest.param("nodes.0.release", 137, "nodes[0].release", id="release-int"),
        pytest.param("nodes.0.release", "1.37; rm", "nodes[0].release", id="release-text"),
        pytest.param("nodes.0.loadError", "x" * 5000, "nodes[0].loadError", id="huge-string"),
        pytest.param(
            "nodes.0.findings",
            [{"code": "c", "severity": "doom", "message": "m"}],
            "nodes[0].findings[0].severity",
            id="severity",
        ),
        pytest.param("nodes.0.numa", [{}] * 2000, "nodes[0].numa", id="too-many-numa"),
        pytest.param("nodes.0.url", "//evil.example/x", "nodes[0].url", id="other-site"),
        pytest.param("nodes.0.url", "https://evil.example/x", "nodes[0].url", id="absolute"),
        pytest.param("format", "numascope.summary/v2", "format", id="format"),
        pytest.param("nodes", {}, "nodes", id="nodes-object"),
    ],
)
def test_a_wrong_field_is_refused_naming_it(
    good: dict[str, Any], path: str, value: Any, field: str | None
) -> None:
    body = _with(good, path, value)
    if field is None:
        parse(SummaryDocumentV1, body)  # not an error (an unknown field is dropped)
        return
    with pytest.raises(ContractError) as err:
        parse(SummaryDocumentV1, body)
    assert err.value.field == field
    assert len(err.value.message) < 500  # the bad value itself is never echoed


def test_garbage_is_not_json() -> None:
    for body in (b"\x00\xffnot json", b"", b"{"):
        with pytest.raises(ContractError) as err:
            parse(SummaryDocumentV1, body)
        assert err.value.field == "" and "not valid JSON" in err.value.message
    with pytest.raises(ContractError) as err:
        parse(SummaryDocumentV1, b"[" * 5000)
    assert err.value.field == "[0][0][0][0]…" and "deeper than 200 levels" in err.value.message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"a": [1, NaN]}', "a[1]"),
        (b'{"a": {"b": 1e400}}', "a.b"),
        (b'{"a": 1' + b"0" * 30 + b"}", "a"),
    ],
)
def test_answers_passed_on_as_given_are_finite_and_bounded(body: bytes, field: str) -> None:
    with pytest.raises(ContractError) as err:
        parse_json(body)
    assert err.value.field == field
    assert parse_json(b'{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}


def test_a_hub_fleet_document_passes_its_contract(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path, hub=True, demo_fleet=6))) as client:
        assert client.app.state.hub.fleet.ready.wait(60)  # type: ignore[attr-defined]
        doc = parse(FleetDocument, client.get("/api/v1/fleet").content)
        assert len(doc.nodes) == 6 and all(n.agent is None for n in doc.nodes)
        view = client.get("/fleet.json")
        assert view.status_code == 200 and view.json()["total"] == 6
        pod = classic_pod("p", "default", "1", "1Gi").encode()
        fit = client.post(
            "/api/v1/fleet/fit", content=pod, headers={"Content-Type": "application/yaml"}
        )
        assert len(parse(FitAnswer, fit.content).results) == 6
        upgrade = client.get("/api/v1/fleet/upgrade", params={"release": "1.37"})
        assert len(parse(UpgradeAnswer, upgrade.content).results) == 6
        schemas = client.get("/openapi.json").json()["components"]["schemas"]
        for model in (
            "SummaryDocumentV1",
            "FleetDocument",
            "FleetView",
            "FitAnswer",
            "UpgradeAnswer",
        ):
            assert model in schemas


def test_contracts_import_only_pydantic_and_the_domain() -> None:
    """DESIGN.md §1: both sides of a boundary use the contracts, so they depend on nothing
    but pydantic, the standard library and ``app.domain``."""
    import sys

    from tests.import_graph import imported_names, module_names

    modules = module_names()
    for name, path in modules.items():
        if name != "app.contracts" and not name.startswith("app.contracts."):
            continue
        for imported in imported_names(name, path, modules):
            top = imported.split(".")[0]
            allowed = (
                top in ("pydantic", "pydantic_core", "__future__")
                or top in sys.stdlib_module_names
                or imported.startswith(("app.contracts", "app.domain"))
            )
            assert allowed, f"{name} imports {imported}"
