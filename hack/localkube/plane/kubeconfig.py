"""The one kubeconfig writer: a client certificate for one user of a control plane.

The plane's admin kubeconfig (``make cluster-up``'s ``.local/kubeconfig``), the real node's
programs (kubelet, kube-proxy, CoreDNS) and the third-party controllers each get one. The CA and
the client certificate are embedded, so a kubeconfig is one self-contained file that can be
copied anywhere; it is written owner-only and replaced atomically, so a reader never sees half
of it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from certs import CertificateAuthority


def kubeconfig(
    *,
    server: str,
    ca_pem: bytes,
    cert_pem: bytes,
    key_pem: bytes,
    cluster: str = "local",
    user: str = "user",
) -> dict[str, Any]:
    """A kubeconfig whose one context is ``user`` (a client certificate) at ``server``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(cert_pem),
                    "client-key-data": _b64(key_pem),
                },
            }
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca: CertificateAuthority,
    cert_pem: bytes,
    key_pem: bytes,
    cluster: str = "local",
    user: str = "user",
) -> Path:
    """Write :func:`kubeconfig` for a certificate ``ca`` issued to ``path`` (mode 0600)."""
    config = kubeconfig(
        server=server,
        ca_pem=ca.pair.cert_pem,
        cert_pem=cert_pem,
        key_pem=key_pem,
        cluster=cluster,
        user=user,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(config, indent=2))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


def _b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()
