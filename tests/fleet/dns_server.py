"""A tiny authoritative DNS server over UDP on loopback for the DNS-discovery tests (dnspython
builds and parses the messages): ``records`` maps a name to its addresses, A and AAAA answered
from it, anything else NXDOMAIN. Tests change ``records`` while the hub runs, as pods of a
headless Service come and go."""

from __future__ import annotations

import ipaddress
import socket
import threading

import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class DNSServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.records: dict[str, list[str]] = {}
        self.queries = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((host, 0))
        self._sock.settimeout(0.2)
        self.address = f"{host}:{self._sock.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="test-dns", daemon=True)

    def __enter__(self) -> DNSServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                query = dns.message.from_wire(data)
            except Exception:  # a malformed datagram: no answer, as a real server drops it
                continue
            self.queries += 1
            self._sock.sendto(self._answer(query).to_wire(), peer)

    def _answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text().rstrip(".").lower()
        addresses = self.records.get(name)
        if addresses is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
            return response
        version = 4 if question.rdtype == dns.rdatatype.A else 6
        if question.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
            matching = [a for a in addresses if ipaddress.ip_address(a).version == version]
            if matching:
                rrset = dns.rrset.from_text_list(
                    question.name, 1, dns.rdataclass.IN, question.rdtype, matching
                )
                response.answer.append(rrset)
        return response
