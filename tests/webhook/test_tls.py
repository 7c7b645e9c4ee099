"""Serving certificates: TLS 1.2 floor, and rotated files served to new handshakes."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from certs import CertificateAuthority, KeyPair
from webhook.tls import CertificateReloader, CertificateUnavailableError, reloader_for


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create(common_name="webhook-test-ca")


def _issue(ca: CertificateAuthority) -> KeyPair:
    return ca.issue_serving(hosts=("127.0.0.1", "localhost"))


def _write(directory: Path, pair: KeyPair, *, cert: bool = True, key: bool = True) -> int:
    # Replace like a rotation does: a new file renamed over the old one.
    for wanted, name, data in ((cert, "tls.crt", pair.cert_pem), (key, "tls.key", pair.key_pem)):
        if wanted:
            temporary = directory / f".{name}.new"
            temporary.write_bytes(data)
            os.replace(temporary, directory / name)
    return pair.certificate.serial_number


def _reloader(directory: Path, clock: FakeClock) -> CertificateReloader:
    return CertificateReloader(
        cert_file=directory / "tls.crt",
        key_file=directory / "tls.key",
        check_interval=1.0,
        clock=clock,
    )


def test_first_load_reports_the_served_serial(tmp_path: Path, ca: CertificateAuthority) -> None:
    serial = _write(tmp_path, _issue(ca))
    reloader = _reloader(tmp_path, FakeClock())
    assert reloader.ready()
    assert reloader.loaded is not None and reloader.loaded.serial == serial
    assert reloader.current().minimum_version == ssl.TLSVersion.TLSv1_2


def test_missing_files_are_not_ready_and_say_why(tmp_path: Path) -> None:
    reloader = _reloader(tmp_path, FakeClock())
    assert not reloader.ready()
    with pytest.raises(CertificateUnavailableError, match=r"tls\.crt"):
        reloader.server_context()
    assert reloader.last_error is not None and "stat" in reloader.last_error


def test_files_are_checked_at_most_once_per_interval(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    first = _write(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    reloader.current()
    second = _write(tmp_path, _issue(ca))
    clock.now += 0.5
    reloader.current()
    assert reloader.loaded is not None and reloader.loaded.serial == first
    clock.now += 0.5
    reloader.current()
    assert reloader.loaded is not None and reloader.loaded.serial == second
    assert reloader.reloads == 1


def test_half_rotated_pair_keeps_the_previous_certificate(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    first = _write(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    before = reloader.current()
    pair = _issue(ca)
    _write(tmp_path, pair, key=False)  # the new certificate with the old key: does not load
    clock.now += 1
    assert reloader.current() is before
    assert reloader.loaded is not None and reloader.loaded.serial == first
    assert reloader.last_error is not None and "cannot load" in reloader.last_error
    assert reloader.ready()  # still serving the previous pair
    second = _write(tmp_path, pair, cert=False)  # the key follows
    clock.now += 1
    assert reloader.current() is not before
    assert reloader.loaded is not None and reloader.loaded.serial == second
    assert reloader.last_error is None


def test_unchanged_files_are_not_reloaded(tmp_path: Path, ca: CertificateAuthority) -> None:
    _write(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    context = reloader.current()
    for _ in range(3):
        clock.now += 5
        assert reloader.current() is context
    assert reloader.reloads == 0


def test_one_reloader_per_file_pair_and_process(tmp_path: Path) -> None:
    first = reloader_for(cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key")
    again = reloader_for(cert_file=tmp_path / "x" / ".." / "tls.crt", key_file=tmp_path / "tls.key")
    other = reloader_for(cert_file=tmp_path / "a.crt", key_file=tmp_path / "tls.key")
    assert first is again
    assert other is not first


class _Server:
    """A loopback TLS server that completes handshakes with one server context."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            try:
                with self.context.wrap_socket(raw, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError) as err:
                self.errors.append(str(err))

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def served(
    tmp_path: Path, ca: CertificateAuthority
) -> Iterator[tuple[CertificateReloader, _Server]]:
    _write(tmp_path, _issue(ca))
    reloader = CertificateReloader(
        cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key", check_interval=0.0
    )
    server = _Server(reloader.server_context())
    yield reloader, server
    server.close()


def _handshake(
    port: int, ca: CertificateAuthority, *, version: ssl.TLSVersion | None = None
) -> tuple[int, str]:
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    if version is not None:
        client.minimum_version = version
        client.maximum_version = version
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
        assert der is not None
        negotiated = tls.version() or ""
        tls.sendall(b".")
    return x509.load_der_x509_certificate(der).serial_number, negotiated


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"]
)
def test_new_handshakes_present_the_rotated_certificate(
    served: tuple[CertificateReloader, _Server],
    tmp_path: Path,
    ca: CertificateAuthority,
    version: ssl.TLSVersion,
) -> None:
    reloader, server = served
    assert reloader.loaded is not None
    assert _handshake(server.port, ca, version=version)[0] == reloader.loaded.serial
    new_serial = _write(tmp_path, _issue(ca))
    serial, negotiated = _handshake(server.port, ca, version=version)
    assert serial == new_serial
    assert (
        negotiated
        == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    )


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
def test_tls_below_1_2_is_refused_by_the_server(
    served: tuple[CertificateReloader, _Server], ca: CertificateAuthority
) -> None:
    _, server = served
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    # Let this client offer TLS 1.0/1.1 at all (OpenSSL's default security level forbids it),
    # so the refusal seen below is the server's protocol_version alert, not a local one.
    client.set_ciphers("DEFAULT:@SECLEVEL=0")
    client.minimum_version = ssl.TLSVersion.TLSv1
    client.maximum_version = ssl.TLSVersion.TLSv1_1
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
        pytest.raises(ssl.SSLError) as caught,
    ):
        client.wrap_socket(raw, server_hostname="127.0.0.1")
    assert caught.value.reason == "TLSV1_ALERT_PROTOCOL_VERSION"
    # The same permissive client gets in with TLS 1.2: the refusal above is about the version.
    client.maximum_version = ssl.TLSVersion.TLSv1_2
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw,
        client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() == "TLSv1.2"
        tls.sendall(b".")
