"""The local control plane is a real Kubernetes API server: schemas, webhooks, GC, kubectl."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.api import Api, ApiError, ensure_namespace
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import wait_established
from tests.helpers.review_server import serving_reviews
from tests.helpers.waiting import wait_for

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.localkube.test"},
    "spec": {
        "group": "localkube.test",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {"size": {"type": "integer", "minimum": 1}},
                            }
                        },
                    }
                },
            }
        ],
    },
}


def test_applied_crd_becomes_established_and_enforces_its_schema(
    control_plane: ControlPlane, api: Api, namespace: str
) -> None:
    control_plane.kubectl("apply", "-f", "-", input_text=json.dumps(WIDGET_CRD))
    try:
        # Polled: kubectl wait fails outright on a CRD that has no conditions yet.
        wait_established(control_plane, "widgets.localkube.test", timeout=30)
        good = {
            "apiVersion": "localkube.test/v1",
            "kind": "Widget",
            "metadata": {"name": "ok", "namespace": namespace},
            "spec": {"size": 3},
        }
        control_plane.kubectl("apply", "-f", "-", input_text=json.dumps(good))
        bad = {**good, "metadata": {"name": "bad", "namespace": namespace}, "spec": {"size": "big"}}
        result = control_plane.kubectl("apply", "-f", "-", input_text=json.dumps(bad), check=False)
        assert result.returncode != 0
        assert "spec.size" in result.stderr
        assert (
            'Invalid value: "string"' in result.stderr or "must be of type integer" in result.stderr
        )
    finally:
        control_plane.kubectl("delete", "crd", "widgets.localkube.test", "--wait=false")


def _deny_forbidden(request: dict[str, Any]) -> dict[str, Any]:
    """A validating webhook's answer: deny ConfigMaps that carry the key ``forbidden``."""
    data = (request.get("object") or {}).get("data") or {}
    if "forbidden" not in data:
        return {"allowed": True}
    return {
        "allowed": False,
        "status": {"code": 403, "message": "data.forbidden: this key is not allowed here"},
    }


@pytest.fixture
def tls_webhook_server(tmp_path: Path) -> Iterator[tuple[str, bytes]]:
    """A small TLS server on loopback, trusted through a caBundle of a CA made by ``certs``."""
    with serving_reviews(_deny_forbidden, key_dir=tmp_path) as (port, ca_pem):
        yield f"https://127.0.0.1:{port}/validate", ca_pem


def test_api_server_calls_a_registered_tls_webhook_and_kubectl_shows_its_denial(
    control_plane: ControlPlane, namespace: str, tls_webhook_server: tuple[str, bytes]
) -> None:
    url, ca_pem = tls_webhook_server
    name = f"deny-forbidden-{namespace}"
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "deny.localkube.test",
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["configmaps"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 5,
            }
        ],
    }
    control_plane.kubectl("apply", "-f", "-", input_text=json.dumps(configuration))
    try:
        denied = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "denied", "namespace": namespace},
            "data": {"forbidden": "yes"},
        }

        # The configuration takes effect asynchronously: retry until the webhook answers.
        def denied_by_webhook() -> bool:
            result = control_plane.kubectl(
                "apply", "-f", "-", input_text=json.dumps(denied), check=False
            )
            if result.returncode == 0:
                control_plane.kubectl("delete", "configmap", "denied", "-n", namespace)
                return False
            assert "data.forbidden: this key is not allowed here" in result.stderr
            assert 'admission webhook "deny.localkube.test" denied the request' in result.stderr
            return True

        wait_for("the webhook to deny", denied_by_webhook, bool, timeout=20, interval=0.5)
        allowed = {
            **denied,
            "metadata": {"name": "allowed", "namespace": namespace},
            "data": {"fine": "yes"},
        }
        control_plane.kubectl("apply", "-f", "-", input_text=json.dumps(allowed))
    finally:
        control_plane.kubectl("delete", "validatingwebhookconfiguration", name)


def test_child_is_garbage_collected_within_10_s_of_its_owner_deletion(
    api: Api, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = api.request("POST", base, body={"metadata": {"name": "owner"}, "data": {}})
    api.request(
        "POST",
        base,
        body={
            "metadata": {
                "name": "child",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "name": "owner",
                        "uid": owner["metadata"]["uid"],
                        "blockOwnerDeletion": True,
                    }
                ],
            },
        },
    )
    api.request("DELETE", f"{base}/owner")

    def child_gone() -> bool:
        try:
            api.request("GET", f"{base}/child")
        except ApiError as error:
            return error.status == 404
        return False

    wait_for("the child garbage-collected", child_gone, bool, timeout=10)


def test_kubectl_is_the_built_one_and_talks_to_the_local_server(
    control_plane: ControlPlane,
) -> None:
    version = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    assert version["clientVersion"]["gitVersion"] == version["serverVersion"]["gitVersion"]
    assert version["serverVersion"]["gitVersion"].startswith("v1.")
    nodes = yaml.safe_load(control_plane.kubectl("get", "namespaces", "-o", "yaml").stdout)
    assert {"default", "kube-system"} <= {n["metadata"]["name"] for n in nodes["items"]}


def test_ensure_namespace_waits_out_a_namespace_being_deleted_and_makes_it_again(
    control_plane: ControlPlane, api: Api
) -> None:
    ensure_namespace(api, "comes-back")
    first = api.request("GET", "/api/v1/namespaces/comes-back")["metadata"]["uid"]
    control_plane.kubectl("delete", "namespace", "comes-back", "--wait=false")
    ensure_namespace(api, "comes-back")
    again = api.request("GET", "/api/v1/namespaces/comes-back")["metadata"]
    assert again["uid"] != first
    assert "deletionTimestamp" not in again
    api.request("GET", "/api/v1/namespaces/comes-back/serviceaccounts/default")


def test_ensure_namespace_names_a_namespace_whose_deletion_does_not_end(
    control_plane: ControlPlane, api: Api
) -> None:
    ensure_namespace(api, "held")
    held = {"name": "held", "finalizers": ["localkube.test/hold"]}
    api.request("POST", "/api/v1/namespaces/held/configmaps", body={"metadata": held})
    control_plane.kubectl("delete", "namespace", "held", "--wait=false")
    try:
        with pytest.raises(TimeoutError, match="namespace held is still being deleted after 7 s"):
            ensure_namespace(api, "held", timeout=7)
    finally:
        patch = [{"op": "remove", "path": "/metadata/finalizers"}]
        control_plane.kubectl(
            "patch", "configmap", "held", "-n", "held", "--type=json", "-p", json.dumps(patch)
        )
