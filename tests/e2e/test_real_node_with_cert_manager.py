"""The cert-manager install on the real node, with the real cert-manager issuing and injecting.

cert-manager v1.21.1's controller and CA injector, built from its release source
(``localkube.thirdparty.cert_manager``), run beside the session's control plane. The session's
in-cluster install is removed (``kubectl delete -k``) and ``manifests/overlays/cert-manager`` is
applied as docs/how-to/install.md says, with plain ``kubectl apply -k`` of an overlay that only
names the built images and adds ``manifests/components/v1beta1`` (so conversion reviews are served
too). Nothing of the project writes a certificate or a caBundle on this path: cert-manager issues
the CA and the serving certificate, its injector fills every caBundle, and the webhook pods (real
containers) read the Secret as the kubelet mounts and refreshes it.

Renewals and the CA's renewal happen while ``admission_traffic`` streams valid and invalid MXJobs: a
caBundle that did not verify what a webhook pod serves would refuse the valid ones. At the end the
default install (``in-cluster``) is put back for the session's other real-node tests.

The module replaces the install the other real-node modules test, so it puts the default one back
even when removing its own fails: they pass whichever order the modules run in.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography import x509

from localkube.base.api import Api
from localkube.base.paths import PROJECT_ROOT
from localkube.realnode.cluster import SYSTEM_NAMESPACE, image_overlay
from localkube.thirdparty import cert_manager
from tests.e2e.admission_traffic import admission_traffic
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, pods_of, require
from tests.e2e.webhook_serving import (
    SERVICE_NAME,
    bundle_certificates,
    ca_bundles,
    secret_data,
    served_serials,
)
from tests.helpers.waiting import wait_for

# Fixture set-up and teardown count against a test's time limit: installing or removing a
# third-party component (or the session's node) on a loaded machine can take minutes.
# A component built in the background by make test: first test waits for it (late_builds).
pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.changes_install,
    pytest.mark.late_builds("third-party-cert-manager"),
]

BASE = "cert-manager"
LEAF, CA = "mxjob-webhook", "mxjob-webhook-ca"
LEAF_SECRET, CA_SECRET = "mxjob-webhook-tls", "mxjob-webhook-ca"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CM_PATH = f"/apis/cert-manager.io/v1/namespaces/{SYSTEM_NAMESPACE}/certificates"
V1BETA1_EXAMPLE = PROJECT_ROOT / "examples" / "v1beta1" / "train" / "mx_job_dist_gpu.yaml"


@dataclass
class CertManaged:
    installed: InstalledCluster
    manager: cert_manager.CertManager

    @property
    def api(self) -> Api:
        return self.installed.api

    def kubectl(self, *args: str, **kwargs: Any) -> Any:
        return self.installed.plane.kubectl(*args, **kwargs)


@pytest.fixture(scope="module")
def managed(real_cluster: InstalledCluster) -> Iterator[CertManaged]:
    require(cert_manager.missing())
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "cert-manager"
    cluster.uninstall_operator(real_cluster.install_dir)
    manager = cert_manager.CertManager(cluster.plane, work)
    try:
        manager.start()
        # With the v1beta1 component: the conversion webhook is then called on every read and
        # write, so cert-manager's CA injection into the CRD is exercised too.
        overlay = image_overlay(
            work / "install", images=cluster.images, base=BASE, components=("v1beta1",)
        )
        cluster.plane.kubectl("apply", "-k", str(overlay), timeout=90)
        cluster.plane.kubectl(
            "-n", SYSTEM_NAMESPACE, "wait", "--for=condition=Ready", "--timeout=120s",
            f"certificate/{CA}", f"certificate/{LEAF}", timeout=130,
        )  # fmt: skip
        cluster.plane.kubectl(
            "-n", SYSTEM_NAMESPACE, "rollout", "status", "--timeout=180s",
            "deployment/mxjob-webhook", "deployment/mxjob-controller", timeout=190,
        )  # fmt: skip
        cluster.wait_admission()
        yield CertManaged(real_cluster, manager)
    finally:
        try:
            cluster.uninstall_operator(work / "install", base=BASE)
        finally:
            manager.stop()
            real_cluster.put_back_later()


# -- what the cluster holds and the pods serve --------------------------------------------------
def pem_certificate(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def force_renewal(managed: CertManaged, name: str) -> None:
    """What ``cmctl renew`` does: an ``Issuing`` condition added through the status, unless one
    is there. The conditions are a list keyed by type, so a second ``Issuing`` is refused, and
    cert-manager adds one by itself when a spec change needs a new certificate: that issuance is
    then the renewal asked for. The patch is made against the version read (a ``test`` of its
    ``resourceVersion``), so cert-manager cannot add its own in between unseen."""
    path = f"{CM_PATH}/{name}"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Issuing", "status": "True", "reason": "ManuallyTriggered",
        "message": "Certificate re-issuance manually triggered", "lastTransitionTime": now,
    }  # fmt: skip

    def refusal() -> str | None:
        """None once an Issuing condition is there (ours or cert-manager's); else why the
        patch adding ours was refused (cert-manager wrote the status meanwhile)."""
        certificate = managed.api.request("GET", path)
        conditions = certificate.get("status", {}).get("conditions", [])
        if any(c["type"] == "Issuing" and c["status"] == "True" for c in conditions):
            return None
        version = certificate["metadata"]["resourceVersion"]
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "add", "path": "/status/conditions/-", "value": condition},
        ]
        done = managed.kubectl(
            "-n", SYSTEM_NAMESPACE, "patch", f"certificate/{name}", "--subresource=status",
            "--type=json", "-p", json.dumps(patch), check=False,
        )  # fmt: skip
        return None if done.returncode == 0 else str(done.stderr)

    wait_for(f"an Issuing condition on {name}", refusal, lambda why: why is None, timeout=30)


def leaf_serial(managed: CertManaged) -> int:
    return pem_certificate(secret_data(managed.api, LEAF_SECRET)["tls.crt"]).serial_number


def renewed_and_served(managed: CertManaged, before: int, *, timeout: float = 120) -> None:
    """Until the Secret holds a new serving certificate and every pod serves one of the new ones
    (with short lifetimes cert-manager may renew again meanwhile)."""
    issued: set[int] = set()

    def caught_up() -> bool:
        current = leaf_serial(managed)
        if current != before:
            issued.add(current)
        serving = served_serials(managed.installed)
        return bool(issued) and serving is not None and serving <= issued

    wait_for("every webhook pod to serve a renewed certificate", caught_up, bool, timeout=timeout)


# -- the tests ----------------------------------------------------------------------------------
def test_cert_manager_issues_the_ca_and_the_serving_certificate(managed: CertManaged) -> None:
    for name in (CA, LEAF):
        certificate = managed.api.request("GET", f"{CM_PATH}/{name}")
        ready = {c["type"]: c["status"] for c in certificate["status"]["conditions"]}
        assert ready.get("Ready") == "True", certificate["status"]
    secret = managed.api.request(
        "GET", f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets/{LEAF_SECRET}"
    )
    annotations = secret["metadata"]["annotations"]
    assert annotations["cert-manager.io/certificate-name"] == LEAF
    assert annotations["cert-manager.io/issuer-name"] == "mxjob-ca"
    leaf = secret_data(managed.api, LEAF_SECRET)
    ca = pem_certificate(secret_data(managed.api, CA_SECRET)["tls.crt"])
    served = pem_certificate(leaf["tls.crt"])
    assert served.issuer == ca.subject
    assert leaf["ca.crt"] == secret_data(managed.api, CA_SECRET)["tls.crt"]
    names = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert SERVICE_NAME in names.get_values_for_type(x509.DNSName)


def test_the_ca_injector_fills_every_ca_bundle_with_the_ca(managed: CertManaged) -> None:
    ca_pem = secret_data(managed.api, CA_SECRET)["ca.crt"]
    bundles = ca_bundles(managed.api)
    assert len(bundles) >= 3, bundles.keys()
    assert {where: pem == ca_pem for where, pem in bundles.items()} == dict.fromkeys(bundles, True)
    # Only the injector wrote them: the fields' manager in each object.
    for path in (
        f"{ADMISSION}/mutatingwebhookconfigurations/zz-mxjob-operator-mutating",
        f"{ADMISSION}/validatingwebhookconfigurations/mxjob-operator-validating",
        f"{CRDS}/mxjobs.kubeflow.org",
    ):
        fields = managed.api.request("GET", path)["metadata"]["managedFields"]
        writers = [f["manager"] for f in fields if "caBundle" in json.dumps(f.get("fieldsV1"))]
        assert writers and all("cainjector" in w for w in writers), (path, writers)


def test_the_webhook_pods_serve_it_and_admit_refuse_and_convert(managed: CertManaged) -> None:
    serial = leaf_serial(managed)
    wait_for("the pods to serve the issued certificate", lambda: served_serials(managed.installed),
             lambda found: found == {serial}, timeout=60)  # fmt: skip
    namespace = namespace_for(managed.installed, "cm-admission")
    image = managed.installed.cluster.images.examples.ref
    with admission_traffic(managed.kubectl, namespace=namespace, image=image,
                           prefix="first", at_least=3) as traffic:  # fmt: skip
        wait_for("a few jobs", lambda: traffic.sent["invalid"], lambda n: n >= 3, timeout=60)
    traffic.assert_no_wrong_answer()
    managed.kubectl("apply", "-n", namespace, "-f", str(V1BETA1_EXAMPLE))
    name = "mxnet-job"
    stored = managed.api.request(
        "GET", f"/apis/kubeflow.org/v1beta1/namespaces/{namespace}/mxjobs/{name}"
    )
    assert stored["apiVersion"] == "kubeflow.org/v1beta1"
    as_v1 = managed.api.request(
        "GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}"
    )
    assert as_v1["apiVersion"] == "kubeflow.org/v1"
    assert set(as_v1["spec"]["mxReplicaSpecs"]) == set(stored["spec"]["mxReplicaSpecs"])
    managed.kubectl("delete", "-n", namespace, "mxjob", name, "--wait=false")


def test_a_forced_renewal_is_served_without_a_restart_and_nothing_refused(
    managed: CertManaged,
) -> None:
    namespace = namespace_for(managed.installed, "cm-renewal")
    image = managed.installed.cluster.images.examples.ref
    bundles = ca_bundles(managed.api)
    restarts = {p["metadata"]["name"]: p["status"]["containerStatuses"][0]["restartCount"]
                for p in pods_of(managed.installed, "webhook")}  # fmt: skip
    with admission_traffic(managed.kubectl, namespace=namespace, image=image,
                           prefix="renew") as traffic:  # fmt: skip
        before = leaf_serial(managed)
        force_renewal(managed, LEAF)
        renewed_and_served(managed, before)
    traffic.assert_no_wrong_answer()
    assert ca_bundles(managed.api) == bundles  # a new serving certificate, the same CA
    after = {p["metadata"]["name"]: p["status"]["containerStatuses"][0]["restartCount"]
             for p in pods_of(managed.installed, "webhook")}  # fmt: skip
    assert after == restarts  # the same pods, no container restarted


def go_duration(text: str) -> datetime.timedelta:
    """A Certificate's ``duration`` as written (Go's notation: ``2160h``, ``1h30m0s``)."""
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert found and text, f"not a duration of hours, minutes and seconds: {text!r}"
    hours, minutes, seconds = (int(part or 0) for part in found.groups())
    return datetime.timedelta(hours=hours, minutes=minutes, seconds=seconds)


def served_lifetime_settles(managed: CertManaged, lifetime: datetime.timedelta) -> None:
    """Until the Secret holds a serving certificate of ``lifetime`` and every pod serves it."""

    def settled() -> bool:
        current = pem_certificate(secret_data(managed.api, LEAF_SECRET)["tls.crt"])
        served = current.not_valid_after_utc - current.not_valid_before_utc
        return served == lifetime and served_serials(managed.installed) == {current.serial_number}

    wait_for(f"every webhook pod to serve a certificate of {lifetime}", settled, bool, timeout=120)


def test_short_lived_certificates_renew_on_their_own_under_traffic(managed: CertManaged) -> None:
    """``duration: 1h``, ``renewBefore: 59m40s``: once re-issued with them, cert-manager renews
    the serving certificate every 20 s by itself; each is served with nothing refused. The
    overlay's lifetimes are put back after, and served, so later tests see a still certificate."""
    namespace = namespace_for(managed.installed, "cm-short")
    image = managed.installed.cluster.images.examples.ref
    original = managed.api.request("GET", f"{CM_PATH}/{LEAF}")["spec"]
    short = {"duration": "1h", "renewBefore": "59m40s"}
    before = leaf_serial(managed)
    managed.kubectl("-n", SYSTEM_NAMESPACE, "patch", f"certificate/{LEAF}", "--type=merge",
                    "-p", json.dumps({"spec": short}))  # fmt: skip
    try:
        force_renewal(managed, LEAF)  # the current certificate is still the 90-day one
        renewed_and_served(managed, before)
        serials = {leaf_serial(managed)}
        with admission_traffic(managed.kubectl, namespace=namespace, image=image,
                               prefix="short") as traffic:  # fmt: skip
            for _ in range(2):  # two renewals nobody asked for
                renewed_and_served(managed, leaf_serial(managed), timeout=90)
                serials.add(leaf_serial(managed))
        traffic.assert_no_wrong_answer()
        assert len(serials) >= 3
        served = pem_certificate(secret_data(managed.api, LEAF_SECRET)["tls.crt"])
        lifetime = served.not_valid_after_utc - served.not_valid_before_utc
        assert lifetime == datetime.timedelta(hours=1)
    finally:
        restore = {key: original[key] for key in short}
        managed.kubectl("-n", SYSTEM_NAMESPACE, "patch", f"certificate/{LEAF}", "--type=merge",
                        "-p", json.dumps({"spec": restore}))  # fmt: skip
        force_renewal(managed, LEAF)
        served_lifetime_settles(managed, go_duration(original["duration"]))


