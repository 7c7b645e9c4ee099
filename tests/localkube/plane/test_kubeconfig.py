"""The one kubeconfig writer: self-contained, owner-only, readable by the project's client."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

from certs import CertificateAuthority
from controller.runtime.client import KubeClient
from localkube.plane.kubeconfig import write_kubeconfig


def test_a_kubeconfig_embeds_the_ca_and_the_client_certificate(tmp_path: Path) -> None:
    ca = CertificateAuthority.create(common_name="test-ca")
    pair = ca.issue_client(common_name="system:kube-proxy")
    path = write_kubeconfig(
        tmp_path / "pki" / "kube-proxy.kubeconfig",
        server="https://127.0.0.1:6443",
        ca=ca,
        cert_pem=pair.cert_pem,
        key_pem=pair.key_pem,
        cluster="mxjob-local",
        user="mxjob-admin",
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["kube-proxy.kubeconfig"]
    config = json.loads(path.read_text())
    assert config["current-context"] == "mxjob-local"
    assert config["contexts"] == [
        {"name": "mxjob-local", "context": {"cluster": "mxjob-local", "user": "mxjob-admin"}}
    ]
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca.pair.cert_pem
    user = config["users"][0]["user"]
    assert base64.b64decode(user["client-certificate-data"]) == pair.cert_pem
    assert base64.b64decode(user["client-key-data"]) == pair.key_pem


def test_the_projects_client_loads_it(tmp_path: Path) -> None:
    ca = CertificateAuthority.create(common_name="test-ca")
    pair = ca.issue_client(common_name="someone")
    path = write_kubeconfig(
        tmp_path / "k", server="https://127.0.0.1:1", ca=ca, cert_pem=b"", key_pem=b""
    )
    path = write_kubeconfig(  # written again: replaced whole
        path, server="https://127.0.0.1:2", ca=ca, cert_pem=pair.cert_pem, key_pem=pair.key_pem
    )
    KubeClient.from_kubeconfig(path)
    assert json.loads(path.read_text())["clusters"][0]["cluster"]["server"].endswith(":2")
