"""The default install's certificates, made and kept by the controller, on the real node.

The session installs ``manifests/overlays/in-cluster`` with nothing run beforehand: no
``python -m certs``, no cert-manager. The controller (real containers, leader-elected) makes the
CA and serving certificate into the Secret the webhook pods mount, writes the CA into every
``caBundle`` (controller/certificates/keeper.py) and keeps them current. Each change below runs
while ``admission_traffic`` streams valid and invalid MXJobs through kube-apiserver where the
issue is that a review could fail: a ``caBundle`` that did not verify what a webhook pod serves
would refuse valid ones (``failurePolicy: Fail``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from cryptography import x509

from certs.rotation import ROTATE_ANNOTATION
from certs.stored import issued_by
from localkube.base.paths import PROJECT_ROOT
from localkube.realnode.cluster import SYSTEM_NAMESPACE
from tests.e2e.admission_traffic import admission_traffic
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, pods_of
from tests.e2e.webhook_serving import (
    bundle_certificates,
    ca_bundles,
    secret_data,
    served_serials,
)
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

SECRET = "mxjob-webhook-tls"
SECRETS = f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets"
OVERLAY = PROJECT_ROOT / "manifests" / "overlays" / "in-cluster"
DEPLOYMENTS = ("deployment/mxjob-webhook", "deployment/mxjob-controller")


def stored_leaf(installed: InstalledCluster) -> x509.Certificate:
    return x509.load_pem_x509_certificate(secret_data(installed.api, SECRET)["tls.crt"])


def stored_bundle(installed: InstalledCluster) -> list[x509.Certificate]:
    return bundle_certificates(secret_data(installed.api, SECRET)["ca.crt"])


def in_sync(installed: InstalledCluster) -> bool:
    """Every caBundle is the Secret's ``ca.crt`` and every webhook pod serves its ``tls.crt``."""
    try:
        data = secret_data(installed.api, SECRET)
    except Exception:  # not there (yet)
        return False
    leaf = x509.load_pem_x509_certificate(data["tls.crt"])
    bundles_match = all(pem == data["ca.crt"] for pem in ca_bundles(installed.api).values())
    return bundles_match and served_serials(installed) == {leaf.serial_number}


def wait_in_sync(installed: InstalledCluster, what: str, *, timeout: float = 120) -> None:
    wait_for(what, lambda: in_sync(installed), bool, timeout=timeout)


def annotate(installed: InstalledCluster, value: str) -> None:
    installed.plane.kubectl(
        "-n", SYSTEM_NAMESPACE, "annotate", "--overwrite", f"secret/{SECRET}",
        f"{ROTATE_ANNOTATION}={value}",
    )  # fmt: skip


def traffic_into(installed: InstalledCluster, name: str, prefix: str) -> Any:
    """Jobs streamed into a namespace of its own, at least 3 of each kind: a change of
    certificates is served within seconds, and the stream must not hold the test longer."""
    namespace = namespace_for(installed, name)
    image = installed.cluster.images.examples.ref
    return admission_traffic(installed.plane.kubectl, namespace=namespace, image=image,
                             prefix=prefix, at_least=3)  # fmt: skip


@contextmanager
def secret_events(installed: InstalledCluster) -> Iterator[list[str]]:
    """The types of the watch events of the Secret (``ADDED``, ``MODIFIED``, ``DELETED``)."""
    seen: list[str] = []
    stop = threading.Event()
    version = installed.api.request("GET", SECRETS)["metadata"]["resourceVersion"]

    def watch() -> None:
        query = [("watch", "1"), ("resourceVersion", version), ("timeoutSeconds", "300"),
                 ("fieldSelector", f"metadata.name={SECRET}")]  # fmt: skip
        for event in installed.api.watch(SECRETS, query=query, timeout=310):
            seen.append(str(event["type"]))
            if stop.is_set():
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()


