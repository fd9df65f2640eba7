"""Agents from DNS: every A and AAAA record of a headless Service (``NAME:PORT``), through
dnspython's asynchronous resolver. ``nameserver`` (``HOST:PORT``) points it at a DNS server of
one's choosing (tests run one on loopback); without it ``/etc/resolv.conf`` is used, search
domains included, as in a pod.
"""

from __future__ import annotations

import ipaddress

import dns.asyncresolver
import dns.exception
import dns.resolver


class DNSLookupError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def make_resolver(nameserver: str | None, timeout: float) -> dns.asyncresolver.Resolver:
    if nameserver:
        host, _, port = nameserver.rpartition(":")
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.nameservers = [host.strip("[]")]
        resolver.port = int(port)
    else:
        resolver = dns.asyncresolver.Resolver()
    resolver.lifetime = timeout
    resolver.timeout = timeout
    return resolver


async def resolve_addresses(resolver: dns.asyncresolver.Resolver, name: str) -> list[str]:
    """Every address of ``name`` (A then AAAA, each sorted); [] when the name exists without
    addresses. ``DNSLookupError`` when the name does not exist (NXDOMAIN) or the lookups fail:
    the caller keeps what it found before, as a resolver hiccup is not an empty Service."""
    found: list[str] = []
    errors: list[str] = []
    missing = 0
    for rdtype in ("A", "AAAA"):
        try:
            answer = await resolver.resolve(name, rdtype, search=True)
        except dns.resolver.NXDOMAIN:
            missing += 1
            continue
        except dns.resolver.NoAnswer:
            continue
        except dns.exception.DNSException as exc:
            errors.append(f"{rdtype}: {exc}")
            continue
        found.extend(sorted(r.to_text() for r in answer))
    if found:
        return found
    if errors:
        raise DNSLookupError(f"{name}: " + "; ".join(errors))
    if missing:
        raise DNSLookupError(f"{name}: no such name (NXDOMAIN)")
    return found


def agent_url(address: str, port: int) -> str:
    ip = ipaddress.ip_address(address)
    host = f"[{ip}]" if ip.version == 6 else str(ip)
    return f"http://{host}:{port}"
