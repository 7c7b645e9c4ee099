"""What the serving-certificate tests share: pairs written as a rotation writes them, and one real
TLS handshake against a server context, seen from the client."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from certs import KeyPair


def write_pair(directory: Path, pair: KeyPair, *, cert: bool = True, key: bool = True) -> int:
    """Replace ``tls.crt`` and/or ``tls.key`` like a rotation does (a new file renamed over the
    old one); returns the certificate's serial."""
    for wanted, name, data in ((cert, "tls.crt", pair.cert_pem), (key, "tls.key", pair.key_pem)):
        if wanted:
            temporary = directory / f".{name}.new"
            temporary.write_bytes(data)
            os.replace(temporary, directory / name)
    return pair.certificate.serial_number


@dataclass(frozen=True)
class Handshake:
    """What the client saw: the certificate presented, and the TLS version negotiated."""

    certificate: x509.Certificate
    version: str

    @property
    def serial(self) -> int:
        return self.certificate.serial_number

    @property
    def dns_names(self) -> list[str]:
        san = self.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        return san.value.get_values_for_type(x509.DNSName)


def unverifying_client() -> ssl.SSLContext:
    """A client that takes any certificate, to see which one a server presents."""
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    return client


def handshake(
    server: ssl.SSLContext, *, client: ssl.SSLContext | None = None, hostname: str = "localhost"
) -> Handshake:
    """One handshake over a socket pair, ``server`` answering; raises the client's
    ``ssl.SSLError`` when the handshake fails."""
    server_end, client_end = socket.socketpair()
    server_end.settimeout(5)
    client_end.settimeout(5)

    def serve() -> None:
        try:
            with server.wrap_socket(server_end, server_side=True) as tls:
                tls.recv(1)
        except (OSError, ssl.SSLError):
            server_end.close()  # the client sees the failure; nothing to add here

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with (client or unverifying_client()).wrap_socket(
            client_end, server_hostname=hostname
        ) as tls:
            der = tls.getpeercert(binary_form=True)
            version = tls.version() or ""
            tls.sendall(b".")
    finally:
        client_end.close()
        thread.join(5)
    assert der is not None
    return Handshake(x509.load_der_x509_certificate(der), version)
