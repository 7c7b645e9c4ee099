"""`python -m certs webhook` writes a Secret the webhook serves and the API server trusts."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.cli import SECRET_FILE_NAME, main, write_webhook_secret


def _secret(out: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((out / SECRET_FILE_NAME).read_text())
    return document


def _decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def test_secret_is_a_tls_secret_for_the_service_dns_name_signed_by_its_ca(tmp_path: Path) -> None:
    assert main(["webhook", "--out", str(tmp_path)]) == 0
    secret = _secret(tmp_path)
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["name"] == "mxjob-webhook-tls"
    assert secret["metadata"]["namespace"] == "mxjob-system"
    cert = x509.load_pem_x509_certificate(_decoded(secret, "tls.crt"))
    ca = x509.load_pem_x509_certificate(_decoded(secret, "ca.crt"))
    cert.verify_directly_issued_by(ca)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    names = san.get_values_for_type(x509.DNSName)
    assert "mxjob-webhook.mxjob-system.svc" in names
    assert "mxjob-controller-progress.mxjob-system.svc" in names, "the controller serves with it"
    key = serialization.load_pem_private_key(_decoded(secret, "tls.key"), password=None)
    assert key.public_key() == cert.public_key()


def test_service_and_namespace_name_the_certificate_and_the_secret(tmp_path: Path) -> None:
    write_webhook_secret(out=tmp_path, service="hook", namespace="ops", secret_name="hook-tls")
    secret = _secret(tmp_path)
    assert (secret["metadata"]["name"], secret["metadata"]["namespace"]) == ("hook-tls", "ops")
    cert = x509.load_pem_x509_certificate(_decoded(secret, "tls.crt"))
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [
        "hook.ops.svc",
        "hook.ops.svc.cluster.local",
        "mxjob-controller-progress.ops.svc",
        "mxjob-controller-progress.ops.svc.cluster.local",
    ]


def test_secret_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    write_webhook_secret(out=tmp_path)
    assert (tmp_path / SECRET_FILE_NAME).stat().st_mode & 0o777 == 0o600


def test_without_a_ca_dir_every_run_makes_a_new_ca(tmp_path: Path) -> None:
    write_webhook_secret(out=tmp_path)
    first = _decoded(_secret(tmp_path), "ca.crt")
    write_webhook_secret(out=tmp_path)
    assert _decoded(_secret(tmp_path), "ca.crt") != first


def test_a_kept_ca_renews_the_serving_certificate_under_the_same_ca_bundle(tmp_path: Path) -> None:
    out, ca_dir = tmp_path / "overlay", tmp_path / "ca"
    write_webhook_secret(out=out, ca_dir=ca_dir)
    first = _secret(out)
    assert (ca_dir / "ca.key").stat().st_mode & 0o777 == 0o600
    write_webhook_secret(out=out, ca_dir=ca_dir)
    second = _secret(out)
    assert (
        _decoded(second, "ca.crt") == _decoded(first, "ca.crt") == (ca_dir / "ca.crt").read_bytes()
    )
    assert _decoded(second, "tls.crt") != _decoded(first, "tls.crt")
    renewed = x509.load_pem_x509_certificate(_decoded(second, "tls.crt"))
    renewed.verify_directly_issued_by(x509.load_pem_x509_certificate(_decoded(first, "ca.crt")))


def test_a_ca_dir_with_only_half_a_ca_is_refused_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("orphan")
    with pytest.raises(FileExistsError, match=r"only one of ca\.crt and ca\.key"):
        write_webhook_secret(out=tmp_path / "out", ca_dir=tmp_path)
    assert (tmp_path / "ca.crt").read_text() == "orphan"
    assert not (tmp_path / "out").exists()


def test_validity_comes_from_valid_days(tmp_path: Path) -> None:
    write_webhook_secret(out=tmp_path, valid_days=30)
    cert = x509.load_pem_x509_certificate(_decoded(_secret(tmp_path), "tls.crt"))
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 30 <= lifetime.days <= 31


def test_a_lifetime_below_one_day_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["webhook", "--valid-days", "0"])
    assert exit_info.value.code == 2
    assert "--valid-days must be at least 1" in capsys.readouterr().err


def test_python_dash_m_certs_runs_the_cli(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "certs", "webhook", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"wrote {tmp_path / SECRET_FILE_NAME}" in result.stdout
    assert _secret(tmp_path)["type"] == "kubernetes.io/tls"
