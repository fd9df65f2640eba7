"""A path-traversal probe of the checkpoint inspector (``?file=../…``) is a 404 whose error
names the file as given, never joined to the absolute kubelet root (issue 22 point 6). (The
inspector page itself lists the root directory it reads, as on every visit; its JSON error
does not name it at all.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings


@pytest.mark.parametrize(
    "name",
    [
        "../../etc/passwd",
        "..%2F..%2Fetc%2Fpasswd",
        "/etc/passwd",
        "..",
        ".hidden",
        "kubeadm-flags.env",
    ],
)
@pytest.mark.parametrize("path", ["/checkpoints.json", "/checkpoints"])
def test_traversal_404_hides_the_kubelet_root(
    client: TestClient, settings: Settings, path: str, name: str
) -> None:
    root = Path(settings.kubelet_root)
    root.mkdir(parents=True, exist_ok=True)
    r = client.get(f"{path}?file={name}")
    assert r.status_code == 404, r.text
    decoded = name.replace("%2F", "/")
    assert f"{root}/{decoded}" not in r.text and f"{root}/.." not in r.text
    if path.endswith(".json"):
        assert str(root.parent) not in r.text
        error = r.json()["error"]
        assert error["field"] == "name"
        assert "plain file name" in error["message"] or "is not a state file" in error["message"]
