"""What the webhook pods on the real node serve, and what the API server trusts them with.

Shared by the certificate tests of every install (cert-manager, in-cluster): the Secret's data,
every ``caBundle`` kube-apiserver uses to call the webhook, and the certificate each webhook pod
presents to a new TLS connection, verified as kube-apiserver verifies it.
"""

from __future__ import annotations

import base64
import socket
import ssl

from cryptography import x509

from localkube.base.api import Api
from localkube.realnode.cluster import SYSTEM_NAMESPACE
from tests.e2e.real_node_fixtures import InstalledCluster, pods_of

WEBHOOK_PORT = 9443
SERVICE_NAME = f"mxjob-webhook.{SYSTEM_NAMESPACE}.svc"
VALIDATE_HOOK = "validate.mxjobs.kubeflow.org"


def secret_data(api: Api, name: str) -> dict[str, bytes]:
    data = api.request("GET", f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets/{name}")["data"]
    return {key: base64.b64decode(value) for key, value in data.items()}


def ca_bundles(api: Api) -> dict[str, bytes]:
    """Every caBundle the API server uses to call the webhook, by where it is."""
    found: dict[str, bytes] = {}
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        path = f"/apis/admissionregistration.k8s.io/v1/{kind}"
        for item in api.request("GET", path)["items"]:
            if not item["metadata"]["name"].startswith("mxjob-operator"):
                continue
            for hook in item["webhooks"]:
                bundle = hook["clientConfig"].get("caBundle", "")
                found[f"{kind}/{hook['name']}"] = base64.b64decode(bundle)
    crd = api.request(
        "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mxjobs.kubeflow.org"
    )
    client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    found["crd/mxjobs.kubeflow.org conversion"] = base64.b64decode(client.get("caBundle", ""))
    return found


def served_certificate(pod_ip: str, ca_pem: bytes) -> x509.Certificate:
    """What a new TLS connection to one webhook pod is shown, verified as kube-apiserver does:
    against ``ca_pem`` for the Service's name."""
    context = ssl.create_default_context(cadata=ca_pem.decode())
    with (
        socket.create_connection((pod_ip, WEBHOOK_PORT), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=SERVICE_NAME) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def webhook_ips(installed: InstalledCluster) -> list[str]:
    return [p["status"]["podIP"] for p in pods_of(installed, "webhook") if p["status"].get("podIP")]


def bundle_certificates(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem) if pem.strip() else []


def served_serials(installed: InstalledCluster) -> set[int] | None:
    """The serials every webhook pod serves, each verified against the caBundle kube-apiserver
    uses for the validating webhook; None while one of them does not verify or answer."""
    bundle = ca_bundles(installed.api)[f"validatingwebhookconfigurations/{VALIDATE_HOOK}"]
    try:
        return {served_certificate(ip, bundle).serial_number for ip in webhook_ips(installed)}
    except (OSError, ssl.SSLError):
        return None
