"""The Helm chart on the real node: install, a job, helm test, an upgrade under traffic,
rollback, uninstall.

The session's kustomize install is removed (``kubectl delete -k``) and the chart is installed with
the pinned ``helm`` as docs/how-to/install.md says for a namespace of the chart's own
(``kubectl create namespace mxjob-system``, then
``helm install ... -n mxjob-system --set namespace.create=true --take-ownership``: Pod Security
"restricted" enforced there), with values that only name the built images and
``pullPolicy: Never`` (no registry is reachable here) and the default certificate mode,
``in-cluster``: the controller makes the webhook's certificate and fills every caBundle. Then, in
order:

- admission works (a server-side dry run of a valid MXJob is admitted), timed from ``helm
  install``; the namespace enforces "restricted" and the operator's pods run in it, both
  controller replicas behind the progress Service; an MXJob runs to ``Succeeded`` in the
  examples' image;
- ``helm test`` passes (its pod, "restricted" too, sees an invalid MXJob refused by the webhook
  and a valid one defaulted and given a status by the controller) and leaves nothing behind;
  with the webhook scaled to 0 it fails, saying why, and passes again once the webhook is back;
- ``helm upgrade --reuse-values --set webhook.replicas=3`` while ``admission_traffic`` streams
  valid and invalid MXJobs: no wrong answer, 3 ready webhook pods after;
- ``helm rollback <release> 1``: back to 2 webhook pods;
- ``helm uninstall``: nothing of the release is left but the CRD and the namespace
  (``helm.sh/resource-policy: keep``), nor the Secrets the controller made (owned by its
  Deployment: the CA's key does not stay behind in the kept namespace).

At the end the CRD and the namespace are deleted as docs/how-to/upgrade-and-uninstall.md says and
the default kustomize install is put back for the session's other real-node tests, even when a step
failed.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import Api, NotFound
from localkube.realnode.cluster import SYSTEM_NAMESPACE, RealCluster
from localkube.thirdparty import helm
from tests.e2e.admission_traffic import admission_traffic, single_worker_job
from tests.e2e.helm_fixtures import (
    CRD,
    RELEASE,
    helm_or_require,
    parse,
    remove_release,
    values_file,
)
from tests.e2e.real_node_fixtures import (
    InstalledCluster,
    every_pod_of,
    namespace_for,
    pods_of,
    remove_namespace,
)
from tests.helpers import mxjobs, pods
from tests.helpers.waiting import wait_for

# Fixture set-up and teardown count against a test's time limit: removing and installing the
# operator on a loaded machine can take minutes. Helm is built in the background
# (build-helm): the module runs with the other modules that change the install, so the
# session's install is put back once for all of them (tests/e2e/real_node_fixtures.py).
pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.changes_install,
    pytest.mark.late_builds("build-helm"),
]

CRD_GROUP = "apiextensions.k8s.io/v1"
KEEP = "helm.sh/resource-policy"
TEST_POD = "mxjob-operator-test"
"""The name of the ``helm test`` hook's Pod (and its other objects, and its MXJob)."""
CLUSTER_SCOPED = {
    "/apis/rbac.authorization.k8s.io/v1/clusterroles": (
        "mxjob-controller", "mxjob-controller-webhook-certificates", "mxjob-operator-edit",
        "mxjob-operator-view", "mxjob-metrics-auth", "mxjob-metrics-reader",
        "mxjob-controller-ca-bundle",
    ),
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings": (
        "mxjob-controller", "mxjob-controller-webhook-certificates", "mxjob-metrics-auth",
        "mxjob-controller-ca-bundle",
    ),
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations": (
        "zz-mxjob-operator-mutating",
    ),
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": (
        "mxjob-operator-validating",
    ),
}  # fmt: skip
NAMESPACED = {
    "/api/v1/namespaces/{ns}/serviceaccounts": ("mxjob-controller", "mxjob-webhook"),
    "/api/v1/namespaces/{ns}/services": (
        "mxjob-webhook", "mxjob-webhook-metrics", "mxjob-controller-metrics",
        "mxjob-controller-progress",
    ),
    "/api/v1/namespaces/{ns}/secrets": ("mxjob-webhook-tls", "mxjob-webhook-ca"),
    "/api/v1/namespaces/{ns}/configmaps": ("mxjob-webhook-ca-bundle",),
    "/apis/apps/v1/namespaces/{ns}/deployments": ("mxjob-webhook", "mxjob-controller"),
    "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets": ("mxjob-webhook", "mxjob-controller"),
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles": (
        "mxjob-controller-leader-election", "mxjob-controller-webhook-certificates",
        "mxjob-controller-ca-bundle",
    ),
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings": (
        "mxjob-controller-leader-election", "mxjob-controller-webhook-certificates",
        "mxjob-controller-ca-bundle",
    ),
}  # fmt: skip
"""What the install makes, by name: the Secrets are the controller's (the serving pair, and the
CA's key apart), the rest the chart's."""


