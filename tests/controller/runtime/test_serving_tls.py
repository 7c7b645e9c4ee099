"""controller/runtime/serving_tls.py: the metrics server presents the mounted pair once it is
there, and before, or without a directory, a self-signed certificate for its Service.

How the files are watched is tested with certs/reloader.py (tests/certs/test_reloader.py)."""

from __future__ import annotations

from pathlib import Path

from certs.authority import CertificateAuthority
from controller.runtime.serving_tls import (
    CHECK_INTERVAL,
    metrics_certificate,
    progress_certificate,
    trust_anchor,
)
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


def test_the_progress_endpoints_fallback_names_the_progress_service_and_is_its_own_anchor() -> None:
    certificate = progress_certificate(cert_dir=None, namespace="ns")
    assert handshake(certificate.current()).dns_names == [
        "mxjob-controller-progress.ns.svc",
        "mxjob-controller-progress.ns.svc.cluster.local",
    ]
    assert trust_anchor(certificate, cert_dir=None) == certificate.fallback_cert_pem


def test_the_mounted_pairs_ca_is_the_anchor_once_the_pair_is_presented(tmp_path: Path) -> None:
    certificate = progress_certificate(cert_dir=tmp_path, namespace="ns")
    assert trust_anchor(certificate, cert_dir=tmp_path) == certificate.fallback_cert_pem
    authority = CertificateAuthority.create()
    pair = authority.issue_serving(hosts=("mxjob-controller-progress.ns.svc",))
    write_pair(tmp_path, pair)
    mounted = progress_certificate(cert_dir=tmp_path, namespace="ns")
    assert trust_anchor(mounted, cert_dir=tmp_path) == pair.cert_pem, "no ca.crt: the pair itself"
    (tmp_path / "ca.crt").write_bytes(authority.cert_pem)
    assert trust_anchor(mounted, cert_dir=tmp_path) == authority.cert_pem
