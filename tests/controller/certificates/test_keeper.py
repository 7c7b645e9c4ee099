"""webhook_certificates: the keeper's reads and writes against the session's real API server.

Each test gets its own webhook configurations and CRD (a test group no request ever matches, so
the shared plane's admission is untouched) and its own namespace for the Secret; the keeper is
pointed at them by name, as the controller points it at the install's.
"""

from __future__ import annotations

import base64
import datetime
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509

from certs.authority import CertificateAuthority
from certs.rotation import ROTATE_ANNOTATION, RotationPolicy
from certs.stored import issued_by, parse_bundle
from controller.certificates.cabundles import crd_site, webhook_site
from controller.certificates.keeper import (
    REPAIRED,
    CertificateTargets,
    WebhookCertificateKeeper,
)
from controller.runtime.client import AlreadyExists, KubeClient, NotFound
from controller.runtime.events import EventRecorder
from tests.helpers.waiting import wait_for

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _webhooks(kind: str, name: str, group: str) -> dict[str, Any]:
    hook = {
        "clientConfig": {"service": {"namespace": "nowhere", "name": "nothing", "port": 443}},
        "rules": [{"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"],
                   "resources": ["widgets"]}],
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
    }  # fmt: skip
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [{**hook, "name": f"a.{group}"}, {**hook, "name": f"b.{group}"}],
    }


def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "nowhere", "name": "nothing"}}}},
        },
    }  # fmt: skip


@pytest.fixture
def targets(api: KubeClient, namespace: str) -> Iterator[CertificateTargets]:
    group = f"certs-{secrets.token_hex(3)}.example.com"
    made = [
        (f"{ADMISSION}/mutatingwebhookconfigurations",
         _webhooks("MutatingWebhookConfiguration", f"m-{group}", group)),
        (f"{ADMISSION}/validatingwebhookconfigurations",
         _webhooks("ValidatingWebhookConfiguration", f"v-{group}", group)),
        (CRDS, _crd(group)),
    ]  # fmt: skip
    for path, body in made:
        api.request("POST", path, body=body)
    yield CertificateTargets(
        namespace=namespace, mutating=f"m-{group}", validating=f"v-{group}", crd=f"widgets.{group}"
    )
    for path, body in made:
        api.request("DELETE", f"{path}/{body['metadata']['name']}")


def keeper(
    api: KubeClient, targets: CertificateTargets, **options: Any
) -> WebhookCertificateKeeper:
    policy = RotationPolicy(hosts=targets.hosts, trust_settle=datetime.timedelta(0))
    return WebhookCertificateKeeper(api, targets=targets, policy=policy, **options)


def secret_of(
    api: KubeClient, targets: CertificateTargets, *, name: str | None = None
) -> dict[str, Any]:
    found: dict[str, Any] = api.request(
        "GET", f"/api/v1/namespaces/{targets.namespace}/secrets/{name or targets.secret}"
    )
    return found