def test_a_replaced_ca_is_injected_everywhere_and_nothing_refused(managed: CertManaged) -> None:
    """The CA replaced, key and all (``rotationPolicy: Always`` for this test; the overlay keeps
    the key): the injector puts the new CA into every caBundle beside the old one, so the
    serving certificate of the old CA verifies until one of the new CA is served."""
    namespace = namespace_for(managed.installed, "cm-ca")
    image = managed.installed.cluster.images.examples.ref
    old_ca = secret_data(managed.api, CA_SECRET)["tls.crt"]
    policy = {"spec": {"privateKey": {"rotationPolicy": "Always"}}}
    managed.kubectl("-n", SYSTEM_NAMESPACE, "patch", f"certificate/{CA}", "--type=merge",
                    "-p", json.dumps(policy))  # fmt: skip
    with admission_traffic(managed.kubectl, namespace=namespace, image=image,
                           prefix="ca") as traffic:  # fmt: skip
        force_renewal(managed, CA)
        new_ca = wait_for("a new CA certificate",
                          lambda: secret_data(managed.api, CA_SECRET)["tls.crt"],
                          lambda pem: pem != old_ca, timeout=60)  # fmt: skip
        new = pem_certificate(new_ca)

        def every_bundle_trusts_the_new_ca() -> bool:
            return all(new in bundle_certificates(pem)
                       for pem in ca_bundles(managed.api).values())  # fmt: skip

        wait_for(
            "every caBundle to hold the new CA", every_bundle_trusts_the_new_ca, bool, timeout=60
        )
        bundles = [bundle_certificates(pem) for pem in ca_bundles(managed.api).values()]
        old_kept = all(pem_certificate(old_ca) in bundle for bundle in bundles)
        assert served_serials(managed.installed) == {
            leaf_serial(managed)
        }  # the old CA's, still trusted
        before = leaf_serial(managed)
        force_renewal(managed, LEAF)
        renewed_and_served(managed, before)
    traffic.assert_no_wrong_answer()
    old = pem_certificate(old_ca)
    assert old.serial_number != new.serial_number
    assert old.public_key() != new.public_key()  # a new key: a new CA, not a renewed one
    assert old_kept
    leaf = pem_certificate(secret_data(managed.api, LEAF_SECRET)["tls.crt"])
    assert leaf.issuer == new.subject
    leaf.verify_directly_issued_by(new)
