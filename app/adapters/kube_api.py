"""A small Kubernetes API client over httpx: where the API server is and how to authenticate,
as client-go and kubectl find it, and JSON requests answered with the API server's ``Status``.

Numascope makes a handful of REST calls (``nrt_publisher``); the official ``kubernetes``
package and what only it pulls in were 141 MB of the image's 223 MB of installed packages
(measured in a clean venv, issue 22), so this module does the part of it those calls need.

Configuration, first found wins (client-go's ``rest.InClusterConfig`` then kubectl's loading
rules, ``k8s.io/client-go/tools/clientcmd``):

* **in cluster**: ``KUBERNETES_SERVICE_HOST`` and ``KUBERNETES_SERVICE_PORT`` set, the service
  account's ``token`` and ``ca.crt`` mounted; ``https://HOST:PORT`` (an IPv6 host in brackets)
  verified against that CA, the token sent as a bearer token and read again for every request
  (bound tokens are rotated in place by the kubelet);
* **kubeconfig**: the files in ``KUBECONFIG`` (``:``-separated, merged as kubectl does: the first
  file to name a cluster, user or context, or to set ``current-context``, wins). The current
  context's cluster: ``server``, ``certificate-authority`` (relative to the file) or
  ``-data``, ``insecure-skip-tls-verify``; its user: ``token``,
  ``tokenFile``, ``client-certificate``/``client-key`` (or ``-data``), ``username``/``password``.
  Exec plugins and auth providers are refused with a message saying so.

A failing request raises ``ApiError`` (status, the Status's ``message`` else the reason
phrase); a connection, TLS or timeout failure raises ``httpx.TransportError``. Bad
configuration is ``KubeConfigError``.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
REQUEST_TIMEOUT = 10.0


class KubeConfigError(Exception):
    """No usable API configuration (the message says what is missing or wrong)."""


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message


class _BearerToken(httpx.Auth):
    """A bearer token, from a string or read from a file at every request."""

    def __init__(self, token: str | None = None, path: Path | None = None) -> None:
        self.token, self.path = token, path

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.token
        if self.path is not None:
            token = self.path.read_text().strip()
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


@dataclass
class KubeClient:
    """JSON requests to one API server."""

    server: str
    verify: ssl.SSLContext
    auth: httpx.Auth | None = None
    timeout: float = REQUEST_TIMEOUT
    _http: httpx.Client = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # No proxy from the environment: the API server is reached as configured.
        self._http = httpx.Client(
            base_url=self.server.rstrip("/"),
            verify=self.verify,
            auth=self.auth,
            timeout=self.timeout,
            trust_env=False,
            headers={"Accept": "application/json"},
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        """The decoded JSON answer of ``method path``; ``ApiError`` for an error status."""
        response = self._http.request(
            method,
            path,
            json=body,
            params=dict(params) if params else None,
        )
        if response.status_code >= 400:
            raise ApiError(response.status_code, _status_message(response))
        return response.json() if response.content else None

    def close(self) -> None:
        self._http.close()


def _status_message(response: httpx.Response) -> str:
    """The ``Status`` object's message, else the HTTP reason phrase."""
    try:
        doc = response.json()
    except ValueError:
        doc = None
    message = doc.get("message") if isinstance(doc, dict) else None
    return str(message) if message else response.reason_phrase


def in_cluster(environ: Mapping[str, str], service_account: Path) -> KubeClient:
    """The pod's own configuration (``KubeConfigError`` outside a cluster)."""
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError("Service host/port is not set.")
    token, ca = service_account / "token", service_account / "ca.crt"
    for path, what in ((token, "token"), (ca, "certificate")):
        if not path.is_file():
            raise KubeConfigError(f"Service {what} file {path} does not exist.")
        if not path.read_bytes().strip():
            raise KubeConfigError(f"Service {what} file {path} is empty.")
    try:
        ipaddress.IPv6Address(host)
        host = f"[{host}]"
    except ValueError:
        pass
    try:
        verify = ssl.create_default_context(cafile=str(ca))
    except ssl.SSLError as err:
        raise KubeConfigError(f"Service certificate file {ca}: {err}") from None
    return KubeClient(f"https://{host}:{port}", verify, _BearerToken(path=token))


def _named(docs: list[tuple[Path, dict[str, Any]]], kind: str, name: str) -> tuple[Path, dict]:
    for path, doc in docs:
        for entry in doc.get(kind) or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                inner = entry.get(kind[:-1])
                return path, inner if isinstance(inner, dict) else {}
    raise KubeConfigError(f"no {kind[:-1]} named {name!r}")