def data_of(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def live_bundles(api: KubeClient, targets: CertificateTargets) -> list[bytes]:
    mutating = api.request("GET", f"{ADMISSION}/mutatingwebhookconfigurations/{targets.mutating}")
    validating = api.request(
        "GET", f"{ADMISSION}/validatingwebhookconfigurations/{targets.validating}"
    )
    crd_bundle = crd_site(api.request("GET", f"{CRDS}/{targets.crd}"))
    assert crd_bundle is not None
    return [
        *webhook_site("m", mutating).bundles,
        *webhook_site("v", validating).bundles,
        *crd_bundle.bundles,
    ]


def served_leaf(secret: dict[str, Any]) -> x509.Certificate:
    return x509.load_pem_x509_certificate(data_of(secret, "tls.crt"))


def test_a_missing_secret_is_made_and_every_cabundle_trusts_its_serving_certificate(
    api: KubeClient, targets: CertificateTargets
) -> None:
    keeper(api, targets).sync_once()
    secret = secret_of(api, targets)
    assert secret["type"] == "kubernetes.io/tls"
    bundle = data_of(secret, "ca.crt")
    assert live_bundles(api, targets) == [bundle] * 5
    assert issued_by(served_leaf(secret), parse_bundle(bundle)[0])
    managers = {
        entry["manager"]
        for entry in api.request("GET", f"{CRDS}/{targets.crd}")["metadata"]["managedFields"]
    }
    assert "mxjob-operator-certificates" in managers


def test_two_keepers_racing_on_a_missing_secret_leave_one_secret_that_both_then_keep(
    api: KubeClient, targets: CertificateTargets
) -> None:
    first, second = keeper(api, targets), keeper(api, targets)
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def race(one: WebhookCertificateKeeper) -> None:
        start.wait()
        try:
            one.sync_once()
            outcomes.append("wrote")
        except AlreadyExists:
            outcomes.append("lost")

    threads = [threading.Thread(target=race, args=(k,)) for k in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    made = secret_of(api, targets)
    first.sync_once()
    second.sync_once()  # the loser's next pass adopts the Secret the winner made
    after = secret_of(api, targets)
    assert "wrote" in outcomes, outcomes
    assert after["metadata"]["uid"] == made["metadata"]["uid"]
    assert data_of(after, "ca.crt") == data_of(made, "ca.crt")
    assert live_bundles(api, targets) == [data_of(after, "ca.crt")] * 5


def test_a_reset_cabundle_is_put_back_with_a_warning_event(
    api: KubeClient, targets: CertificateTargets
) -> None:
    recorder = EventRecorder(api)
    recorder.start()
    try:
        one = keeper(api, targets, recorder=recorder)
        one.sync_once()
        reset = [{"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "Zm9v"}]
        api.request(
            "PATCH", f"{ADMISSION}/validatingwebhookconfigurations/{targets.validating}",
            body=reset, content_type="application/json-patch+json",
        )  # fmt: skip
        one.sync_once()
        bundle = data_of(secret_of(api, targets), "ca.crt")
        assert live_bundles(api, targets) == [bundle] * 5
        events = wait_for(
            "a CABundleRepaired event on the Secret",
            lambda: api.request("GET", f"/api/v1/namespaces/{targets.namespace}/events")["items"],
            lambda items: any(e["reason"] == REPAIRED for e in items),
            timeout=20,
        )
        repaired = next(e for e in events if e["reason"] == REPAIRED)
        assert repaired["involvedObject"]["kind"] == "Secret"
        assert targets.validating in repaired["message"]
    finally:
        recorder.stop(timeout=2.0)


def test_a_ca_rotation_asked_by_annotation_moves_the_served_certificate_to_a_trusted_new_ca(
    api: KubeClient, targets: CertificateTargets
) -> None:
    one = keeper(api, targets)
    one.sync_once()
    before = secret_of(api, targets)
    before["metadata"].setdefault("annotations", {})[ROTATE_ANNOTATION] = "ca"
    api.request(
        "PUT", f"/api/v1/namespaces/{targets.namespace}/secrets/{targets.secret}", body=before
    )
    one.sync_once()  # the new CA joins every caBundle; the old certificate is still served
    joined = secret_of(api, targets)
    new_ca, old_ca = parse_bundle(data_of(joined, "ca.crt"))
    assert served_leaf(joined).serial_number == served_leaf(before).serial_number
    assert ROTATE_ANNOTATION not in joined["metadata"]["annotations"]
    one.sync_once()  # settled (trust_settle 0 here): served from the new CA
    moved = secret_of(api, targets)
    assert issued_by(served_leaf(moved), new_ca)
    assert parse_bundle(data_of(moved, "ca.crt")) == [new_ca, old_ca]
    assert live_bundles(api, targets) == [data_of(moved, "ca.crt")] * 5


def test_deleted_secrets_are_made_again_and_the_ca_pods_still_serve_from_stays_trusted(
    api: KubeClient, targets: CertificateTargets
) -> None:
    one = keeper(api, targets)
    one.sync_once()
    old_ca = parse_bundle(data_of(secret_of(api, targets), "ca.crt"))[0]
    for name in (targets.secret, targets.ca_secret):
        api.request("DELETE", f"/api/v1/namespaces/{targets.namespace}/secrets/{name}")
    with pytest.raises(NotFound):
        secret_of(api, targets)
    one.sync_once()
    remade = parse_bundle(data_of(secret_of(api, targets), "ca.crt"))
    assert remade[1:] == [old_ca] and remade[0] != old_ca


def test_the_ca_key_is_kept_apart_from_what_the_webhook_and_the_scrapers_read(
    api: KubeClient, targets: CertificateTargets
) -> None:
    keeper(api, targets).sync_once()
    serving, authority = secret_of(api, targets), secret_of(api, targets, name=targets.ca_secret)
    assert sorted(serving["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert sorted(authority["data"]) == ["ca.crt", "ca.key"] and authority["type"] == "Opaque"
    ca = CertificateAuthority.load(
        cert_pem=data_of(authority, "ca.crt"), key_pem=data_of(authority, "ca.key")
    )
    assert issued_by(served_leaf(serving), ca.pair.certificate)


def test_a_ca_key_kept_beside_the_serving_pair_moves_to_the_ca_secret_and_nothing_is_reissued(
    api: KubeClient, targets: CertificateTargets
) -> None:
    keeper(api, targets).sync_once()
    serving, authority = secret_of(api, targets), secret_of(api, targets, name=targets.ca_secret)
    # The layout of earlier releases: one Secret with the CA's key in it, and no CA Secret.
    serving["data"]["ca.key"] = authority["data"]["ca.key"]
    secrets_path = f"/api/v1/namespaces/{targets.namespace}/secrets"
    api.request("PUT", f"{secrets_path}/{targets.secret}", body=serving)
    api.request("DELETE", f"{secrets_path}/{targets.ca_secret}")
    keeper(api, targets).sync_once()
    moved, split = secret_of(api, targets), secret_of(api, targets, name=targets.ca_secret)
    assert "ca.key" not in moved["data"]
    assert split["data"] == authority["data"]
    assert moved["data"]["tls.crt"] == serving["data"]["tls.crt"]  # nothing re-issued


def test_a_deleted_serving_secret_is_issued_again_by_the_kept_ca(
    api: KubeClient, targets: CertificateTargets
) -> None:
    one = keeper(api, targets)
    one.sync_once()
    bundle = data_of(secret_of(api, targets), "ca.crt")
    api.request("DELETE", f"/api/v1/namespaces/{targets.namespace}/secrets/{targets.secret}")
    one.sync_once()
    remade = secret_of(api, targets)
    assert data_of(remade, "ca.crt") == bundle
    assert issued_by(served_leaf(remade), parse_bundle(bundle)[0])
    assert live_bundles(api, targets) == [bundle] * 5


def test_the_serving_certificate_names_the_webhook_first_and_the_progress_service() -> None:
    """The controller serves its jobs' progress reports with the webhook's pair
    (controller/runtime/serving_tls.py), so the pair names both Services; an older pair without
    the progress names is re-issued, as any pair that does not cover the hosts is
    (certs/rotation.py)."""
    assert CertificateTargets(namespace="ops").hosts == (
        "mxjob-webhook.ops.svc",
        "mxjob-webhook.ops.svc.cluster.local",
        "mxjob-controller-progress.ops.svc",
        "mxjob-controller-progress.ops.svc.cluster.local",
    )
