"""The certificate authority issues certificates that TLS peers and Kubernetes accept."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs import CertificateAuthority


def test_serving_certificate_names_its_hosts_and_is_signed_by_the_ca() -> None:
    ca = CertificateAuthority.create(common_name="test-ca")
    pair = ca.issue_serving(hosts=("mxjob-webhook.mxjob-system.svc", "127.0.0.1"))
    cert = pair.certificate
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["mxjob-webhook.mxjob-system.svc"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert cert.issuer == ca.pair.certificate.subject
    cert.verify_directly_issued_by(ca.pair.certificate)


def test_client_certificate_carries_user_and_groups_as_kubernetes_reads_them() -> None:
    ca = CertificateAuthority.create()
    cert = ca.issue_client(common_name="admin", organizations=("system:masters",)).certificate
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "admin"
    groups = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    assert groups == ["system:masters"]


def test_an_rsa_ca_names_its_hosts_keeps_its_key_as_pkcs1_and_issues_serving_certs() -> None:
    ca = CertificateAuthority.create(
        common_name="training-operator-ca", rsa_key=True, hosts=("training-operator-ca",)
    )
    assert ca.pair.key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    cert = ca.pair.certificate
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["training-operator-ca"]
    pair = ca.issue_serving(hosts=("training-operator.kubeflow.svc", "127.0.0.1"))
    pair.certificate.verify_directly_issued_by(cert)
    assert pair.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")


def test_serving_certificate_needs_a_host() -> None:
    with pytest.raises(ValueError, match="at least one host"):
        CertificateAuthority.create().issue_serving(hosts=())


def test_a_tls_client_trusting_the_ca_completes_a_handshake(tmp_path: Path) -> None:
    ca = CertificateAuthority.create()
    pair = ca.issue_serving(hosts=("localhost",))
    (tmp_path / "tls.crt").write_bytes(pair.cert_pem)
    (tmp_path / "tls.key").write_bytes(pair.key_pem)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        with server_context.wrap_socket(connection, server_side=True) as tls:
            tls.sendall(b"hello")

    thread = threading.Thread(target=serve)
    thread.start()
    client_context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        assert tls.recv(5) == b"hello"
    thread.join()
    listener.close()
