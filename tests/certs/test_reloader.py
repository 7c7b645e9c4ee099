"""certs/reloader.py: the newest loadable pair is served to new handshakes, checked at most once
per interval; absent or half-written files keep what is served; a self-signed fallback is
presented until a pair loads, and without one nothing is."""

from __future__ import annotations

import logging
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509

from certs import CertificateAuthority, KeyPair
from certs.reloader import CertificateReloader, CertificateUnavailableError
from certs.serving import CertificateFiles
from tests.certs.tls_samples import handshake, write_pair


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create(common_name="reloader-test-ca")


def _issue(ca: CertificateAuthority) -> KeyPair:
    return ca.issue_serving(hosts=("localhost",))


def _reloader(
    directory: Path | None,
    clock: FakeClock,
    *,
    check_interval: float = 1.0,
    fallback_hosts: tuple[str, ...] = (),
) -> CertificateReloader:
    return CertificateReloader(
        files=None if directory is None else CertificateFiles.in_directory(directory),
        check_interval=check_interval,
        fallback_hosts=fallback_hosts,
        clock=clock,
    )


def test_first_load_reports_the_served_serial(tmp_path: Path, ca: CertificateAuthority) -> None:
    serial = write_pair(tmp_path, _issue(ca))
    reloader = _reloader(tmp_path, FakeClock())
    assert reloader.ready()
    assert reloader.loaded is not None and reloader.loaded.serial == serial
    assert reloader.current().minimum_version == ssl.TLSVersion.TLSv1_2
    assert reloader.source == str(tmp_path / "tls.crt")


def test_missing_files_without_a_fallback_are_not_ready_and_say_why(tmp_path: Path) -> None:
    reloader = _reloader(tmp_path, FakeClock())
    assert not reloader.ready()
    assert reloader.source == "nothing"
    with pytest.raises(CertificateUnavailableError, match=r"tls\.crt"):
        reloader.server_context()
    assert reloader.last_error is not None and "stat" in reloader.last_error


