"""The checkpoint inspector: page, htmx fragment, JSON twin, the upload API and its errors."""

from __future__ import annotations

import html
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from tests.fixtures.checkpoints.generate import HERE as FIXTURES
from tests.fixtures.checkpoints.generate import POD_A, POD_B
from tests.web.html_helpers import elements, with_attr

MiB = 1024 * 1024
V3 = (FIXTURES / "kubelet-1.36-gate-on" / "cpu_manager_state").read_bytes()
OCTETS = "application/octet-stream"
JSON = {"Content-Type": "application/json"}
TARGET_KEYS = [
    "1.17",
    "1.35",
    "1.36-gate-off",
    "1.36-gate-on",
    "1.37-gate-off",
    "1.37-gate-on",
    "1.38-gate-off",
    "1.38-gate-on",
]
# The fixture's pod-level pod has no shared-pool container and CPUs below its budget: gate-off
# readers read the file without its pod entries and Start (validateState) refuses it.
V3_VERDICTS = [
    "will-fail",
    "will-fail",
    "will-fail",
    "compatible",
    "will-fail",
    "compatible",
    "will-fail",
    "compatible",
]
HX = {"HX-Request": "true"}


@pytest.fixture
def kubelet_root(settings: Settings) -> Path:
    """The server's kubelet root dir with the 1.37 files and a moved-aside 1.35 copy."""
    root = settings.kubelet_root
    shutil.copytree(FIXTURES / "kubelet-1.37", root)
    shutil.copy(FIXTURES / "kubelet-1.35" / "cpu_manager_state", root / "cpu_manager_state.bak")
    return root


def _tree(d: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p): (p.stat().st_mtime_ns, p.read_bytes()) for p in d.rglob("*") if p.is_file()}


def _verdicts(html: str) -> list[tuple[str, str]]:
    return [(a["data-target"], a["data-verdict"]) for a in with_attr(html, "data-verdict", "tr")]


# -- the page ----------------------------------------------------------------------------------------


def test_page_shows_the_upload_form_and_the_server_files(
    client: TestClient, kubelet_root: Path
) -> None:
    r = client.get("/checkpoints")
    assert r.status_code == 200
    assert r.headers["vary"] == "HX-Request, Accept-Encoding"
    html = r.text
    form = next(a for t, a in elements(html) if t == "form" and a.get("id") == "checkpoint-upload")
    assert form["method"] == "post" and form["enctype"] == "multipart/form-data"
    assert form["hx-post"] == "/checkpoints" and form["hx-target"] == "#checkpoint-result"
    names = [a["name"] for a in with_attr(html, "name", "input")]
    assert names[:3] == ["csrf_token", "file", "policy"]
    files = [a["data-kubelet-file"] for a in with_attr(html, "data-kubelet-file")]
    assert files == ["cpu_manager_state", "memory_manager_state", "cpu_manager_state.bak"]
    assert str(kubelet_root) in html
    assert 'href="/checkpoints.json"' in html
    assert "/static/css/checkpoints.css" in html
    assert 'id="checkpoint-result"' in html and 'id="checkpoint-report"' not in html


def test_page_without_a_kubelet_root(client: TestClient, settings: Settings) -> None:
    r = client.get("/checkpoints")
    assert r.status_code == 200
    assert "Not available" in r.text and "does not exist" in r.text
    assert client.get("/checkpoints.json").json()["kubeletRoot"]["available"] is False


def test_page_reports_a_server_file(client: TestClient, kubelet_root: Path) -> None:
    r = client.get("/checkpoints", params={"file": "cpu_manager_state"})
    assert r.status_code == 200
    html = r.text
    report = with_attr(html, "data-version", "article")[0]
    assert (report["data-manager"], report["data-version"], report["data-ok"]) == (
        "cpu",
        "V4",
        "true",
    )
    assert "cpu_manager_state V4 (1.37 family)" in html
    assert _verdicts(html)[-1] == ("1.38-gate-on", "compatible")
    checked = [a for a in with_attr(html, "checked", "input") if a.get("name") == "file"]
    assert checked[0]["value"] == "cpu_manager_state"
    # The kubelet's message names the server's root dir.
    assert f"{kubelet_root}/cpu_manager_state" in html
    fragment = client.get("/checkpoints", params={"file": "cpu_manager_state.bak"}, headers=HX)
    assert fragment.status_code == 200
    assert "<html" not in fragment.text and "site-header" not in fragment.text
    assert 'id="checkpoint-report"' in fragment.text
    assert "cpu_manager_state V2 (1.18–1.35; 1.36 gate off family)" in fragment.text


