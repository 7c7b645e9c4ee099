"""Kueue v0.10.6 on the real node, installed from its own ``config/``.

Kueue's manager is built from its release source (``hack/build-third-party.sh kueue``, the last
release line with the MXJob integration) into an image (``hack/kueue/Dockerfile``) that the real
node imports. It is installed as Kueue's ``config/default`` installs it: the components ``crd``,
``rbac``, ``manager``, ``internalcert`` and ``webhook``, the patches that mount its configuration
and its webhook certificate, its labels, the namespace ``kueue-system`` and the ``kueue-`` name
prefix, so Kueue's own certificate controller makes its webhook's certificate and caBundle. What
differs is for this machine: the image (built here, no registry, so ``imagePullPolicy: Never``),
the manager's CPU and memory requests (500m CPU asked for on a node of two CPUs the operator and
the jobs share: 100m here, limits as released), and what :func:`kustomization` leaves out. The
configuration is Kueue's own, whose ``integrations.frameworks`` include ``kubeflow.org/mxjob``,
with ``waitForPodsReady`` on (:func:`configuration`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import DockerfileImage, ensure_extra_image
from localkube.images.cache import BuiltImage
from localkube.realnode import containerd
from localkube.realnode.cluster import RealCluster
from localkube.realnode.node import node_bin_dir
from localkube.thirdparty.base import ReleaseSource

NAMESPACE = "kueue-system"
DEPLOYMENT = "kueue-controller-manager"
API_GROUP = "kueue.x-k8s.io"
COMPONENTS = ("crd", "rbac", "manager", "internalcert", "webhook")
MANAGER_REQUESTS = {"cpu": "100m", "memory": "256Mi"}
DEFAULT_PATCHES = ("manager_config_patch.yaml", "manager_webhook_patch.yaml")
"""``config/default``'s patches that mount the configuration and the webhook certificate."""


class KueueError(RuntimeError):
    """Kueue did not build, install or start; the message says why."""


SOURCE = ReleaseSource("kueue", "Kueue", "KUEUE_VERSION", KueueError)
"""Its build: ``bin/kueue`` and Kueue's ``config/``."""
archive = SOURCE.archive
missing = SOURCE.missing
build = SOURCE.build


def image(home: Path) -> BuiltImage:
    """Kueue's manager image, on the project's base (built when the binary changed)."""
    spec = DockerfileImage(
        name="kueue",
        dockerfile=PROJECT_ROOT / "hack" / "kueue" / "Dockerfile",
        context=home / "bin",
        ignore_file=PROJECT_ROOT / "hack" / "kueue" / "Dockerfile.dockerignore",
        repository="docker.io/mxjob-operator/kueue",
    )
    return ensure_extra_image(spec)


def released_image_name(config: Path) -> str:
    """The image name ``components/manager`` sets (its own ``images:`` entry), which an overlay
    must name to replace it."""
    manager = yaml.safe_load((config / "components" / "manager" / "kustomization.yaml").read_text())
    return str(manager["images"][0]["newName"])


WAIT_FOR_PODS_READY = {"enable": True, "timeout": "5m", "blockAdmission": False}
"""Kueue waits for a Workload's pods to be ready (the job's ``Running`` condition) and evicts it
when they are not within the timeout: on, so the tests see Kueue read that condition from the
operator's status; ``blockAdmission`` off, so admissions do not wait for each other."""


def configuration(released: Mapping[str, object]) -> dict[str, object]:
    """Kueue's own ``controller_manager_config.yaml`` with ``waitForPodsReady`` turned on."""
    return {**released, "waitForPodsReady": dict(WAIT_FOR_PODS_READY)}


