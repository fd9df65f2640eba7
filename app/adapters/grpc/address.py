"""Unix socket addresses as gRPC names them (grpc/grpc doc/naming.md: ``unix:///abs/path``,
``unix:relative/path``) or as a bare filesystem path; the PodResources client and server read
them the same way and word their own errors."""

from __future__ import annotations


def split_address(address: str) -> tuple[str | None, str]:
    """``(None, path)`` for an address naming a unix socket (the path may be empty:
    ``unix://``), ``(scheme, "")`` for a ``<scheme>://`` address of any other scheme."""
    if address.startswith("unix://"):
        return None, address[len("unix://") :]
    if address.startswith("unix:"):
        return None, address[len("unix:") :]
    if "://" in address:
        return address.split("://", 1)[0], ""
    return None, address