def test_page_json_twin(client: TestClient, kubelet_root: Path) -> None:
    doc = client.get("/checkpoints.json").json()
    assert doc["report"] is None
    assert [f["name"] for f in doc["kubeletRoot"]["files"]] == [
        "cpu_manager_state",
        "memory_manager_state",
        "cpu_manager_state.bak",
    ]
    doc = client.get(
        "/checkpoints.json",
        params={"file": "memory_manager_state", "target": "1.36", "policy": "None"},
    ).json()
    report = doc["report"]
    assert (report["version"], report["family"]) == ("V3", "1.37")
    assert report["configuredPolicy"] == "None"
    assert [v["verdict"] for v in report["verdicts"]] == ["policy-mismatch", "policy-mismatch"]


@pytest.mark.parametrize(
    "name", ["nope", "../etc/passwd", "config.yaml"], ids=["missing", "traversal", "config"]
)
def test_server_file_errors(client: TestClient, kubelet_root: Path, name: str) -> None:
    r = client.get("/checkpoints.json", params={"file": name})
    assert r.status_code == 404
    assert r.json()["error"]["reason"] == "NotFound"
    page = client.get("/checkpoints", params={"file": name})
    assert page.status_code == 404
    assert 'id="checkpoint-error"' in page.text and 'id="checkpoint-upload"' in page.text
    fragment = client.get("/checkpoints", params={"file": name}, headers=HX)
    assert fragment.status_code == 200  # htmx 2 swaps only 2xx
    assert 'data-status="404"' in fragment.text


def test_pages_never_write_to_the_kubelet_root(client: TestClient, kubelet_root: Path) -> None:
    before = _tree(kubelet_root)
    client.get("/checkpoints")
    client.get("/checkpoints", params={"file": "cpu_manager_state"})
    client.get("/checkpoints.json", params={"file": "memory_manager_state"})
    client.post("/checkpoints", files={"file": ("cpu_manager_state", V3)})
    assert _tree(kubelet_root) == before


# -- the upload form ---------------------------------------------------------------------------------


def test_upload_renders_the_report_page(client: TestClient) -> None:
    r = client.post(
        "/checkpoints",
        files={"file": ("cpu_manager_state", V3)},
        data={"manager": "auto", "policy": "", "target": ""},
    )
    assert r.status_code == 200
    assert r.headers["cache-control"] == "no-store"
    html = r.text
    assert "<html" in html and 'id="checkpoint-upload"' in html
    assert "cpu_manager_state V3 (1.36 pod-level family)" in html
    assert "CPU V3 (1.36 pod-level)" in html
    checksum = with_attr(html, "data-checksum", "tr")
    assert [(a["data-checksum"], a["data-status"]) for a in checksum] == [("checksum", "valid")]
    assert "✓ valid" in html
    assert _verdicts(html) == list(zip(TARGET_KEYS, V3_VERDICTS, strict=True))
    assert "✗ will-fail" in html
    assert f"podEntries[{POD_B}] (cpuSet 4-7)" in html
    # issue 21 point 3: a one-line why and the rescue (or that none exists) for will-fail
    assert "Why: 1.35 cannot read `podEntries`, so its checksum check of this V3 file fails" in (
        html.replace("&#96;", "`")
    )
    assert "No conversion keeps this kubelet starting" in html
    assert "checkpoint is corrupted" in html
    assert "could not restore state from checkpoint" in html
    tables = [a["data-table"] for a in with_attr(html, "data-table", "table")]
    assert tables == ["entries", "podEntries"]
    assert POD_A in html


