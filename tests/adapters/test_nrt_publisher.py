"""adapters/nrt_publisher.py: the publisher's calls (through ``kube_api``) against a fake API
server over real HTTP (``tests/fake_kube_api.py``): the group/version/plural in the URL, the
body, the bearer token, create when missing, update carrying the ``resourceVersion`` read,
another read and update after a 409 conflict, and the error texts an operator acts on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.adapters.nrt_publisher import (
    FIELD_MANAGER,
    GROUP,
    MAX_CONFLICTS,
    PLURAL,
    VERSION,
    NRTPublisher,
    PublishError,
    cluster_client,
    pod_namespace,
)
from tests.fake_kube_api import (
    Call,
    FakeKubeAPI,
    kubeconfig,
    namespace,
    running,
    self_signed,
    status,
)

PATH = "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"


def nrt(name: str = "worker-1", available: str = "5") -> dict[str, Any]:
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "numascope"}},
        "topologyPolicies": ["SingleNUMANodePodLevel"],
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "costs": [{"name": "node-0", "value": 10}],
                "resources": [
                    {"name": "cpu", "capacity": "6", "allocatable": "5", "available": available}
                ],
            }
        ],
        "attributes": [{"name": "topologyManagerPolicy", "value": "single-numa-node"}],
    }


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with running(GROUP, VERSION, PLURAL) as fake:
        yield fake


@pytest.fixture
def publisher(api: FakeKubeAPI, tmp_path: Path) -> NRTPublisher:
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(api.url, token="agent-token"))
    return NRTPublisher(cluster_client({"KUBECONFIG": str(config)}))


def methods(api: FakeKubeAPI) -> list[tuple[str, str]]:
    return [(c.method, c.path.split("?")[0]) for c in api.calls]


def test_creates_the_object_when_it_does_not_exist(
    api: FakeKubeAPI, publisher: NRTPublisher
) -> None:
    obj = nrt()
    assert publisher.publish(obj) == "created"
    assert methods(api) == [("GET", f"{PATH}/worker-1"), ("POST", PATH)]
    _get, post = api.calls
    assert post.body == obj  # the object as built, nothing added or dropped
    assert post.headers["content-type"] == "application/json"
    assert f"fieldManager={FIELD_MANAGER}" in post.path
    assert {c.headers["authorization"] for c in api.calls} == {"Bearer agent-token"}
    assert api.objects["worker-1"]["zones"] == obj["zones"]
    assert obj["metadata"].get("resourceVersion") is None  # the caller's object is untouched


def test_updates_with_the_resource_version_it_read(
    api: FakeKubeAPI, publisher: NRTPublisher
) -> None:
    stored = api.store(nrt(available="5"))
    assert publisher.publish(nrt(available="1")) == "updated"
    assert methods(api) == [("GET", f"{PATH}/worker-1"), ("PUT", f"{PATH}/worker-1")]
    put = api.calls[1]
    assert put.body["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert put.body["zones"][0]["resources"][0]["available"] == "1"
    assert f"fieldManager={FIELD_MANAGER}" in put.path
    assert put.headers["content-type"] == "application/json"
    current = api.objects["worker-1"]
    assert current["zones"][0]["resources"][0]["available"] == "1"
    assert current["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]


def test_a_conflict_reads_again_and_updates(api: FakeKubeAPI, publisher: NRTPublisher) -> None:
    """Another writer changes the object between our read and our update: the API server
    answers 409; the publisher reads the new version and its second update lands."""
    api.store(nrt(available="5"))
    interfered: list[str] = []

    def other_writer(fake: FakeKubeAPI, call: Call) -> tuple[int, dict[str, Any]] | None:
        if call.method == "PUT" and not interfered:
            interfered.append(fake.store(fake.objects["worker-1"])["metadata"]["resourceVersion"])
        return None

    api.hooks.append(other_writer)
    assert publisher.publish(nrt(available="2")) == "updated"
    assert [m for m, _ in methods(api)] == ["GET", "PUT", "GET", "PUT"]
    first, second = api.calls_of("PUT")
    assert first.body["metadata"]["resourceVersion"] != interfered[0]
    assert second.body["metadata"]["resourceVersion"] == interfered[0]
    assert api.objects["worker-1"]["zones"][0]["resources"][0]["available"] == "2"


def test_created_meanwhile_turns_into_an_update(api: FakeKubeAPI, publisher: NRTPublisher) -> None:
    def racing_creator(fake: FakeKubeAPI, call: Call) -> tuple[int, dict[str, Any]] | None:
        if call.method == "POST" and "worker-1" not in fake.objects:
            fake.store(nrt(available="6"))
        return None

    api.hooks.append(racing_creator)
    assert publisher.publish(nrt(available="3")) == "updated"
    assert [m for m, _ in methods(api)] == ["GET", "POST", "GET", "PUT"]
    assert api.objects["worker-1"]["zones"][0]["resources"][0]["available"] == "3"


def test_endless_conflicts_give_up_with_a_clear_error(
    api: FakeKubeAPI, publisher: NRTPublisher
) -> None:
    api.store(nrt())

    def always_newer(fake: FakeKubeAPI, call: Call) -> tuple[int, dict[str, Any]] | None:
        if call.method == "PUT":
            fake.store(fake.objects["worker-1"])
        return None

    api.hooks.append(always_newer)
    with pytest.raises(PublishError) as err:
        publisher.publish(nrt(available="1"))
    assert err.value.message == (
        f"noderesourcetopologies.topology.node.k8s.io/worker-1: still conflicting after "
        f"{MAX_CONFLICTS} tries"
    )
    assert len(api.calls_of("PUT")) == MAX_CONFLICTS


def test_forbidden_names_the_rbac(api: FakeKubeAPI, publisher: NRTPublisher) -> None:
    message = (
        'noderesourcetopologies.topology.node.k8s.io "worker-1" is forbidden: User '
        '"system:serviceaccount:numascope:numascope" cannot get resource '
        '"noderesourcetopologies" in API group "topology.node.k8s.io" at the cluster scope'
    )
    api.hooks.append(lambda fake, call: (403, status(403, "Forbidden", message)))
    with pytest.raises(PublishError) as err:
        publisher.publish(nrt())
    assert err.value.message == (
        f"get noderesourcetopologies.topology.node.k8s.io/worker-1: 403 {message} (the agent's "
        "service account needs get, create and update on "
        "noderesourcetopologies.topology.node.k8s.io: deploy/rbac.yaml)"
    )


def test_a_cluster_without_the_crd(tmp_path: Path) -> None:
    """The API server knows no such resource: the GET and the POST are both 404."""
    with running("other.example.org", "v1", "things") as api:
        config = tmp_path / "kubeconfig"
        config.write_text(kubeconfig(api.url))
        publisher = NRTPublisher(cluster_client({"KUBECONFIG": str(config)}))
        with pytest.raises(PublishError) as err:
            publisher.publish(nrt())
    assert err.value.message == (
        "create noderesourcetopologies.topology.node.k8s.io/worker-1: 404 the server could "
        "not find the requested resource (is the NodeResourceTopology CRD, "
        "topology.node.k8s.io/v1alpha2, installed in the cluster?)"
    )
    assert [c.method for c in api.calls] == ["GET", "POST"]


def test_an_invalid_object_is_reported_with_the_api_message(
    api: FakeKubeAPI, publisher: NRTPublisher
) -> None:
    api.store(nrt())
    api.hooks.append(
        lambda fake, call: (
            (422, status(422, "Invalid", "zones: Required value")) if call.method == "PUT" else None
        )
    )
    with pytest.raises(PublishError) as err:
        publisher.publish(nrt(available="2"))
    assert err.value.message == (
        "update noderesourcetopologies.topology.node.k8s.io/worker-1: 422 zones: Required value"
    )


def test_an_unreachable_api_server_is_a_publish_error(tmp_path: Path) -> None:
    with running(GROUP, VERSION, PLURAL) as api:
        url = api.url
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(url))  # nothing listens there any more
    publisher = NRTPublisher(cluster_client({"KUBECONFIG": str(config)}))
    with pytest.raises(PublishError) as err:
        publisher.publish(nrt())
    assert err.value.message.startswith("get noderesourcetopologies.topology.node.k8s.io/worker-1:")


def test_outside_a_cluster_without_kubeconfig() -> None:
    with pytest.raises(PublishError) as err:
        cluster_client({})
    assert err.value.message == (
        "no Kubernetes API configuration: not in a cluster (Service host/port is not set.) "
        "and KUBECONFIG is not set"
    )
    assert err.value.message.endswith("and KUBECONFIG is not set")


def test_a_broken_kubeconfig_is_named(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    with pytest.raises(PublishError) as err:
        cluster_client({"KUBECONFIG": str(config)})
    assert err.value.message.startswith(f"KUBECONFIG {config}: ")


def test_an_object_that_already_says_the_same_is_not_written(
    api: FakeKubeAPI, publisher: NRTPublisher
) -> None:
    stored = api.store({**nrt(), "metadata": {**nrt()["metadata"], "annotations": {"a": "b"}}})
    assert publisher.publish(nrt()) == "unchanged"
    assert [c.method for c in api.calls] == ["GET"]
    assert api.objects["worker-1"] == stored
    # A label of ours missing, or another zone content: written.
    assert publisher.publish(nrt(available="4")) == "updated"


def test_in_cluster_the_service_account_token_and_ca_are_used(tmp_path: Path) -> None:
    """What a pod has: KUBERNETES_SERVICE_HOST/PORT and the mounted service account (token and
    the cluster's CA); the API server speaks HTTPS with a certificate from that CA."""
    cert, key = self_signed(tmp_path)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token")  # projected tokens end without a newline
    (account / "ca.crt").write_bytes(cert.read_bytes())
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        port = api.url.rsplit(":", 1)[1]
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        publisher = NRTPublisher(cluster_client(env, account))
        assert publisher.publish(nrt()) == "created"
        # The scheme is case-insensitive (RFC 7235); the in-cluster loader writes "bearer".
        assert {c.headers["authorization"].lower() for c in api.calls} == {"bearer pod-token"}
        # The in-cluster configuration wins over a KUBECONFIG that points elsewhere.
        publisher = NRTPublisher(cluster_client({**env, "KUBECONFIG": "/nonexistent"}, account))
        assert publisher.publish(nrt(available="2")) == "updated"


def test_in_cluster_an_untrusted_api_server_is_refused(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    other_cert, _ = self_signed(other)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token")
    (account / "ca.crt").write_bytes(other_cert.read_bytes())  # not the server's CA
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        port = api.url.rsplit(":", 1)[1]
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        publisher = NRTPublisher(cluster_client(env, account))
        with pytest.raises(PublishError) as err:
            publisher.publish(nrt())
        assert api.calls == []  # no request reached it: the TLS handshake failed
    assert "CERTIFICATE_VERIFY_FAILED" in err.value.message


def test_objects_are_owned_by_the_installations_namespace(api: FakeKubeAPI, tmp_path: Path) -> None:
    """Deleting the namespace then garbage-collects the objects (node-feature-discovery does
    the same): no frozen numbers left for the scheduler after an uninstall."""
    api.others["/api/v1/namespaces/numascope"] = namespace("numascope", "ns-uid-1")
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(api.url))
    publisher = NRTPublisher(cluster_client({"KUBECONFIG": str(config)}), "numascope")
    assert publisher.publish(nrt()) == "created"
    owner = {"apiVersion": "v1", "kind": "Namespace", "name": "numascope", "uid": "ns-uid-1"}
    assert api.objects["worker-1"]["metadata"]["ownerReferences"] == [owner]
    assert publisher.publish(nrt()) == "unchanged"
    assert publisher.publish(nrt(available="2")) == "updated"
    assert api.calls_of("PUT")[0].body["metadata"]["ownerReferences"] == [owner]
    # The namespace was read once.
    assert [c.path for c in api.calls].count("/api/v1/namespaces/numascope") == 1
    # An object published before (without an owner) gets one.
    api.store(nrt(name="worker-2"))
    assert publisher.publish(nrt(name="worker-2")) == "updated"
    assert api.objects["worker-2"]["metadata"]["ownerReferences"] == [owner]


def test_an_unreadable_namespace_publishes_without_an_owner(
    api: FakeKubeAPI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(api.url))
    publisher = NRTPublisher(cluster_client({"KUBECONFIG": str(config)}), "numascope")
    assert publisher.publish(nrt()) == "created"  # the namespace GET was a 404
    assert "ownerReferences" not in api.objects["worker-1"]["metadata"]
    assert "namespace numascope not read (404): publishing without an owner" in caplog.text
    api.others["/api/v1/namespaces/numascope"] = namespace("numascope", "ns-uid-2")
    assert publisher.publish(nrt()) == "updated"  # tried again: now it is owned
    assert api.objects["worker-1"]["metadata"]["ownerReferences"][0]["uid"] == "ns-uid-2"


def test_the_pod_namespace(tmp_path: Path) -> None:
    assert pod_namespace({"POD_NAMESPACE": "ops"}, tmp_path) == "ops"
    assert pod_namespace({}, tmp_path) is None
    (tmp_path / "namespace").write_text("numascope")
    assert pod_namespace({}, tmp_path) == "numascope"


def test_a_vanished_token_file_is_a_publish_error(tmp_path: Path) -> None:
    """The token is read at every request (the kubelet rotates it in place): one that cannot
    be read fails that publish with a message naming the file, not with a traceback."""
    cert, key = self_signed(tmp_path)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token")
    (account / "ca.crt").write_bytes(cert.read_bytes())
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        port = api.url.rsplit(":", 1)[1]
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        publisher = NRTPublisher(cluster_client(env, account))
        (account / "token").unlink()
        with pytest.raises(PublishError) as err:
            publisher.publish(nrt())
        assert api.calls == []
    assert err.value.message.startswith("get noderesourcetopologies.topology.node.k8s.io/worker-1:")
    assert str(account / "token") in err.value.message
