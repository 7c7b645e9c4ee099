"""A control plane's certificates: a new CA per ``up``, the API server's serving certificate, the
admin's and the API server's kubelet client certificates, and the service-account signing key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from certs import CertificateAuthority, KeyPair, new_signing_key_pem
from localkube.plane.settings import KUBERNETES_SERVICE_IP

ADMIN = "mxjob-admin"
"""The admin's user name (``system:masters``), in the plane's kubeconfig too."""


@dataclass(frozen=True)
class PlanePki:
    """What the plane's kubeconfig needs of the certificates just written."""

    ca: CertificateAuthority
    admin: KeyPair


def write_pki(pki: Path, *, node_address: str | None = None) -> PlanePki:
    """Write a new CA and everything it signs into ``pki`` (each file mode 0600)."""
    pki.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create(common_name="mxjob-local-ca")
    serving = ca.issue_serving(
        hosts=(
            "127.0.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            KUBERNETES_SERVICE_IP,
            *((node_address,) if node_address else ()),
        ),
        common_name="kube-apiserver",
    )
    admin = ca.issue_client(common_name=ADMIN, organizations=("system:masters",))
    # How the API server proves itself to kubelets when it fetches logs (kubeadm's name).
    kubelet_client = ca.issue_client(
        common_name="kube-apiserver-kubelet-client", organizations=("system:masters",)
    )
    sa_private, sa_public = new_signing_key_pem()
    files = {
        "ca.crt": ca.pair.cert_pem,
        "ca.key": ca.pair.key_pem,
        "apiserver.crt": serving.cert_pem,
        "apiserver.key": serving.key_pem,
        "admin.crt": admin.cert_pem,
        "admin.key": admin.key_pem,
        "apiserver-kubelet-client.crt": kubelet_client.cert_pem,
        "apiserver-kubelet-client.key": kubelet_client.key_pem,
        "sa.key": sa_private,
        "sa.pub": sa_public,
    }
    for name, data in files.items():
        path = pki / name
        path.write_bytes(data)
        path.chmod(0o600)
    return PlanePki(ca=ca, admin=admin)


def load_ca(pki: Path) -> CertificateAuthority:
    """The CA :func:`write_pki` wrote, for issuing more certificates."""
    return CertificateAuthority.load(
        cert_pem=(pki / "ca.crt").read_bytes(), key_pem=(pki / "ca.key").read_bytes()
    )