@dataclass
class HelmInstalled:
    installed: InstalledCluster
    helm: Path
    values: Path
    seconds_to_admission: float
    """From ``helm install`` to the first MXJob admitted through the webhook Service."""

    @property
    def cluster(self) -> RealCluster:
        return self.installed.cluster

    @property
    def api(self) -> Api:
        return self.installed.api

    def helm_run(self, *args: str, timeout: float = 300) -> str:
        return helm.run(
            self.helm, *args, "--namespace", SYSTEM_NAMESPACE,
            kubeconfig=self.cluster.plane.kubeconfig, timeout=timeout,
        ).stdout  # fmt: skip


def image_values(cluster: RealCluster) -> dict[str, Any]:
    """The built images, never pulled, and the namespace the chart makes: the only values the
    install sets."""
    images = {}
    for name, image in (
        ("webhook", cluster.images.webhook),
        ("controller", cluster.images.controller),
    ):
        repository, tag = image.ref.rsplit(":", 1)
        images[name] = {"repository": repository, "tag": tag, "pullPolicy": "Never"}
    return {"images": images, "namespace": {"create": True}}


@pytest.fixture(scope="module")
def helm_installed(real_cluster: InstalledCluster) -> Iterator[HelmInstalled]:
    binary = helm_or_require()
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "helm"
    work.mkdir(parents=True, exist_ok=True)
    values = values_file(work, "images", image_values(cluster))
    kubeconfig = cluster.plane.kubeconfig
    cluster.uninstall_operator(real_cluster.install_dir)
    try:
        started = time.monotonic()
        # docs/how-to/install.md, "Let the chart make a restricted namespace": made first, then
        # taken over by the chart.
        cluster.plane.kubectl("create", "namespace", SYSTEM_NAMESPACE)
        helm.run(
            binary, "install", RELEASE, str(helm.CHART), "--namespace", SYSTEM_NAMESPACE,
            "--values", str(values), "--take-ownership", kubeconfig=kubeconfig,
        )  # fmt: skip
        cluster.wait_admission(timeout=180)
        seconds = time.monotonic() - started
        yield HelmInstalled(real_cluster, binary, values, seconds)
    finally:
        try:
            # The session's install, put back later, starts from a cluster without the operator.
            remove_release(cluster.plane, binary)
        finally:
            real_cluster.put_back_later()


def ready_webhook_pods(installed: HelmInstalled) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in pods_of(installed.installed, "webhook")
        if any(c["type"] == "Ready" and c["status"] == "True"
               for c in p["status"].get("conditions", []))
    ]  # fmt: skip


def webhook_deployment(installed: HelmInstalled) -> dict[str, Any]:
    path = f"/apis/apps/v1/namespaces/{SYSTEM_NAMESPACE}/deployments/mxjob-webhook"
    deployment: dict[str, Any] = installed.api.request("GET", path)
    return deployment


def progress_endpoints(installed: HelmInstalled) -> tuple[set[str], set[tuple[str, int, str]]]:
    """The ready addresses and the ports of the progress Service's EndpointSlices."""
    slices = installed.api.request(
        "GET",
        f"/apis/discovery.k8s.io/v1/namespaces/{SYSTEM_NAMESPACE}/endpointslices",
        query=[("labelSelector", "kubernetes.io/service-name=mxjob-controller-progress")],
    )["items"]
    addresses = {
        address
        for piece in slices
        for endpoint in piece.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready")
        for address in endpoint["addresses"]
    }
    ports = {(p["name"], p["port"], p["protocol"]) for s in slices for p in s.get("ports") or []}
    return addresses, ports


def exists(api: Api, path: str) -> bool:
    try:
        api.request("GET", path)
    except NotFound:
        return False
    return True


def test_helm_install_runs_the_built_images_and_admits_through_the_webhook(
    helm_installed: HelmInstalled,
) -> None:
    status = json.loads(helm_installed.helm_run("status", RELEASE, "--output", "json"))
    assert (status["info"]["status"], status["version"]) == ("deployed", 1)
    for component in ("webhook", "controller"):
        pods = pods_of(helm_installed.installed, component)
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
        image = getattr(helm_installed.cluster.images, component).ref
        assert {p["spec"]["containers"][0]["image"] for p in pods} == {image}
    # The controller made the certificate (in-cluster) and owns it by its Deployment.
    secret = helm_installed.api.request(
        "GET", f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/secrets/mxjob-webhook-tls"
    )
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("Deployment", "mxjob-controller")
    assert helm_installed.seconds_to_admission < 180
    # Every controller replica, the standby too, takes its jobs' progress reports (8444).
    controllers = {p["status"]["podIP"] for p in pods_of(helm_installed.installed, "controller")}
    _, ports = wait_for(
        "both controller pods behind the progress Service",
        lambda: progress_endpoints(helm_installed),
        lambda found: found[0] == controllers,
        timeout=90,
    )
    assert ports == {("https-progress", 8444, "TCP")}