def test_upload_htmx_gets_the_fragment(client: TestClient) -> None:
    r = client.post(
        "/checkpoints",
        files={"file": ("state", V3)},
        data={"policy": "none", "target": "1.36-gate-on"},
        headers=HX,
    )
    assert r.status_code == 200
    assert "<html" not in r.text and 'id="checkpoint-upload"' not in r.text
    assert _verdicts(r.text) == [("1.36-gate-on", "policy-mismatch")]
    assert "≠ policy-mismatch" in r.text
    text = html.unescape(r.text)
    assert 'configured policy "none" differs from state checkpoint policy "static"' in text


def test_upload_keeps_the_form_values(client: TestClient) -> None:
    r = client.post(
        "/checkpoints",
        files={"file": ("state", V3)},
        data={"manager": "cpu", "policy": "static", "target": "1.35"},
    )
    html = r.text
    selected = [a.get("value") for t, a in elements(html) if t == "option" and "selected" in a]
    assert "cpu" in selected and "1.35" in selected
    assert 'value="static"' in html


@pytest.mark.parametrize(
    ("files", "status", "needle"),
    [
        ({"file": ("cpu_manager_state", b"")}, 422, "no file was uploaded, or the file is empty"),
        ({"file": ("big", b"0" * (16 * MiB + 1))}, 413, "larger than 16777216 bytes (16 MiB)"),
    ],
    ids=["empty", "too-big"],
)
def test_upload_errors_inline(
    client: TestClient, files: dict[str, tuple[str, bytes]], status: int, needle: str
) -> None:
    r = client.post("/checkpoints", files=files)
    assert r.status_code == status
    assert 'id="checkpoint-error"' in r.text and needle in r.text
    assert 'id="checkpoint-upload"' in r.text
    fragment = client.post("/checkpoints", files=files, headers=HX)
    assert fragment.status_code == 200
    assert f'data-status="{status}"' in fragment.text and needle in fragment.text


def test_upload_of_a_bad_manager_is_inline(client: TestClient) -> None:
    r = client.post("/checkpoints", files={"file": ("s", V3)}, data={"manager": "gpu"})
    assert r.status_code == 422
    assert "unknown manager 'gpu'" in html.unescape(r.text)


# -- the API -----------------------------------------------------------------------------------------

REPORT_KEYS = {
    "readable",
    "size",
    "manager",
    "file",
    "version",
    "label",
    "family",
    "display",
    "header",
    "policyName",
    "checksums",
    "state",
    "inlineState",
    "verdicts",
    "issues",
    "error",
    "source",
    "configuredPolicy",
    "targets",
    "ok",
    "problems",
}


def test_api_multipart_upload(client: TestClient) -> None:
    r = client.post("/api/v1/checkpoints/inspect", files={"file": ("cpu_manager_state", V3)})
    assert r.status_code == 200
    doc = r.json()
    assert set(doc) == REPORT_KEYS
    assert (doc["manager"], doc["version"], doc["family"]) == ("cpu", "V3", "1.36 pod-level")
    assert doc["label"] == "CPU V3 (1.36 pod-level)"
    assert doc["source"] == "cpu_manager_state"
    (c,) = doc["checksums"]
    assert {k: c[k] for k in ("field", "status")} == {"field": "checksum", "status": "valid"}
    assert c["stored"] == c["computed"] == json.loads(V3)["checksum"]
    assert [v["target"] for v in doc["verdicts"]] == TARGET_KEYS
    assert [v["verdict"] for v in doc["verdicts"]] == V3_VERDICTS
    lossy = doc["verdicts"][4]
    assert lossy["lost"] == [f"podEntries[{POD_B}] (cpuSet 4-7)"]
    assert doc["verdicts"][1]["error"] == "checkpoint is corrupted"
    assert doc["state"]["podEntries"] == {POD_B: "4-7"}
    assert doc["ok"] is True


