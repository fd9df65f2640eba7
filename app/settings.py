"""Process settings, read once from ``NUMASCOPE_*`` environment variables (or passed by tests).

``Settings`` is built once by whoever starts the process (``numascope serve``, the uvicorn
factory ``app.web.app:make_app``) and handed to ``create_app(settings)``; nothing else reads
the environment. Tests build their own ``Settings(...)`` instead of patching ``os.environ``.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]

DEFAULT_DATABASE_URL = "sqlite:///./var/numascope.db"
DEFAULT_PODRESOURCES_SOCKET = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"


class SettingsError(ValueError):
    """A setting has a value Numascope cannot use."""


_DNS_LABEL = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$")


def split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


AGENTS_FLAG = "--agents (NUMASCOPE_HUB_AGENTS)"
AGENTS_DNS_FLAG = "--agents-dns (NUMASCOPE_HUB_AGENTS_DNS)"


def _is_dns_name(name: str) -> bool:
    labels = name.rstrip(".").split(".")
    return 0 < len(name) <= 253 and all(_DNS_LABEL.match(label) for label in labels)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def check_agent_url(url: str) -> str:
    """An agent's base URL: ``http(s)://host[:port][/prefix]``, nothing after the path."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise SettingsError(
            f"{AGENTS_FLAG}: agent URL {url!r}: the port is not a number in 1-65535"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(f"{AGENTS_FLAG}: agent URL {url!r} must look like http://HOST:PORT")
    if parts.query or parts.fragment or parts.username or parts.password or port == 0:
        raise SettingsError(
            f"{AGENTS_FLAG}: agent URL {url!r} must be http(s)://HOST[:PORT][/PATH] without "
            "credentials, query or fragment"
        )
    if not (_is_ip(parts.hostname) or _is_dns_name(parts.hostname)):
        raise SettingsError(
            f"{AGENTS_FLAG}: agent URL {url!r}: {parts.hostname!r} is neither an IP address "
            "nor a DNS name"
        )
    return url


def check_dns_target(value: str, flag: str = AGENTS_DNS_FLAG) -> tuple[str, int]:
    """``NAME:PORT`` of a headless Service (``numascope-agents.numascope.svc:8000``)."""
    name, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"{flag}: {value!r} must be NAME:PORT with a port in 1-65535")
    if not _is_dns_name(name):
        raise SettingsError(f"{flag}: {value!r}: {name!r} is not a valid DNS name")
    return name, int(port)