def _data(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise KubeConfigError(f"{what} is not base64") from None


def _file(base: Path, value: str) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def from_kubeconfig(paths: str) -> KubeClient:
    """The current context of the kubeconfig files ``paths`` (``KUBECONFIG`` syntax)."""
    docs = _kubeconfig_docs(paths)
    current = next((d["current-context"] for _, d in docs if d.get("current-context")), None)
    if not current:
        raise KubeConfigError("no current-context")
    _, context = _named(docs, "contexts", str(current))
    cluster_file, cluster = _named(docs, "clusters", str(context.get("cluster", "")))
    user_file, user = (
        _named(docs, "users", str(context["user"])) if context.get("user") else (Path(), {})
    )
    server = cluster.get("server")
    if not server:
        raise KubeConfigError(f"cluster {context.get('cluster')!r} has no server")
    if user.get("exec") or user.get("auth-provider"):
        raise KubeConfigError(
            f"user {context.get('user')!r}: exec plugins and auth providers are not supported; "
            "use a token, a token file or a client certificate"
        )
    try:
        verify = _server_trust(cluster, cluster_file.parent)
        _client_certificate(verify, user, user_file.parent)
    except (OSError, ssl.SSLError, UnicodeDecodeError) as err:
        raise KubeConfigError(f"TLS material: {err}") from None
    auth: httpx.Auth | None = None
    if user.get("token"):
        auth = _BearerToken(token=str(user["token"]))
    elif user.get("tokenFile"):
        auth = _BearerToken(path=Path(_file(user_file.parent, user["tokenFile"])))
    elif user.get("username"):
        auth = httpx.BasicAuth(str(user["username"]), str(user.get("password", "")))
    return KubeClient(str(server), verify, auth)


def _kubeconfig_docs(paths: str) -> list[tuple[Path, dict[str, Any]]]:
    """Each kubeconfig file of ``paths`` with its content, in order (the first to set a
    value wins, as kubectl merges them)."""
    docs: list[tuple[Path, dict[str, Any]]] = []
    for name in filter(None, paths.split(os.pathsep)):
        path = Path(name)
        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as err:
            raise KubeConfigError(f"{path}: {err.strerror}") from None
        except yaml.YAMLError as err:
            raise KubeConfigError(f"{path}: not YAML: {err}") from None
        if doc is not None and not isinstance(doc, dict):
            raise KubeConfigError(f"{path}: not a kubeconfig (a mapping)")
        docs.append((path, doc or {}))
    return docs


def _server_trust(cluster: dict[str, Any], base: Path) -> ssl.SSLContext:
    """The TLS context that checks the API server: the cluster's CA (inline or a file relative
    to its kubeconfig), else the system's; none with ``insecure-skip-tls-verify``."""
    if cluster.get("certificate-authority-data"):
        ca = _data(cluster["certificate-authority-data"], "certificate-authority-data")
        verify = ssl.create_default_context(cadata=ca.decode())
    elif cluster.get("certificate-authority"):
        verify = ssl.create_default_context(cafile=_file(base, cluster["certificate-authority"]))
    else:
        verify = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        verify.check_hostname = False
        verify.verify_mode = ssl.CERT_NONE
    return verify


def _client_certificate(context: ssl.SSLContext, user: dict[str, Any], base: Path) -> None:
    cert, key = user.get("client-certificate-data"), user.get("client-key-data")
    if cert or key:
        if not (cert and key):
            raise KubeConfigError("client-certificate-data and client-key-data go together")
        # ssl loads a certificate chain from files only: a private temporary directory.
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = Path(tmp, "client.crt"), Path(tmp, "client.key")
            cert_path.write_bytes(_data(cert, "client-certificate-data"))
            key_path.write_bytes(_data(key, "client-key-data"))
            context.load_cert_chain(str(cert_path), str(key_path))
    elif user.get("client-certificate") or user.get("client-key"):
        if not (user.get("client-certificate") and user.get("client-key")):
            raise KubeConfigError("client-certificate and client-key go together")
        context.load_cert_chain(
            _file(base, user["client-certificate"]), _file(base, user["client-key"])
        )


def cluster_client(
    environ: Mapping[str, str] | None = None,
    service_account: str | os.PathLike[str] = SERVICE_ACCOUNT_DIR,
) -> KubeClient:
    """In-cluster configuration, else ``$KUBECONFIG`` (``KubeConfigError`` naming both when
    neither is there, or naming the kubeconfig when it is unusable)."""
    env = os.environ if environ is None else environ
    try:
        return in_cluster(env, Path(service_account))
    except KubeConfigError as err:
        not_in_cluster = str(err)
    path = env.get("KUBECONFIG", "")
    if not path:
        raise KubeConfigError(
            f"no Kubernetes API configuration: not in a cluster ({not_in_cluster}) and "
            "KUBECONFIG is not set"
        )
    try:
        return from_kubeconfig(path)
    except KubeConfigError as err:
        raise KubeConfigError(f"KUBECONFIG {path}: {err}") from None