def test_a_fresh_install_admits_within_seconds_with_no_local_step(
    real_cluster: InstalledCluster,
) -> None:
    rendered = real_cluster.plane.kubectl("kustomize", str(OVERLAY)).stdout
    assert "kind: Secret" not in rendered and "caBundle" not in rendered
    wait_in_sync(real_cluster, "the made Secret served and in every caBundle", timeout=60)
    secret = real_cluster.api.request("GET", f"{SECRETS}/{SECRET}")
    assert secret["type"] == "kubernetes.io/tls"
    owners = secret["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"]) for o in owners] == [("Deployment", "mxjob-controller")]
    leaf = stored_leaf(real_cluster)
    assert issued_by(leaf, stored_bundle(real_cluster)[0])
    lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert lifetime.days >= 365, lifetime
    webhook = real_cluster.api.request(
        "GET", f"/apis/apps/v1/namespaces/{SYSTEM_NAMESPACE}/deployments/mxjob-webhook"
    )
    volume = next(v for v in webhook["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    assert [item["key"] for item in volume["secret"]["items"]] == ["tls.crt", "tls.key"]
    assert real_cluster.seconds_to_rollout < 120, real_cluster.seconds_to_rollout


def test_a_forced_serving_rotation_is_served_with_nothing_refused(
    real_cluster: InstalledCluster,
) -> None:
    wait_in_sync(real_cluster, "the install in sync")
    before, bundles = stored_leaf(real_cluster), ca_bundles(real_cluster.api)
    with traffic_into(real_cluster, "certs-serving", "serving") as traffic:
        annotate(real_cluster, "serving")
        wait_for("a new serving certificate", lambda: stored_leaf(real_cluster).serial_number,
                 lambda serial: serial != before.serial_number, timeout=60)  # fmt: skip
        wait_in_sync(real_cluster, "every webhook pod serving it")
    traffic.assert_no_wrong_answer()
    assert ca_bundles(real_cluster.api) == bundles  # the same CA
    secret = real_cluster.api.request("GET", f"{SECRETS}/{SECRET}")
    assert ROTATE_ANNOTATION not in secret["metadata"].get("annotations", {})


def test_a_ca_replacement_is_trusted_before_it_is_served_with_nothing_refused(
    real_cluster: InstalledCluster,
) -> None:
    wait_in_sync(real_cluster, "the install in sync")
    old_ca = stored_bundle(real_cluster)[0]
    with traffic_into(real_cluster, "certs-ca", "ca") as traffic:
        annotate(real_cluster, "ca")
        wait_for("a new CA", lambda: stored_bundle(real_cluster)[0],
                 lambda ca: ca != old_ca, timeout=60)  # fmt: skip
        new_ca = stored_bundle(real_cluster)[0]
        wait_for("a serving certificate of the new CA", lambda: stored_leaf(real_cluster),
                 lambda leaf: issued_by(leaf, new_ca), timeout=60)  # fmt: skip
        wait_in_sync(real_cluster, "every webhook pod serving it")
    traffic.assert_no_wrong_answer()
    assert stored_bundle(real_cluster) == [new_ca, old_ca]  # the old one trusted a while more
    assert new_ca.public_key() != old_ca.public_key()


def test_a_cabundle_reset_by_kubectl_replace_is_repaired(real_cluster: InstalledCluster) -> None:
    wait_in_sync(real_cluster, "the install in sync")
    rendered = real_cluster.plane.kubectl("kustomize", str(OVERLAY)).stdout
    validating = next(
        doc for doc in rendered.split("\n---\n") if "kind: ValidatingWebhookConfiguration" in doc
    )
    real_cluster.plane.kubectl("replace", "-f", "-", input_text=validating)
    assert any(pem == b"" for pem in ca_bundles(real_cluster.api).values())
    wait_in_sync(real_cluster, "the caBundle put back", timeout=60)
    real_cluster.cluster.wait_admission(timeout=30)
    # The controller writes Events from a queue of their own, a moment after the repair.
    wait_for(
        "a Warning Event CABundleRepaired",
        lambda: real_cluster.api.request(
            "GET", f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/events",
            query=[("fieldSelector", f"involvedObject.name={SECRET}")],
        )["items"],
        lambda events: any(
            e["reason"] == "CABundleRepaired" and e["type"] == "Warning" for e in events
        ),
        timeout=30,
    )  # fmt: skip


def test_a_deleted_secret_is_remade_and_served_with_nothing_refused(
    real_cluster: InstalledCluster,
) -> None:
    wait_in_sync(real_cluster, "the install in sync")
    old = real_cluster.api.request("GET", f"{SECRETS}/{SECRET}")
    old_bundle = stored_bundle(real_cluster)
    with traffic_into(real_cluster, "certs-deleted", "deleted") as traffic:
        real_cluster.plane.kubectl("-n", SYSTEM_NAMESPACE, "delete", f"secret/{SECRET}")
        wait_for(
            "the Secret made again",
            lambda: real_cluster.api.request("GET", f"{SECRETS}/{SECRET}")["metadata"]["uid"],
            lambda uid: uid != old["metadata"]["uid"], timeout=60,
        )  # fmt: skip
        wait_in_sync(real_cluster, "every webhook pod serving the new Secret")
    traffic.assert_no_wrong_answer()
    bundle = stored_bundle(real_cluster)
    # The CA lives in a Secret of its own (mxjob-webhook-ca): the serving pair is issued again
    # by the same CA, and every caBundle stays as it was.
    assert bundle == old_bundle, "the CA the pods served from signs the new pair"
    assert issued_by(stored_leaf(real_cluster), bundle[0])


def restart_everything(installed: InstalledCluster) -> None:
    """Every webhook and controller pod deleted at once, with the Secret."""
    kubectl = installed.plane.kubectl
    kubectl("-n", SYSTEM_NAMESPACE, "delete", f"secret/{SECRET}", "--wait=false")
    kubectl("-n", SYSTEM_NAMESPACE, "delete", "pods", "--wait=false",
            "-l", "app.kubernetes.io/component in (webhook,controller)")  # fmt: skip


def test_three_webhooks_and_two_controllers_restarted_together_make_one_secret(
    real_cluster: InstalledCluster,
) -> None:
    kubectl = real_cluster.plane.kubectl
    wait_in_sync(real_cluster, "the install in sync")
    kubectl("-n", SYSTEM_NAMESPACE, "scale", "deployment/mxjob-webhook", "--replicas=3")
    try:
        kubectl("-n", SYSTEM_NAMESPACE, "rollout", "status", "--timeout=120s", *DEPLOYMENTS,
                timeout=130)  # fmt: skip
        old_uid = real_cluster.api.request("GET", f"{SECRETS}/{SECRET}")["metadata"]["uid"]
        with secret_events(real_cluster) as seen:
            restart_everything(real_cluster)
            wait_for("3 new webhook pods", lambda: len(pods_of(real_cluster, "webhook")),
                     lambda n: n == 3, timeout=60)  # fmt: skip
            kubectl("-n", SYSTEM_NAMESPACE, "rollout", "status", "--timeout=180s", *DEPLOYMENTS,
                    timeout=190)  # fmt: skip
            wait_in_sync(real_cluster, "all 3 webhook pods serving the one new Secret")
            real_cluster.cluster.wait_admission(timeout=60)
            events = list(seen)
        secret = real_cluster.api.request("GET", f"{SECRETS}/{SECRET}")
        assert secret["metadata"]["uid"] != old_uid
        assert events.count("ADDED") == 1, events
        assert events.index("ADDED") > events.index("DELETED"), events
        assert len(pods_of(real_cluster, "webhook")) == 3
    finally:
        kubectl("-n", SYSTEM_NAMESPACE, "scale", "deployment/mxjob-webhook", "--replicas=2")
        kubectl("-n", SYSTEM_NAMESPACE, "rollout", "status", "--timeout=120s", *DEPLOYMENTS,
                timeout=130)  # fmt: skip
