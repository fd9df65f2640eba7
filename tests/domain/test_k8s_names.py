"""Names checked like the API server (validation.go, generic.go, objectmeta.go), and a pod
manifest's names refused with its messages."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain import k8s_names as N
from app.domain.node.pods import pods_from_document
from app.domain.node.state_files import PODS_FILE_NAME, PODS_FORMAT, NodeStateError
from app.domain.pod.manifest import pod_from_manifest
from app.domain.pod.model import PodManifestError

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
# Go's RegexError leaves two spaces before "or" when it lists two examples.
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("a", []),
        ("0", []),
        ("example.com", []),
        ("a-b.c-d.e", []),
        ("a" * 253, []),
        ("a" * 254, ["must be no more than 253 characters"]),
        ("A" * 254, ["must be no more than 253 characters", SUBDOMAIN]),
        ("a/b", [SUBDOMAIN]),
        ("Upper", [SUBDOMAIN]),
        ("-a", [SUBDOMAIN]),
        ("a-", [SUBDOMAIN]),
        ("a..b", [SUBDOMAIN]),
        (".a", [SUBDOMAIN]),
        ("", [SUBDOMAIN]),
        ("a\n", [SUBDOMAIN]),  # the whole text must match: no "end of line" before a newline
        ("a\x00b", [SUBDOMAIN]),
        ("<script>", [SUBDOMAIN]),
        ("é", [SUBDOMAIN]),
    ],
    ids=repr,
)
def test_dns1123_subdomain(value: str, errors: list[str]) -> None:
    assert N.is_dns1123_subdomain(value) == errors


@pytest.mark.parametrize(
    ("value", "errors"),
    [
        ("a", []),
        ("my-name", []),
        ("123-abc", []),
        ("a" * 63, []),
        ("a" * 64, ["must be no more than 63 characters"]),
        ("a.b", ["must not contain dots"]),
        ("a_b", [LABEL]),
        ("", [LABEL]),
        ("a" * 64 + "_", ["must be no more than 63 characters", LABEL]),
        ("a." * 40 + "a", ["must be no more than 63 characters", "must not contain dots"]),
    ],
    ids=repr,
)
def test_dns1123_label(value: str, errors: list[str]) -> None:
    assert N.is_dns1123_label(value) == errors


def test_lengths_count_utf8_bytes_like_go() -> None:
    # 127 two-byte characters are 254 bytes: too long for Go's len() even though 127 < 253.
    assert N.is_dns1123_subdomain("é" * 127)[0] == "must be no more than 253 characters"


def test_generate_name_masks_its_trailing_dash() -> None:
    assert N.name_is_dns_subdomain("web-", prefix=True) == []
    assert N.name_is_dns_subdomain("web-", prefix=False) == [SUBDOMAIN]
    assert N.name_is_dns_label("ns-", prefix=True) == []


@pytest.mark.parametrize(
    "uid", ["8a4c6f0e-2b7d-4d1e-9f3a-5c6b7d8e9f01", "budget-three-uid", "A.b_c-1", "x" * 128]
)
def test_uids_accepted(uid: str) -> None:
    assert N.uid_errors(uid) == []


@pytest.mark.parametrize("uid", ["a/b", "../etc", "-a", "a b", "a\x00", "x" * 129, "ü"])
def test_uids_refused(uid: str) -> None:
    assert N.uid_errors(uid)


def _pod(meta: dict[str, Any], containers: list[dict[str, Any]] | None = None, **spec: Any) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": containers or [{"name": "app"}], **spec},
    }


@pytest.mark.parametrize(
    ("obj", "text"),
    [
        (_pod({"name": "a/b"}), f'metadata.name: Invalid value: "a/b": {SUBDOMAIN}'),
        (
            _pod({"name": "<b>x</b>"}),
            f'metadata.name: Invalid value: "<b>x</b>": {SUBDOMAIN}',
        ),
        (
            _pod({"name": "a" * 254}),
            f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters',
        ),
        (
            _pod({"name": "A" * 254}),
            f'metadata.name: Invalid value: "{"A" * 254}": must be no more than 253 characters, '
            f'metadata.name: Invalid value: "{"A" * 254}": {SUBDOMAIN}',
        ),
        (_pod({}), "metadata.name: Required value: name or generateName is required"),
        (
            _pod({"name": "nul\x00"}),
            f'metadata.name: Invalid value: "nul\\x00": {SUBDOMAIN}',
        ),
        (
            _pod({"generateName": "Web-"}),
            f'metadata.generateName: Invalid value: "Web-": {SUBDOMAIN}',
        ),
        (
            _pod({"name": "web", "namespace": "team.a"}),
            'metadata.namespace: Invalid value: "team.a": must not contain dots',
        ),
        (
            _pod({"name": "web", "namespace": "Team"}),
            f'metadata.namespace: Invalid value: "Team": {LABEL}',
        ),
        (
            _pod({"name": "web", "uid": "a/b"}),
            'metadata.uid: Invalid value: "a/b": a pod UID must consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. '8a4c6f0e-2b7d-4d1e-9f3a-5c6b7d8e9f01', regex used for validation is "
            "'[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?')",
        ),
        (
            _pod({"name": "web"}, [{"name": "App_1"}]),
            f'spec.containers[0].name: Invalid value: "App_1": {LABEL}',
        ),
        (
            _pod({"name": "web"}, [{"name": "app"}], initContainers=[{"name": "a.b"}]),
            'spec.initContainers[0].name: Invalid value: "a.b": must not contain dots',
        ),
        (
            _pod({"name": "web"}, [{"name": ""}]),
            "spec.containers[0].name: Required value",
        ),
    ],
    ids=[
        "slash",
        "html",
        "too-long",
        "too-long-and-bad",
        "no-name",
        "nul",
        "generate-name",
        "namespace-dots",
        "namespace-upper",
        "uid",
        "container",
        "init-container",
        "container-empty",
    ],
)
def test_manifest_names_refused_with_the_api_servers_text(obj: Any, text: str) -> None:
    with pytest.raises(PodManifestError) as exc:
        pod_from_manifest(obj)
    assert str(exc.value) == text


def test_generated_name_and_valid_names_accepted() -> None:
    pod = pod_from_manifest(_pod({"generateName": "web-", "namespace": "team-a"}))
    assert pod.name.startswith("web-") and len(pod.name) == len("web-") + 5
    assert N.is_dns1123_subdomain(pod.name) == []
    pod = pod_from_manifest(_pod({"name": "db.primary-0", "uid": "8a4c6f0e-2b7d"}))
    assert (pod.namespace, pod.name, pod.uid) == ("default", "db.primary-0", "8a4c6f0e-2b7d")


def test_restart_records_with_a_bad_name_are_refused_naming_the_entry() -> None:
    # pods.json is what a restart (of the server or ``numascope restart``) reads back.
    good = _pod({"name": "web", "uid": "u-1"})
    bad = _pod({"name": "a/b", "uid": "u-2"})
    doc = {
        "format": PODS_FORMAT,
        "pods": [{"admittedAt": 1.0, "manifest": good}, {"admittedAt": 2.0, "manifest": bad}],
    }
    with pytest.raises(NodeStateError) as exc:
        pods_from_document(doc)
    assert str(exc.value).startswith(
        f'{PODS_FILE_NAME}: pods[1].manifest: metadata.name: Invalid value: "a/b": '
        "a lowercase RFC 1123 subdomain"
    )
    doc["pods"] = doc["pods"][:1]
    assert [p.name for p, _ in pods_from_document(doc)] == ["web"]


def test_a_long_generate_name_is_cut_like_the_api_servers_generator() -> None:
    prefix = "a" * 100 + "-"
    pod = pod_from_manifest(_pod({"generateName": prefix, "uid": "0123456789ab"}))
    assert pod.name == "a" * 58 + "01234"