def test_api_raw_body_with_query_parameters(client: TestClient) -> None:
    memory = (FIXTURES / "kubelet-1.36-gate-on" / "memory_manager_state").read_bytes()
    r = client.post(
        "/api/v1/checkpoints/inspect",
        params={"target": "1.35,1.37-gate-on", "policy": "Static", "manager": "memory"},
        content=memory,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert r.status_code == 200
    doc = r.json()
    assert doc["targets"] == ["1.35", "1.37-gate-on"]
    assert [v["verdict"] for v in doc["verdicts"]] == ["will-fail", "compatible"]
    assert doc["source"] == "uploaded file"
    assert doc["configuredPolicy"] == "Static"


def test_api_form_fields_beat_the_query(client: TestClient) -> None:
    r = client.post(
        "/api/v1/checkpoints/inspect",
        params={"target": "1.17"},
        files={"file": ("f", V3)},
        data={"target": "1.37-gate-on", "policy": "none"},
    )
    doc = r.json()
    assert doc["targets"] == ["1.37-gate-on"]
    assert doc["verdicts"][0]["verdict"] == "policy-mismatch"
    assert doc["ok"] is False and "policy mismatch" in doc["problems"][0]


@pytest.mark.parametrize(
    ("rel", "filename", "readable", "ok"),
    [
        ("corrupt/cpu_manager_state", "f", True, False),
        ("truncated/cpu_manager_state", "cpu_manager_state", False, False),
        ("kubelet-1.37/cpu_manager_state", "f", True, True),
    ],
    ids=["corrupt", "truncated", "v4"],
)
def test_api_bad_files_are_reports_not_errors(
    client: TestClient, rel: str, filename: str, readable: bool, ok: bool
) -> None:
    r = client.post(
        "/api/v1/checkpoints/inspect", files={"file": (filename, (FIXTURES / rel).read_bytes())}
    )
    assert r.status_code == 200
    doc = r.json()
    assert (doc["readable"], doc["ok"]) == (readable, ok)
    assert len(doc["verdicts"]) == 8  # a truncated file's name tells the manager


@pytest.mark.parametrize(
    ("kwargs", "status", "reason", "field"),
    [
        ({"content": b""}, 422, "Invalid", "file"),
        ({"data": {"policy": "static"}, "files": {"other": ("x", b"1")}}, 422, "Invalid", "file"),
        ({"files": {"file": ("f", b"")}}, 422, "Invalid", "file"),
        (
            {"content": b"0" * (16 * MiB + 1), "headers": {"Content-Type": OCTETS}},
            413,
            "RequestEntityTooLarge",
            "file",
        ),
        ({"files": {"file": ("f", b"0" * (16 * MiB + 1))}}, 413, "RequestEntityTooLarge", "file"),
        ({"content": V3, "params": {"target": "2.0"}, "headers": JSON}, 422, "Invalid", "target"),
        (
            {"content": V3, "params": {"manager": "disk"}, "headers": JSON},
            422,
            "Invalid",
            "manager",
        ),
    ],
    ids=[
        "empty-body",
        "no-file-part",
        "empty-file",
        "raw-too-big",
        "multipart-too-big",
        "bad-target",
        "bad-manager",
    ],
)
def test_api_errors(
    client: TestClient, kwargs: dict[str, object], status: int, reason: str, field: str
) -> None:
    r = client.post("/api/v1/checkpoints/inspect", **kwargs)  # type: ignore[arg-type]
    assert r.status_code == status
    error = r.json()["error"]
    assert (error["reason"], error["field"]) == (reason, field)
    assert error["message"]


def test_api_too_big_without_a_content_length(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(17):
            yield b"0" * MiB

    r = client.post(
        "/api/v1/checkpoints/inspect", content=chunks(), headers={"Content-Type": OCTETS}
    )
    assert r.status_code == 413
    assert "16 MiB" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "ctype", "needle"),
    [
        (
            b'--xyz\r\nContent-Disposition: form-data; name="file"\r\n\r\n{}\r\n--abc',
            "multipart/form-data; boundary=xyz",
            "ends inside a part",
        ),
        (b"garbage", "multipart/form-data; boundary=xyz", "malformed"),
        (b"--xyz\r\nbad header\r\n\r\n", "multipart/form-data; boundary=xyz", "malformed"),
        (b"whatever", "multipart/form-data", "without a boundary"),
    ],
    ids=["truncated", "garbage", "bad-header", "no-boundary"],
)
def test_api_malformed_multipart(client: TestClient, body: bytes, ctype: str, needle: str) -> None:
    r = client.post("/api/v1/checkpoints/inspect", content=body, headers={"Content-Type": ctype})
    assert r.status_code == 400
    assert r.json()["error"]["reason"] == "BadRequest"
    assert needle in r.json()["error"]["message"]


