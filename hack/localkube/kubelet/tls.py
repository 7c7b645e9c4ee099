"""The test kubelet's TLS identity, obtained from the cluster the way a kubelet does.

A kubelet with ``serverTLSBootstrap: true`` asks for its serving certificate with a
CertificateSigningRequest for the ``kubernetes.io/kubelet-serving`` signer, which
kube-controller-manager signs with the cluster CA once the request is approved; the API server
trusts that CA for kubelet connections (``--kubelet-certificate-authority``). The CA that signs
client certificates (and so the API server's ``--kubelet-client-certificate``) is published in
``kube-system/extension-apiserver-authentication``. The test kubelet does both through the API,
so it needs nothing but an API client (it approves its own request, as an administrator would).
"""

from __future__ import annotations

import base64
import ipaddress
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from localkube.base.api import Api
from localkube.kubelet.logserver import ServingTLS

CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
SIGNER = "kubernetes.io/kubelet-serving"


class BootstrapError(RuntimeError):
    """The serving certificate could not be obtained; the message says which step failed."""


def serving_request(*, node_name: str, ip: str) -> tuple[bytes, bytes]:
    """(PEM certificate request, PEM private key) in the shape the kubelet-serving signer takes.

    The signer insists on ``O=system:nodes``, ``CN=system:node:<node>`` and only DNS/IP names.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node_name}"),
        ]
    )
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(subject)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return request.public_bytes(serialization.Encoding.PEM), key_pem


def bootstrap(
    api: Api, *, node_name: str, ip: str = "127.0.0.1", timeout: float = 60
) -> ServingTLS:
    """Request, approve and collect a serving certificate for ``ip``; fetch the client CA."""
    request_pem, key_pem = serving_request(node_name=node_name, ip=ip)
    csr = api.request(
        "POST",
        CSR_PATH,
        body={
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"generateName": f"csr-{node_name}-"},
            "spec": {
                "request": base64.b64encode(request_pem).decode(),
                "signerName": SIGNER,
                "usages": ["digital signature", "server auth"],
            },
        },
    )
    name = csr["metadata"]["name"]
    csr.setdefault("status", {})["conditions"] = [
        {
            "type": "Approved",
            "status": "True",
            "reason": "TestKubeletServing",
            "message": "the test kubelet approves its own serving certificate",
        }
    ]
    api.request("PUT", f"{CSR_PATH}/{name}/approval", body=csr)
    deadline = time.monotonic() + timeout
    while True:
        status = api.request("GET", f"{CSR_PATH}/{name}").get("status", {})
        if status.get("certificate"):
            cert_pem = base64.b64decode(status["certificate"])
            break
        failed = [c for c in status.get("conditions", []) if c.get("type") == "Failed"]
        if failed:
            raise BootstrapError(f"CSR {name} failed: {failed[0].get('message')}")
        if time.monotonic() > deadline:
            raise BootstrapError(
                f"CSR {name} not signed after {timeout:g} s: is kube-controller-manager running "
                "the csrsigning controller with --cluster-signing-cert-file?"
            )
        time.sleep(0.05)
    authentication = api.request(
        "GET", "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
    )
    client_ca = authentication.get("data", {}).get("client-ca-file")
    if not client_ca:
        raise BootstrapError("extension-apiserver-authentication has no client-ca-file")
    return ServingTLS(cert_pem=cert_pem, key_pem=key_pem, client_ca_pem=client_ca.encode())
