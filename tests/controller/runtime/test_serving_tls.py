"""controller/runtime/serving_tls.py: the metrics server presents the mounted pair once it is
there, follows its renewals, and a self-signed certificate before."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

from cryptography import x509

from certs.authority import CertificateAuthority
from controller.runtime.serving_tls import ServingCertificate


def presented(context: ssl.SSLContext) -> x509.Certificate:
    """The certificate a client sees when ``context`` answers its handshake."""
    server, client = socket.socketpair()
    seen: list[bytes] = []

    def serve() -> None:
        with context.wrap_socket(server, server_side=True) as tls:
            tls.recv(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_context = ssl.create_default_context()
    client_context.check_hostname = False
    client_context.verify_mode = ssl.CERT_NONE
    with client_context.wrap_socket(client) as tls:
        seen.append(tls.getpeercert(binary_form=True) or b"")
        tls.send(b"x")
    thread.join(5)
    return x509.load_der_x509_certificate(seen[0])


def write_pair(directory: Path, host: str) -> bytes:
    pair = CertificateAuthority.create().issue_serving(hosts=(host,))
    (directory / "tls.key").write_bytes(pair.key_pem)
    (directory / "tls.crt").write_bytes(pair.cert_pem)
    return pair.cert_pem


def names(certificate: x509.Certificate) -> list[str]:
    san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    return san.value.get_values_for_type(x509.DNSName)


def test_without_a_directory_a_self_signed_certificate_names_the_metrics_service() -> None:
    certificate = ServingCertificate(cert_dir=None, hosts=("metrics.ns.svc",))
    assert certificate.source == "self-signed"
    assert names(presented(certificate.context())) == ["metrics.ns.svc"]


def test_the_mounted_pair_is_presented_once_it_appears_and_again_when_renewed(
    tmp_path: Path,
) -> None:
    now = [0.0]
    certificate = ServingCertificate(
        cert_dir=tmp_path, hosts=("metrics.ns.svc",), check_interval=5, clock=lambda: now[0]
    )
    assert certificate.source == "self-signed"  # not mounted yet
    write_pair(tmp_path, "first.svc")
    assert names(presented(certificate.context())) == ["metrics.ns.svc"]  # not checked yet
    now[0] = 5.0
    assert names(presented(certificate.context())) == ["first.svc"]
    write_pair(tmp_path, "renewed.svc")
    now[0] = 10.0
    assert names(presented(certificate.context())) == ["renewed.svc"]


def test_a_half_written_pair_keeps_the_last_good_one(tmp_path: Path) -> None:
    write_pair(tmp_path, "good.svc")
    now = [0.0]
    certificate = ServingCertificate(
        cert_dir=tmp_path, hosts=("metrics.ns.svc",), check_interval=1, clock=lambda: now[0]
    )
    assert names(presented(certificate.context())) == ["good.svc"]
    (tmp_path / "tls.key").write_bytes(b"half a key")
    now[0] = 2.0
    assert names(presented(certificate.context())) == ["good.svc"]
    assert certificate.source == str(tmp_path)
