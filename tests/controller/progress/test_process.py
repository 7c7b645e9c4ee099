"""controller/progress/process.py: the endpoint as the process's flags ask, and the CA the jobs'
pods are given, read anew each time (the files' CA once they are presented)."""

from __future__ import annotations

from pathlib import Path

from certs.authority import CertificateAuthority
from controller.progress.process import progress_serving
from controller.runtime.settings import from_args
from tests.certs.tls_samples import handshake, write_pair


def test_off_there_is_nothing_to_serve() -> None:
    assert progress_serving(from_args(["--no-progress-reports"], environ={})) is None


def test_the_bind_address_and_the_fallback_name_the_progress_service() -> None:
    serving = progress_serving(
        from_args(["--progress-bind-address=127.0.0.1:9444", "--lease-namespace=ops"], environ={})
    )
    assert serving is not None
    assert (serving.settings.host, serving.settings.port) == ("127.0.0.1", 9444)
    assert serving.settings.enabled
    assert handshake(serving.tls()).dns_names == [
        "mxjob-controller-progress.ops.svc",
        "mxjob-controller-progress.ops.svc.cluster.local",
    ]
    ca = serving.ca()
    assert ca is not None and ca.startswith(b"-----BEGIN CERTIFICATE-----")
    assert progress_serving(from_args([], environ={})) is not None, "on by default"


def test_the_pods_ca_is_the_mounted_pairs_once_it_is_presented(tmp_path: Path) -> None:
    authority = CertificateAuthority.create()
    write_pair(tmp_path, authority.issue_serving(hosts=("mxjob-controller-progress.ns.svc",)))
    (tmp_path / "ca.crt").write_bytes(authority.cert_pem)
    serving = progress_serving(from_args([f"--metrics-cert-dir={tmp_path}"], environ={}))
    assert serving is not None
    assert serving.ca() == authority.cert_pem
    assert handshake(serving.tls()).dns_names == ["mxjob-controller-progress.ns.svc"]