def test_uploads_are_never_spooled_to_disk(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an upload was spooled to a temporary file")

    for name in ("SpooledTemporaryFile", "TemporaryFile", "NamedTemporaryFile", "mkstemp"):
        monkeypatch.setattr(tempfile, name, refuse)
    big = V3 + b" " * (3 * MiB)  # trailing whitespace: still the same checkpoint
    r = client.post("/api/v1/checkpoints/inspect", files={"file": ("cpu_manager_state", big)})
    assert r.status_code == 200 and r.json()["version"] == "V3"
    page = client.post("/checkpoints", files={"file": ("cpu_manager_state", big)})
    assert page.status_code == 200


def test_openapi_documents_the_upload(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    op = spec["paths"]["/api/v1/checkpoints/inspect"]["post"]
    content = op["requestBody"]["content"]
    assert set(content) >= {"multipart/form-data", "application/octet-stream"}
    assert "413" in op["responses"]
    assert "/checkpoints.json" in spec["paths"]


def _solo_pod_files(tmp_path: Path) -> bytes:
    """The CPU file of a 1.36 node (gate on) whose pod-level pod has one container holding its
    whole budget: a shape 1.35 starts on once the file is converted to V2."""
    from app.cli import main
    from app.services.demo import bubble_pod

    pod = tmp_path / "pod.yaml"
    pod.write_text(bubble_pod("solo", "prod", 2, {"main": 2}, ()))
    kubelet = Path(__file__).resolve().parents[1] / "fixtures" / "kubelet"
    root = tmp_path / "root"
    assert main(["simulate", "--topology", "topoDualSocketHT", "--kubelet-config",
                 str(kubelet / "pod-scope-single-numa.yaml"), "--release", "1.36",
                 "--state-dir", str(root), str(pod)]) == 0  # fmt: skip
    return (root / "cpu_manager_state").read_bytes()


def test_will_fail_verdicts_carry_the_rescue_and_why(
    client: TestClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21 point 3: the upgrade views' rescue, in the inspector's JSON and page."""
    content = _solo_pod_files(tmp_path)
    capsys.readouterr()
    r = client.post("/api/v1/checkpoints/inspect", files={"file": ("cpu_manager_state", content)})
    assert r.status_code == 200
    verdicts = {v["target"]: v for v in r.json()["verdicts"]}
    old = verdicts["1.35"]
    assert old["verdict"] == "will-fail" and old["error"] == "checkpoint is corrupted"
    assert (
        old["why"] == "1.35 cannot read `podEntries`, so its checksum check of this V3 file fails"
    )
    assert [x["toVersion"] for x in old["rescues"]] == ["V2", "V4"]
    first = old["rescues"][0]
    assert first["verdict"] == "compatible" and first["lost"][0].startswith("podEntries[")
    assert first["command"] == (
        "numascope checkpoint convert cpu_manager_state --to V2 --release 1.35 --out "
        "cpu_manager_state"
    )
    assert verdicts["1.37-gate-on"]["rescues"] == [] and verdicts["1.37-gate-on"]["why"] is None
    page = client.post("/checkpoints", files={"file": ("cpu_manager_state", content)})
    text = html.unescape(page.text)
    assert "Rescue:" in text and "--to V2 --release 1.35" in text