def kustomization(*, image_ref: str, released_name: str) -> dict[str, object]:
    """Kueue's ``config/default`` without what this machine cannot run, and the two changes.

    Left out: the metrics proxy sidecar (``manager_auth_proxy_patch.yaml``: its image,
    kube-rbac-proxy, is not built here, and nothing reads Kueue's metrics) and the visibility
    API (an aggregated API server for pending-workload listings, which no test reads; kube-apiserver
    here has no front-proxy certificate to reach it, and an unavailable aggregated API stalls
    namespace deletion), so its feature gate ``VisibilityOnDemand`` is off.
    """
    repository, tag = image_ref.rsplit(":", 1)
    container_patch = [
        {"op": "replace", "path": "/spec/template/spec/containers/0/imagePullPolicy",
         "value": "Never"},
        {"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests",
         "value": MANAGER_REQUESTS},
        # Without the visibility API (left out, see above) its server must not start.
        {"op": "add", "path": "/spec/template/spec/containers/0/args/-",
         "value": "--feature-gates=VisibilityOnDemand=false"},
    ]  # fmt: skip
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": NAMESPACE,
        "namePrefix": "kueue-",
        "labels": [
            {
                "pairs": {
                    "app.kubernetes.io/name": "kueue",
                    "app.kubernetes.io/component": "controller",
                },
                "includeTemplates": True,
            },
            {"pairs": {"control-plane": "controller-manager"}, "includeSelectors": True},
        ],
        "resources": [f"../components/{name}" for name in COMPONENTS],
        "images": [{"name": released_name, "newName": repository, "newTag": tag}],
        "patches": [
            *({"path": name} for name in DEFAULT_PATCHES),
            {
                "target": {"kind": "Deployment", "name": "controller-manager"},
                "patch": json.dumps(container_patch),
            },
        ],
    }


def install(cluster: RealCluster, work: Path, *, timeout: float = 180) -> float:
    """Build (cached), import the image into the node, ``kubectl apply --server-side -k``, wait
    for the manager to be ready and its webhook to answer; the seconds from apply to that."""
    home = build()
    built = image(home)
    containerd.import_image(node_bin_dir(), cluster.node.containerd_paths.socket, built.archive)
    config = work / "config"
    shutil.rmtree(config, ignore_errors=True)
    shutil.copytree(home / "config", config)
    settings = config / "components" / "manager" / "controller_manager_config.yaml"
    settings.write_text(yaml.safe_dump(configuration(yaml.safe_load(settings.read_text()))))
    overlay = config / "real-node"
    overlay.mkdir()
    for name in DEFAULT_PATCHES:
        shutil.copy(config / "default" / name, overlay / name)
    (overlay / "kustomization.yaml").write_text(
        json.dumps(
            kustomization(image_ref=built.ref, released_name=released_image_name(config)),
            indent=2,
        )
        + "\n"
    )
    started = time.monotonic()
    applied = cluster.plane.kubectl(
        "apply", "--server-side", "-k", str(overlay), timeout=120, check=False
    )
    if applied.returncode != 0:
        raise KueueError(f"kubectl apply -k {overlay} failed:\n{applied.stderr}")
    cluster.plane.kubectl(
        "-n", NAMESPACE, "rollout", "status", f"deployment/{DEPLOYMENT}",
        f"--timeout={timeout:g}s", timeout=timeout + 10,
    )  # fmt: skip
    _wait_webhook(cluster, timeout=timeout)
    return time.monotonic() - started


def uninstall(cluster: RealCluster, work: Path) -> None:
    """Delete every Kueue object first, while the manager still runs to remove its finalizers
    (``kueue.x-k8s.io/resource-in-use`` on flavors, queues and workloads), then what
    :func:`install` applied. In the other order the CRDs stay terminating on objects nobody
    finalizes any more, and ``kubectl delete --wait`` times out."""
    # Unchecked: api-resources exits non-zero when any API group fails discovery, though it
    # lists the others; ``delete -k`` below says what went wrong if Kueue's own did.
    kinds = cluster.plane.kubectl(
        "api-resources", f"--api-group={API_GROUP}", "--verbs=delete", "-o", "name", check=False
    ).stdout.split()
    if kinds:
        cluster.plane.kubectl(
            "delete", ",".join(kinds), "--all", "--all-namespaces", "--ignore-not-found",
            "--wait", "--timeout=120s", timeout=130,
        )  # fmt: skip
    cluster.plane.kubectl(
        "delete", "-k", str(work / "config" / "real-node"), "--ignore-not-found", "--wait",
        "--timeout=120s", timeout=130,
    )  # fmt: skip


def _wait_webhook(cluster: RealCluster, *, timeout: float) -> None:
    """Until Kueue's webhook admits a ResourceFlavor (server-side dry run): its certificate
    controller has written the Secret and the caBundles, and the pod reads them."""
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
              "metadata": {"name": "webhook-probe"}}  # fmt: skip
    deadline = time.monotonic() + timeout
    while True:
        result = cluster.plane.kubectl(
            "create", "--dry-run=server", "-f", "-", input_text=json.dumps(flavor), check=False
        )
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise KueueError(f"Kueue's webhook does not answer: {result.stderr}")
        time.sleep(1)
