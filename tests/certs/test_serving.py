"""certs/serving.py: server contexts refuse TLS below 1.2, load a pair or refuse it, and a
self-signed one names its hosts."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from certs import CertificateAuthority
from certs.serving import CertificateFiles, new_server_context, self_signed_context
from tests.certs.tls_samples import handshake, write_pair


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create(common_name="serving-test-ca")


def test_the_files_of_a_directory_are_a_tls_secrets_keys(tmp_path: Path) -> None:
    files = CertificateFiles.in_directory(tmp_path)
    assert (files.cert_file, files.key_file) == (tmp_path / "tls.crt", tmp_path / "tls.key")


def test_a_loaded_pair_is_presented_with_tls_1_2_as_the_floor(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    serial = write_pair(tmp_path, ca.issue_serving(hosts=("localhost",)))
    context = new_server_context(cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key")
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    assert handshake(context, client=client, hostname="localhost").serial == serial


def test_a_key_that_does_not_match_its_certificate_is_refused(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    write_pair(tmp_path, ca.issue_serving(hosts=("localhost",)))
    write_pair(tmp_path, ca.issue_serving(hosts=("localhost",)), cert=False)
    with pytest.raises(ssl.SSLError):
        new_server_context(cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key")
    with pytest.raises(OSError):
        new_server_context(cert_file=tmp_path / "absent.crt", key_file=tmp_path / "tls.key")


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_tls_below_1_2_is_refused_by_the_server(tmp_path: Path, ca: CertificateAuthority) -> None:
    write_pair(tmp_path, ca.issue_serving(hosts=("localhost",)))
    context = new_server_context(cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key")
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    # Let this client offer TLS 1.0/1.1 at all (OpenSSL's default security level forbids it),
    # so the refusal seen below is the server's protocol_version alert, not a local one.
    client.set_ciphers("DEFAULT:@SECLEVEL=0")
    client.minimum_version = ssl.TLSVersion.TLSv1
    client.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises(ssl.SSLError) as caught:
        handshake(context, client=client)
    assert caught.value.reason == "TLSV1_ALERT_PROTOCOL_VERSION"
    # The same permissive client gets in with TLS 1.2: the refusal above is about the version.
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    assert handshake(context, client=client).version == "TLSv1.2"


def test_a_self_signed_context_names_its_hosts_and_refuses_tls_below_1_2() -> None:
    context = self_signed_context(hosts=("metrics.ns.svc", "metrics.ns"))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    seen = handshake(context)
    assert seen.dns_names == ["metrics.ns.svc", "metrics.ns"]
    assert seen.certificate.issuer == seen.certificate.subject