class Settings(BaseSettings):
    """Everything the server needs to know about its surroundings."""

    model_config = SettingsConfigDict(
        env_prefix="NUMASCOPE_",
        case_sensitive=False,
        extra="ignore",
        frozen=True,
    )

    host: str = Field(default="127.0.0.1", description="Address the HTTP server binds to.")
    port: int = Field(default=8000, ge=0, le=65535, description="TCP port of the HTTP server.")
    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL; SQLite by default (its folder is created), Postgres via "
        "postgresql+psycopg://… with the 'postgres' extra.",
    )
    sysfs_root: Path = Field(
        default=Path("/sys"), description="Root of the sysfs tree to discover."
    )
    cpuinfo: bool = Field(
        default=True,
        description="Ask py-cpuinfo for the CPU model and flags during host discovery.",
    )
    kubelet_root: Path = Field(
        default=Path("/var/lib/kubelet"), description="Kubelet root directory (only ever read)."
    )
    podresources_socket: str = Field(
        default=DEFAULT_PODRESOURCES_SOCKET, description="PodResources gRPC socket of the kubelet."
    )
    kubelet_config_file: Path | None = Field(
        default=None,
        description="KubeletConfiguration file of the observed kubelet (only ever read); "
        "default <kubelet_root>/config.yaml when it exists.",
    )
    observe: bool = Field(
        default=None,
        validate_default=True,
        description="List the real node this process runs on (read-only). Default: on when the "
        "kubelet root dir or the PodResources socket exists.",
    )
    node_name: str | None = Field(
        default=None,
        validation_alias=AliasChoices("node_name", "NUMASCOPE_NODE_NAME", "NODE_NAME"),
        description="Name of the observed node (env NODE_NAME from the downward API); default "
        "the host name.",
    )
    podresources_dir: Path | None = Field(
        default=None,
        description="Serve each simulated node's PodResources on <dir>/<node>.sock (off by "
        "default).",
    )
    state_dir: Path = Field(
        default=Path("./var/nodes"), description="Where simulated nodes keep their state files."
    )
    demo: bool = Field(default=True, description="Load the demo simulated nodes at startup.")
    simulated: bool = Field(
        default=True,
        description="Keep simulated nodes (in the database). Off: no database, only the "
        "observed node (and a hub's); the lean node agent (issue 20 pt 7).",
    )
    log_level: LogLevel = Field(default="info", description="Log level of the server.")
    allowed_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="Host header values answered besides localhost, 127.0.0.1, ::1 and the "
        "bind address (comma-separated; '.example.org' matches subdomains, '*' anything): "
        "the Service name or pod IP of an agent behind a Service.",
    )
    watch_interval: float = Field(
        default=5.0,
        ge=0.2,
        le=3600.0,
        description="Seconds between a node page's checks for changes (live refresh).",
    )
    # -- the cluster (app.services.fleet.hub, app.services.nrt) --------------------------------
    hub: bool = Field(default=False, description="Run as the fleet hub: poll agents, /fleet.")
    hub_agents: str = Field(
        default="", description="Agents to poll: comma-separated http(s) URLs (static list)."
    )
    hub_agents_dns: str = Field(
        default="",
        description="NAME:PORT of a headless Service: every A/AAAA record is an agent "
        "(re-resolved every few seconds).",
    )
    hub_dns_nameserver: str | None = Field(
        default=None,
        description="HOST:PORT of the DNS server for --agents-dns (default: /etc/resolv.conf).",
    )
    hub_poll_interval: float = Field(
        default=2.0, gt=0, le=3600, description="Seconds between polls."
    )
    hub_agent_timeout: float = Field(
        default=2.0,
        gt=0,
        le=600,
        description="Deadline of one agent answer, whole (connect, headers and body).",
    )
    hub_concurrency: int = Field(
        default=32, ge=1, le=1024, description="Agents polled (or watch streams opened) at once."
    )
    hub_watch: bool = Field(
        default=True,
        description="Follow each agent's watch stream (an agent without one is polled); "
        "false: poll every agent.",
    )
    hub_watch_bookmark: float = Field(
        default=10.0,
        ge=0.1,
        le=300.0,
        description="Seconds between the bookmarks the hub asks of a watch stream (one silent "
        "for 3 of them is dropped and reconnected).",
    )
    hub_max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest agent answer read (bytes)."
    )
    hub_max_nodes_per_agent: int = Field(
        default=256, ge=1, le=5000, description="Nodes one agent may claim (else unreachable)."
    )
    hub_max_fanout: int = Field(
        default=5000,
        ge=1,
        le=100_000,
        description="Agent requests one fleet fit or upgrade check may make (the rest: not asked).",
    )
    hub_fleet_workers: int = Field(
        default=0,
        ge=0,
        le=8,
        description="Worker processes answering the demo fleet's fits and upgrade checks "
        "(0: one per CPU).",
    )
    demo_fleet: int = Field(
        default=0, ge=0, le=5000, description="Simulated nodes of the hub's own (fixed seed)."
    )
    publish_nrt: bool = Field(
        default=False,
        description="Publish the observed node as a NodeResourceTopology (in-cluster config, "
        "else $KUBECONFIG).",
    )
    nrt_interval: float = Field(default=10.0, gt=0, description="Seconds between NRT updates.")
    nrt_fingerprint_method: Literal["all", "with-exclusive-resources"] = Field(
        default="all",
        description="Which pods the NodeResourceTopology's pod fingerprint counts: all, or only "
        "pods holding exclusive CPUs, pinned memory or NUMA-local devices.",
    )
    hint_search_budget: int = Field(
        default=5_000_000,
        ge=0,
        description="Most NUMA-mask combinations the topology-hint search of one pod may "
        "examine (app.domain.hint_budget); beyond it the server refuses the pod (422) before "
        "searching. 0: no budget.",
    )
    cpu_time_budget: float = Field(
        default=20.0,
        gt=0,
        description="Seconds a CPU-heavy request (admission, dry run, inspection) may run off "
        "the event loop before it is stopped and answered with 503 (nothing kept).",
    )
    migrate_on_startup: bool = Field(
        default=True, description="Run 'alembic upgrade head' when the app starts."
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(h.strip() for h in value.split(",") if h.strip())
        return value

    @field_validator("hub_agents")
    @classmethod
    def _check_agents(cls, value: str) -> str:
        for url in split_list(value):
            check_agent_url(url)
        return value

    @field_validator("hub_agents_dns")
    @classmethod
    def _check_agents_dns(cls, value: str) -> str:
        if value.strip():
            check_dns_target(value.strip())
        return value.strip()

    @field_validator("hub_dns_nameserver")
    @classmethod
    def _check_nameserver(cls, value: str | None) -> str | None:
        if value:
            host, _, port = value.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise SettingsError(f"hub_dns_nameserver {value!r} must be HOST:PORT")
        return value or None

    @field_validator("publish_nrt")
    @classmethod
    def _publish_needs_observe(cls, value: bool, info: ValidationInfo) -> bool:
        # The object describes the node this process observes; there is none to publish.
        if value and not info.data.get("observe"):
            raise SettingsError(
                "publish_nrt: Invalid value: true: a NodeResourceTopology is published for the "
                "observed node: add --observe (with the kubelet's state dir or PodResources "
                "socket)"
            )
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_log_level(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        if "://" not in value:
            raise SettingsError(
                f"database_url {value!r} is not a SQLAlchemy URL (e.g. sqlite:///./var/numascope.db)"
            )
        return value

    @field_validator("podresources_socket")
    @classmethod
    def _check_socket(cls, value: str) -> str:
        path = value.removeprefix("unix://")
        if not path.startswith("/"):
            raise SettingsError(
                f"podresources_socket {value!r} must be an absolute unix socket path"
            )
        return value

    @field_validator("observe", mode="before")
    @classmethod
    def _default_observe(cls, value: object, info: ValidationInfo) -> object:
        if value is not None and value != "":
            return value
        root = info.data.get("kubelet_root")
        socket = info.data.get("podresources_socket")
        if isinstance(root, Path) and root.is_dir():
            return True
        return isinstance(socket, str) and Path(socket.removeprefix("unix://")).exists()

    @property
    def podresources_socket_path(self) -> Path:
        """The socket as a filesystem path (the ``unix://`` scheme is optional)."""
        return Path(self.podresources_socket.removeprefix("unix://"))
