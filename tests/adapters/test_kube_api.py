"""adapters/kube_api.py: finding and trusting the API server the way client-go and kubectl do,
against the fake API server over real HTTPS (``tests/fake_kube_api.py``): a CA file relative to
the kubeconfig or inline, a token file, merged ``KUBECONFIG`` files, skip-verify, a rotated
in-cluster token, client certificates, and the refusals an operator reads (exec plugins, a
missing context). The publisher's own calls are in test_nrt_publisher.py."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from app.adapters.kube_api import ApiError, KubeConfigError, cluster_client, from_kubeconfig
from app.adapters.nrt_publisher import GROUP, PLURAL, VERSION
from tests.fake_kube_api import kubeconfig, namespace, running, self_signed

NS = "/api/v1/namespaces/numascope"


def config_text(server: str, cluster: str, user: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters:\n- name: k\n  cluster:\n    server: {server}\n{cluster}"
        f"users:\n- name: u\n  user:\n{user}"
        "contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
    )


def test_a_ca_file_beside_the_kubeconfig_and_a_token_file(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    home = tmp_path / "kube"
    home.mkdir()
    (home / "ca.crt").write_bytes(cert.read_bytes())
    (home / "token").write_text("from-file\n")
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        api.others[NS] = namespace("numascope", "uid-1")
        config = home / "config"
        config.write_text(
            config_text(api.url, "    certificate-authority: ca.crt\n", "    tokenFile: token\n")
        )
        client = cluster_client({"KUBECONFIG": str(config)})
        assert client.request("GET", NS)["metadata"]["uid"] == "uid-1"
        assert api.calls[0].headers["authorization"] == "Bearer from-file"


def test_inline_ca_data_and_an_api_error(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    data = base64.b64encode(cert.read_bytes()).decode()
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        config = tmp_path / "config"
        config.write_text(
            config_text(api.url, f"    certificate-authority-data: {data}\n", "    token: inline\n")
        )
        client = from_kubeconfig(str(config))
        with pytest.raises(ApiError) as err:
            client.request("GET", NS)  # no such namespace in the fake: its 404 Status
        assert err.value.status == 404
        assert api.calls[0].headers["authorization"] == "Bearer inline"


def test_without_the_ca_the_server_is_refused_unless_told_to_skip(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        api.others[NS] = namespace("numascope", "uid-2")
        strict = tmp_path / "strict"
        strict.write_text(config_text(api.url, "", "    token: t\n"))
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            from_kubeconfig(str(strict)).request("GET", NS)
        lax = tmp_path / "lax"
        lax.write_text(
            config_text(api.url, "    insecure-skip-tls-verify: true\n", "    token: t\n")
        )
        assert from_kubeconfig(str(lax)).request("GET", NS)["metadata"]["uid"] == "uid-2"


def test_merged_kubeconfig_files_first_one_wins(tmp_path: Path) -> None:
    with running(GROUP, VERSION, PLURAL) as api:
        api.others[NS] = namespace("numascope", "uid-3")
        first = tmp_path / "first"
        first.write_text("current-context: c\nusers:\n- name: u\n  user:\n    token: first-token\n")
        second = tmp_path / "second"
        second.write_text(kubeconfig(api.url, token="second-token").replace("fake", "c"))
        second.write_text(
            second.read_text().replace("name: agent", "name: u").replace("user: agent", "user: u")
        )
        client = cluster_client({"KUBECONFIG": f"{first}:{second}"})
        assert client.request("GET", NS)["metadata"]["uid"] == "uid-3"
        assert api.calls[0].headers["authorization"] == "Bearer first-token"


def test_in_cluster_a_rotated_token_is_read_again(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    account = tmp_path / "sa"
    account.mkdir()
    (account / "ca.crt").write_bytes(cert.read_bytes())
    (account / "token").write_text("first")
    with running(GROUP, VERSION, PLURAL, tls=(cert, key)) as api:
        api.others[NS] = namespace("numascope", "uid-4")
        port = api.url.rsplit(":", 1)[1]
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        client = cluster_client(env, account)
        client.request("GET", NS)
        (account / "token").write_text("rotated")
        client.request("GET", NS)
    assert [c.headers["authorization"] for c in api.calls] == ["Bearer first", "Bearer rotated"]
    v6 = cluster_client(
        {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, account
    )
    assert v6.server == "https://[fd00::1]:443"


def test_in_cluster_without_a_token(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeConfigError) as err:
        cluster_client(env, tmp_path)
    assert str(err.value) == (
        f"no Kubernetes API configuration: not in a cluster (Service token file "
        f"{tmp_path}/token does not exist.) and KUBECONFIG is not set"
    )


def test_client_certificates_load_and_a_mismatched_pair_is_refused(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, other_key = self_signed(other)

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    good = tmp_path / "good"
    good.write_text(
        config_text(
            "https://127.0.0.1:6443",
            "",
            f"    client-certificate-data: {b64(cert)}\n    client-key-data: {b64(key)}\n",
        )
    )
    assert from_kubeconfig(str(good)).server == "https://127.0.0.1:6443"
    files = tmp_path / "files"
    files.write_text(
        config_text(
            "https://127.0.0.1:6443",
            "",
            f"    client-certificate: {cert}\n    client-key: {other_key}\n",
        )
    )
    with pytest.raises(KubeConfigError, match=r"^TLS material: "):
        from_kubeconfig(str(files))


@pytest.mark.parametrize(
    ("user", "message"),
    [
        (
            "    exec:\n      command: aws\n",
            "user 'u': exec plugins and auth providers are not supported; use a token, a "
            "token file or a client certificate",
        ),
        ("    client-key-data: eA==\n", "client-certificate-data and client-key-data go together"),
        (
            "    client-certificate-data: '!!'\n    client-key-data: eA==\n",
            "client-certificate-data is not base64",
        ),
    ],
)
def test_unusable_users_are_named(tmp_path: Path, user: str, message: str) -> None:
    config = tmp_path / "config"
    config.write_text(config_text("https://127.0.0.1:6443", "", user))
    with pytest.raises(KubeConfigError) as err:
        cluster_client({"KUBECONFIG": str(config)})
    assert str(err.value) == f"KUBECONFIG {config}: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("current-context: nowhere\n", "no context named 'nowhere'"),
        ("- a list\n", "{path}: not a kubeconfig (a mapping)"),
        ("clusters: []\n", "no current-context"),
    ],
)
def test_broken_kubeconfigs_are_named(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config"
    config.write_text(text)
    with pytest.raises(KubeConfigError) as err:
        from_kubeconfig(str(config))
    assert str(err.value) == message.format(path=config)
    with pytest.raises(KubeConfigError) as err:
        from_kubeconfig(str(tmp_path / "missing"))
    assert str(err.value) == f"{tmp_path / 'missing'}: No such file or directory"
