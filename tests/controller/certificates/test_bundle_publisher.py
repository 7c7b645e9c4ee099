"""controller/certificates/bundle_publisher.py against the session's real API server: the
ConfigMap's ca.crt follows the validating configuration's caBundle, and nothing else."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from controller.certificates.bundle_publisher import CABundlePublisher, published_bundle
from controller.runtime.client import KubeClient

VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def configuration(name: str, *bundles: bytes) -> dict[str, Any]:
    hook = {
        "clientConfig": {"service": {"namespace": "nowhere", "name": "nothing", "port": 443}},
        "rules": [{"apiGroups": ["bundles.example.com"], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": ["widgets"]}],
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
    }  # fmt: skip
    webhooks = []
    for index, bundle in enumerate(bundles):
        config = {**hook["clientConfig"], "caBundle": base64.b64encode(bundle).decode()}  # type: ignore[dict-item]
        webhooks.append({**hook, "name": f"w{index}.bundles.example.com", "clientConfig": config})
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": webhooks,
    }


@pytest.fixture
def validating(api: KubeClient) -> Iterator[str]:
    name = f"v-{secrets.token_hex(3)}"
    api.request("POST", VALIDATING, body=configuration(name, b"CA-ONE\n", b"CA-ONE\n"))
    yield name
    api.request("DELETE", f"{VALIDATING}/{name}")


def test_only_a_bundle_every_webhook_agrees_on_is_published() -> None:
    assert published_bundle(configuration("v", b"A\n", b"A\n")) == "A\n"
    assert published_bundle(configuration("v", b"A\n", b"B\n")) is None
    assert published_bundle(configuration("v", b"", b"")) is None


def test_the_configmap_follows_the_ca_bundle_and_keeps_its_other_data(
    api: KubeClient, namespace: str, validating: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bundle"},
                 "data": {"note": "kept"}}  # fmt: skip
    api.request("POST", path, body=configmap)
    publisher = CABundlePublisher(
        api, namespace=namespace, configmap="bundle", validating=validating
    )
    assert publisher.sync_once() is True
    assert api.request("GET", f"{path}/bundle")["data"] == {"note": "kept", "ca.crt": "CA-ONE\n"}
    assert publisher.sync_once() is False  # unchanged: no write
    changed = api.request("GET", f"{VALIDATING}/{validating}")
    for hook in changed["webhooks"]:
        hook["clientConfig"]["caBundle"] = base64.b64encode(b"CA-TWO\n").decode()
    api.request("PUT", f"{VALIDATING}/{validating}", body=changed)
    assert publisher.sync_once() is True
    assert api.request("GET", f"{path}/bundle")["data"]["ca.crt"] == "CA-TWO\n"
    assert publisher.writes == 2


def test_without_its_configmap_nothing_is_written(
    api: KubeClient, namespace: str, validating: str
) -> None:
    publisher = CABundlePublisher(
        api, namespace=namespace, configmap="absent", validating=validating
    )
    assert publisher.sync_once() is False
    assert publisher.writes == 0