def test_without_a_fallback_the_files_are_looked_at_on_every_call_until_a_pair_loads(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    reloader = _reloader(tmp_path, FakeClock(), check_interval=60)
    assert not reloader.ready()
    serial = write_pair(tmp_path, _issue(ca))  # no time passes: nothing else to serve
    assert reloader.ready()
    assert reloader.loaded is not None and reloader.loaded.serial == serial


def test_files_are_checked_at_most_once_per_interval(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    first = write_pair(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    reloader.current()
    second = write_pair(tmp_path, _issue(ca))
    clock.now += 0.5
    reloader.current()
    assert reloader.loaded is not None and reloader.loaded.serial == first
    clock.now += 0.5
    reloader.current()
    assert reloader.loaded is not None and reloader.loaded.serial == second
    assert reloader.reloads == 1


def test_half_rotated_pair_keeps_the_previous_certificate_and_warns_once(
    tmp_path: Path, ca: CertificateAuthority, caplog: pytest.LogCaptureFixture
) -> None:
    first = write_pair(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    before = reloader.current()
    pair = _issue(ca)
    write_pair(tmp_path, pair, key=False)  # the new certificate with the old key: does not load
    with caplog.at_level(logging.WARNING, logger="certs.reloader"):
        for _ in range(3):
            clock.now += 1
            assert reloader.current() is before
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1  # one line per reason, not one per check
    assert warnings[0].startswith("cannot load certificate pair: ")
    assert warnings[0].endswith("(still serving the previous certificate)")
    assert reloader.loaded is not None and reloader.loaded.serial == first
    assert reloader.last_error is not None and "cannot load certificate pair" in reloader.last_error
    assert reloader.ready()  # still serving the previous pair
    second = write_pair(tmp_path, pair, cert=False)  # the key follows
    clock.now += 1
    assert reloader.current() is not before
    assert reloader.loaded is not None and reloader.loaded.serial == second
    assert reloader.last_error is None


def test_files_taken_away_keep_the_loaded_certificate(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    serial = write_pair(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    before = reloader.current()
    (tmp_path / "tls.crt").unlink()
    (tmp_path / "tls.key").unlink()
    clock.now += 1
    assert reloader.current() is before
    assert reloader.loaded is not None and reloader.loaded.serial == serial
    assert reloader.last_error is not None and "stat" in reloader.last_error


def test_unchanged_files_are_not_reloaded(tmp_path: Path, ca: CertificateAuthority) -> None:
    write_pair(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    context = reloader.current()
    for _ in range(3):
        clock.now += 5
        assert reloader.current() is context
    assert reloader.reloads == 0


def test_a_reloader_needs_files_or_a_fallback() -> None:
    with pytest.raises(ValueError, match="files, fallback hosts, or both"):
        _reloader(None, FakeClock())


def test_without_files_the_fallback_names_its_hosts() -> None:
    reloader = _reloader(None, FakeClock(), fallback_hosts=("metrics.ns.svc",))
    assert reloader.source == "self-signed"
    assert reloader.ready()
    assert handshake(reloader.current()).dns_names == ["metrics.ns.svc"]


def test_the_fallback_is_presented_until_the_pair_appears_then_each_renewal(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock, check_interval=5, fallback_hosts=("metrics.ns.svc",))
    assert reloader.source == "self-signed"  # the volume is not filled yet
    assert reloader.last_error is not None and "stat" in reloader.last_error
    first = write_pair(tmp_path, _issue(ca))
    # Something is presented meanwhile, so the files wait for the interval like any change.
    assert handshake(reloader.current()).dns_names == ["metrics.ns.svc"]
    clock.now += 5
    assert handshake(reloader.current()).serial == first
    assert reloader.source == str(tmp_path / "tls.crt") and reloader.reloads == 0
    renewed = write_pair(tmp_path, _issue(ca))
    clock.now += 5
    assert handshake(reloader.current()).serial == renewed
    assert reloader.reloads == 1


def test_a_half_written_pair_before_the_first_keeps_the_fallback(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    clock = FakeClock()
    write_pair(tmp_path, _issue(ca), key=False)
    (tmp_path / "tls.key").write_bytes(b"half a key")
    reloader = _reloader(tmp_path, clock, fallback_hosts=("metrics.ns.svc",))
    assert handshake(reloader.current()).dns_names == ["metrics.ns.svc"]
    assert reloader.last_error is not None and "cannot load certificate pair" in reloader.last_error
    assert reloader.loaded is None


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"]
)
def test_the_front_context_presents_the_rotated_certificate_to_new_handshakes(
    tmp_path: Path, ca: CertificateAuthority, version: ssl.TLSVersion
) -> None:
    first = write_pair(tmp_path, _issue(ca))
    reloader = _reloader(tmp_path, FakeClock(), check_interval=0.0)
    front = reloader.server_context()
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    client.minimum_version = client.maximum_version = version
    assert handshake(front, client=client).serial == first
    second = write_pair(tmp_path, _issue(ca))
    seen = handshake(front, client=client)
    assert seen.serial == second
    assert (
        seen.version
        == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
    )
    assert reloader.server_context() is front  # one front context for every listener


def test_threads_sharing_a_reloader_load_a_rotated_pair_once(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    write_pair(tmp_path, _issue(ca))
    clock = FakeClock()
    reloader = _reloader(tmp_path, clock)
    reloader.current()
    second = write_pair(tmp_path, _issue(ca))
    clock.now += 1
    start = threading.Barrier(8)
    seen: list[ssl.SSLContext] = []

    def handshake_thread() -> None:
        start.wait(5)
        seen.append(reloader.current())

    threads = [threading.Thread(target=handshake_thread) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(seen) == 8 and len({id(context) for context in seen}) == 1
    assert reloader.reloads == 1
    assert reloader.loaded is not None and reloader.loaded.serial == second


def test_the_fallbacks_certificate_is_what_a_client_trusts_until_the_files_load(
    tmp_path: Path,
) -> None:
    reloader = CertificateReloader(
        files=CertificateFiles.in_directory(tmp_path),
        check_interval=0.0,
        fallback_hosts=("fallback.ns.svc",),
    )
    assert reloader.fallback_cert_pem is not None
    fallback = x509.load_pem_x509_certificate(reloader.fallback_cert_pem)
    assert fallback.subject.rfc4514_string() == "CN=fallback.ns.svc"
    assert reloader.presents_files() is False
    write_pair(tmp_path, CertificateAuthority.create().issue_serving(hosts=("files.svc",)))
    assert reloader.presents_files() is True
