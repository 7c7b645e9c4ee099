"""controller/runtime/serving_tls.py: the metrics server presents the mounted pair once it is
there, and before, or without a directory, a self-signed certificate for its Service.

How the files are watched is tested with certs/reloader.py (tests/certs/test_reloader.py)."""

from __future__ import annotations

from pathlib import Path

from certs.authority import CertificateAuthority
from controller.runtime.serving_tls import CHECK_INTERVAL, metrics_certificate
from tests.certs.tls_samples import handshake, write_pair


def test_without_a_directory_a_self_signed_certificate_names_the_metrics_service() -> None:
    certificate = metrics_certificate(cert_dir=None, namespace="ns")
    assert certificate.source == "self-signed"
    seen = handshake(certificate.current())
    assert seen.dns_names == ["mxjob-controller-metrics.ns.svc"]


def test_an_empty_directory_presents_the_self_signed_certificate_until_the_pair_is_mounted(
    tmp_path: Path,
) -> None:
    certificate = metrics_certificate(cert_dir=tmp_path, namespace="ns")
    assert certificate.source == "self-signed"
    assert certificate.check_interval == CHECK_INTERVAL
    pair = CertificateAuthority.create().issue_serving(hosts=("first.svc",))
    write_pair(tmp_path, pair)
    mounted = metrics_certificate(cert_dir=tmp_path, namespace="ns")
    assert handshake(mounted.current()).dns_names == ["first.svc"]
    assert mounted.source == str(tmp_path / "tls.crt")