def test_an_mxjob_runs_to_succeeded_under_the_helm_install(helm_installed: HelmInstalled) -> None:
    namespace = namespace_for(helm_installed.installed, "helm-job")
    image = helm_installed.cluster.images.examples.ref
    job = single_worker_job("helm-job", image, ["python", "-c", "print('ran under helm')"])
    kubectl = helm_installed.cluster.plane.kubectl
    kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/helm-job"
    wait_for(
        "the job to succeed",
        lambda: helm_installed.api.request("GET", path).get("status", {}).get("state"),
        lambda state: state == "Succeeded",
        timeout=180,
    )
    logs = kubectl("logs", "-n", namespace, "helm-job-worker-0").stdout
    assert logs.strip() == "ran under helm"
    remove_namespace(helm_installed.installed, namespace)


def test_the_charts_namespace_enforces_pod_security_restricted(
    helm_installed: HelmInstalled,
) -> None:
    namespace = helm_installed.api.request("GET", f"/api/v1/namespaces/{SYSTEM_NAMESPACE}")
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["app.kubernetes.io/managed-by"] == "Helm"
    assert namespace["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE
    # What restricted refuses here: a pod that may escalate (the operator's pods passed).
    image = helm_installed.cluster.images.controller.ref
    pod = pods.pod("not-restricted", containers=[mxjobs.container("c", image=image)])
    refused = helm_installed.cluster.plane.kubectl(
        "create", "--dry-run=server", "-n", SYSTEM_NAMESPACE, "-f", "-",
        input_text=json.dumps(pod), check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and 'violates PodSecurity "restricted:latest"' in refused.stderr


def helm_test(installed: HelmInstalled) -> subprocess.CompletedProcess[str]:
    return helm.run(
        installed.helm, "test", RELEASE, "--namespace", SYSTEM_NAMESPACE, "--timeout=180s",
        kubeconfig=installed.cluster.plane.kubeconfig, check=False, timeout=200,
    )  # fmt: skip


def hook_pod_left(installed: HelmInstalled) -> bool:
    return exists(installed.api, f"/api/v1/namespaces/{SYSTEM_NAMESPACE}/pods/{TEST_POD}")


def test_helm_test_passes_and_leaves_nothing_behind(helm_installed: HelmInstalled) -> None:
    done = helm_test(helm_installed)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(rf"TEST SUITE:\s+{TEST_POD}\n.*\n.*\nPhase:\s+Succeeded", done.stdout), (
        done.stdout
    )
    # hook-succeeded: the test's objects and its MXJob are gone.
    assert not hook_pod_left(helm_installed)
    mxjobs = f"/apis/kubeflow.org/v1/namespaces/{SYSTEM_NAMESPACE}/mxjobs/{TEST_POD}"
    assert not exists(helm_installed.api, mxjobs)


def scale_webhook(installed: HelmInstalled, replicas: int) -> None:
    installed.cluster.plane.kubectl(
        "-n", SYSTEM_NAMESPACE, "scale", "deployment/mxjob-webhook", f"--replicas={replicas}"
    )  # fmt: skip
    wait_for(
        f"{replicas} webhook pods",
        lambda: every_pod_of(installed.installed, "webhook") if replicas == 0
        else ready_webhook_pods(installed),
        lambda pods: len(pods) == replicas,
        timeout=120,
    )  # fmt: skip


def test_helm_test_fails_when_the_webhook_is_down(helm_installed: HelmInstalled) -> None:
    """The hook cannot pass vacuously: with no webhook pod, ``failurePolicy: Fail`` refuses every
    MXJob, and the test says so; with the webhook back, it passes again."""
    try:
        scale_webhook(helm_installed, 0)
        done = helm_test(helm_installed)
        assert done.returncode != 0, done.stdout
        assert f"{TEST_POD} failed" in done.stderr, done.stderr
        # A failed test's pod stays (no hook-failed policy): its log says what it found.
        logs = helm_installed.cluster.plane.kubectl(
            "-n", SYSTEM_NAMESPACE, "logs", TEST_POD
        ).stdout  # fmt: skip
        assert "FAILED: the invalid MXJob was refused, not by the webhook" in logs, logs
        assert 'failed calling webhook "mutate.mxjobs.kubeflow.org"' in logs, logs
    finally:
        scale_webhook(helm_installed, 2)
        helm_installed.cluster.wait_admission(timeout=120)
    again = helm_test(helm_installed)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not hook_pod_left(helm_installed)


def test_helm_upgrade_to_three_webhook_replicas_answers_every_review_right(
    helm_installed: HelmInstalled,
) -> None:
    namespace = namespace_for(helm_installed.installed, "helm-upgrade")
    kubectl = helm_installed.cluster.plane.kubectl
    image = helm_installed.cluster.images.examples.ref
    with admission_traffic(kubectl, namespace=namespace, image=image, prefix="up") as traffic:
        helm_installed.helm_run(
            "upgrade", RELEASE, str(helm.CHART), "--reuse-values", "--set", "webhook.replicas=3"
        )
        wait_for(
            "3 ready webhook pods",
            lambda: ready_webhook_pods(helm_installed),
            lambda ready: len(ready) == 3,
            timeout=120,
        )
        # A few more reviews with the third replica serving.
        sent = traffic.sent["valid"]
        wait_for("3 more valid MXJobs sent", lambda: traffic.sent["valid"],
                 lambda count: count >= sent + 3, timeout=60)  # fmt: skip
    remove_namespace(helm_installed.installed, namespace)
    traffic.assert_no_wrong_answer()
    assert webhook_deployment(helm_installed)["spec"]["replicas"] == 3
    status = json.loads(helm_installed.helm_run("status", RELEASE, "--output", "json"))
    assert (status["info"]["status"], status["version"]) == ("deployed", 2)


def test_helm_rollback_to_the_first_revision_brings_back_two_replicas(
    helm_installed: HelmInstalled,
) -> None:
    helm_installed.helm_run("rollback", RELEASE, "1", "--wait", "--timeout=180s", timeout=200)
    assert webhook_deployment(helm_installed)["spec"]["replicas"] == 2
    wait_for(
        "the webhook back at two pods",
        lambda: every_pod_of(helm_installed.installed, "webhook"),
        lambda pods: len(pods) == 2,
        timeout=90,
    )
    history = json.loads(helm_installed.helm_run("history", RELEASE, "--output", "json"))
    assert [(h["revision"], h["status"]) for h in history] == [
        (1, "superseded"), (2, "superseded"), (3, "deployed")
    ]  # fmt: skip
    assert history[-1]["description"] == "Rollback to 1"
    helm_installed.cluster.wait_admission(timeout=60)


def test_helm_uninstall_leaves_nothing_of_the_release_but_the_crd_and_the_namespace(
    helm_installed: HelmInstalled,
) -> None:
    manifest = parse(helm_installed.helm_run("get", "manifest", RELEASE))
    released = {(d["kind"], d["metadata"]["name"]) for d in manifest}
    helm_installed.helm_run("uninstall", RELEASE, "--wait", "--timeout=180s", timeout=200)
    api = helm_installed.api
    # The Secrets go with their owner, the controller's Deployment, by garbage collection: the
    # namespace stays, but not the CA's key.
    paths = [f"{plural}/{name}" for plural, names in CLAIMED_BY_NAME.items() for name in names]
    wait_for(
        "every object of the release to be gone",
        lambda: [path for path in paths if exists(api, path)],
        lambda left: left == [],
        timeout=120,
    )
    assert not pods_of(helm_installed.installed, "webhook")
    assert not pods_of(helm_installed.installed, "controller")
    kept = {
        "CustomResourceDefinition": f"/apis/{CRD_GROUP}/customresourcedefinitions/{CRD}",
        "Namespace": f"/api/v1/namespaces/{SYSTEM_NAMESPACE}",
    }
    for path in kept.values():
        assert api.request("GET", path)["metadata"]["annotations"][KEEP] == "keep"
    # What was checked is what the release listed, less what it keeps and the Secrets (the
    # controller's, not the chart's).
    listed = sorted(name for kind, name in released if kind not in kept)
    assert listed == sorted(path.rsplit("/", 1)[1] for path in paths if "/secrets/" not in path)
    left = helm.run(
        helm_installed.helm, "list", "--all", "--namespace", SYSTEM_NAMESPACE, "--short",
        kubeconfig=helm_installed.cluster.plane.kubeconfig,
    ).stdout  # fmt: skip
    assert left.strip() == ""


CLAIMED_BY_NAME = {
    **CLUSTER_SCOPED,
    **{path.format(ns=SYSTEM_NAMESPACE): names for path, names in NAMESPACED.items()},
}
