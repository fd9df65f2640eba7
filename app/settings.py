"""Process settings, read once from ``NUMASCOPE_*`` environment variables (or passed by tests).

``Settings`` is built once by whoever starts the process (``numascope serve``, the uvicorn
factory ``app.web.app:make_app``) and handed to ``create_app(settings)``; nothing else reads
the environment. Tests build their own ``Settings(...)`` instead of patching ``os.environ``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]

DEFAULT_DATABASE_URL = "sqlite:///./var/numascope.db"
DEFAULT_PODRESOURCES_SOCKET = "unix:///var/lib/kubelet/pod-resources/kubelet.sock"


class SettingsError(ValueError):
    """A setting has a value Numascope cannot use."""


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
    migrate_on_startup: bool = Field(
        default=True, description="Run 'alembic upgrade head' when the app starts."
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(h.strip() for h in value.split(",") if h.strip())
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
