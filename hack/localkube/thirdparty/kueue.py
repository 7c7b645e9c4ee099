"""Kueue, two release lines, installed from each one's own ``config/``: v0.10.6 and v0.19.2.

Each :class:`KueueRelease` names its build (``hack/build-third-party.sh kueue`` or
``kueue-current``), the components and patches of its ``config/default`` that are installed,
and how its released ``controller_manager_config.yaml`` is changed; nothing else differs between
the two, so the overlay, the install and the uninstall are written once.

- :data:`V0_10` (``KUEUE_VERSION``), the last line with the MXJob integration: Kueue suspends
  and unsuspends the MXJob itself. The module-level :func:`install`, :func:`missing`... are its.
- :data:`CURRENT` (``KUEUE_CURRENT_VERSION``), the newest release, without an MXJob integration:
  MXJobs are an external framework (``integrations.externalFrameworks``) whose Workload the
  operator's own controller writes, and MultiKueue dispatches them through its generic adapter
  (``multiKueue.externalFrameworks``). Its Workload, ClusterQueue, LocalQueue, Cohort and
  MultiKueueCluster CRDs serve ``v1beta1`` and ``v1beta2`` (stored as ``v1beta2``) through
  Kueue's conversion webhook, whose certificate Kueue's own rotator makes (``internalcert``).

Installed as ``config/default`` installs it: the components ``crd``, ``rbac``, ``manager``,
``internalcert`` and ``webhook``, the patches that mount the configuration and the webhook
certificate, its labels, the namespace ``kueue-system`` and the ``kueue-`` name prefix, so Kueue's
own certificate controller makes its webhook's certificate and caBundles. What differs is for
this machine: the image (built here on the project's base, no registry, so
``imagePullPolicy: Never``), the manager's CPU request (500m CPU asked for on a node of two CPUs
the operator and the jobs share: 100m here, limits as released), its readiness probe (every
second from the first, not every 10 s after 5: a test waits for it after each install), and
what is left out (see :data:`V0_10` and :data:`CURRENT`): the visibility API everywhere, as its
feature gate ``VisibilityOnDemand`` is off.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import DockerfileImage, ensure_extra_image
from localkube.images.cache import BuiltImage
from localkube.plane.controlplane import ControlPlane
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
OVERLAY = "real-node"
"""The overlay's folder in the copy of ``config/`` (beside ``default``, so ``../components``)."""
MXJOB_FRAMEWORK = "MXJob.v1.kubeflow.org"
"""The MXJob kind as Kueue names an external framework (``Kind.version.group``)."""


class KueueError(RuntimeError):
    """Kueue did not build, install or start; the message says why."""


@dataclass(frozen=True)
class PodsReady:
    """Kueue's ``waitForPodsReady``: it waits for a Workload's pods to be ready and evicts the
    Workload when they are not within ``timeout``, then requeues it after a back-off of
    ``backoff_base_seconds`` (doubling) up to ``backoff_limit_count`` times (None: as released,
    no ``requeuingStrategy``). ``blockAdmission`` stays off, so admissions do not wait for each
    other."""

    timeout: str = "5m"
    backoff_base_seconds: int | None = None
    backoff_limit_count: int | None = None

    def setting(self) -> dict[str, object]:
        """The ``waitForPodsReady`` fields both API versions share."""
        setting: dict[str, object] = {"timeout": self.timeout, "blockAdmission": False}
        strategy = {
            key: value
            for key, value in (
                ("backoffBaseSeconds", self.backoff_base_seconds),
                ("backoffLimitCount", self.backoff_limit_count),
            )
            if value is not None
        }
        if strategy:
            setting["requeuingStrategy"] = {"timestamp": "Eviction", **strategy}
        return setting


WAIT_FOR_PODS_READY = {"enable": True, "timeout": "5m", "blockAdmission": False}
"""v0.10's setting: on, so the tests see Kueue read the job's ``Running`` condition."""
TEST_PODS_READY = PodsReady(timeout="1m", backoff_base_seconds=1, backoff_limit_count=2)
"""The newest release's default in tests: pods that are not ready within a minute are evicted,
requeued one second later, twice at most, so a test sees an eviction and its end in seconds."""


def configuration(released: Mapping[str, object]) -> dict[str, object]:
    """v0.10: Kueue's own ``controller_manager_config.yaml`` with ``waitForPodsReady`` turned on
    (``config.kueue.x-k8s.io/v1beta1``, whose ``enable`` turns it on)."""
    return {**released, "waitForPodsReady": dict(WAIT_FOR_PODS_READY)}


def _v0_10_configuration(released: Mapping[str, object], pods_ready: PodsReady) -> dict[str, Any]:
    return {**released, "waitForPodsReady": {"enable": True, **pods_ready.setting()}}


def current_configuration(
    released: Mapping[str, Any], *, pods_ready: PodsReady = TEST_PODS_READY
) -> dict[str, Any]:
    """The newest release: its own ``controller_manager_config.yaml``
    (``config.kueue.x-k8s.io/v1beta2``, where the presence of ``waitForPodsReady`` turns it on)
    with MXJob as an external framework of the queue (``integrations.externalFrameworks``) and
    of MultiKueue's generic adapter (``multiKueue.externalFrameworks``, a list of ``{name}``)."""
    integrations = dict(released.get("integrations") or {})
    external = [*integrations.get("externalFrameworks", []), MXJOB_FRAMEWORK]
    multi_kueue = dict(released.get("multiKueue") or {})
    multi_external = [*multi_kueue.get("externalFrameworks", []), {"name": MXJOB_FRAMEWORK}]
    return {
        **released,
        "integrations": {**integrations, "externalFrameworks": external},
        "multiKueue": {**multi_kueue, "externalFrameworks": multi_external},
        "waitForPodsReady": pods_ready.setting(),
    }


def mxjob_access() -> list[dict[str, Any]]:
    """RBAC of Kueue's manager on MXJobs, which the released roles do not give an external kind:
    MultiKueue's generic adapter reads the job through the manager's cache (get, list, watch)
    and copies the worker's status back (``mxjobs/status``: patch, update), as Kueue's docs for
    external frameworks under MultiKueue ask. Named as in ``config/`` (prefix, namespace apply)."""
    verbs = ["get", "list", "watch", "patch", "update"]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "mxjob-access"},
         "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["mxjobs", "mxjobs/status"],
                    "verbs": verbs}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "mxjob-access"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "mxjob-access"},
         "subjects": [{"kind": "ServiceAccount", "name": "controller-manager",
                       "namespace": "system"}]},
    ]  # fmt: skip


def released_image_name(config: Path) -> str:
    """The image name ``components/manager`` sets (its own ``images:`` entry), which an overlay
    must name to replace it."""
    manager = yaml.safe_load((config / "components" / "manager" / "kustomization.yaml").read_text())
    return str(manager["images"][0]["newName"])


ContainerOps = Sequence[Mapping[str, object]]
"""JSON patch operations on the manager's Deployment (its one container is ``containers/0``)."""


@dataclass(frozen=True)
class KueueRelease:
    """One release line of Kueue: its build and what of its ``config/default`` is installed."""

    source: ReleaseSource
    image_name: str
    """The image's name in the project's image cache, ``docker.io/mxjob-operator/<name>``."""
    configure: Callable[[Mapping[str, Any], PodsReady], dict[str, Any]]
    """Released ``controller_manager_config.yaml`` → the one installed."""
    pods_ready: PodsReady
    """``waitForPodsReady`` unless :meth:`install` is given another."""
    api_version: str
    """The version of ``kueue.x-k8s.io`` the probe uses (the newest one served)."""
    labels: tuple[tuple[str, str], ...] = (("app.kubernetes.io/name", "kueue"),)
    """``config/default``'s labels on every object and pod template."""
    configurations: tuple[str, ...] = ()
    """``config/default``'s kustomize ``configurations:`` files, copied beside the overlay."""
    extra_objects: Callable[[], list[dict[str, Any]]] = list
    """Objects added to ``config/default``'s (RBAC), in its naming."""
    components: tuple[str, ...] = COMPONENTS
    patches: tuple[str, ...] = DEFAULT_PATCHES
    feature_gates: tuple[str, ...] = ("VisibilityOnDemand=false",)
    """The manager's ``--feature-gates`` (no visibility API: left out, see above)."""

    def missing(self) -> str | None:
        """Why this release cannot be built here (its archive is not there); None if it can."""
        return self.source.missing()

    def image(self, home: Path) -> BuiltImage:
        """The manager's image on the project's base (``hack/kueue/Dockerfile``: the binary as
        ``/manager``), built when the binary changed."""
        spec = DockerfileImage(
            name=self.image_name,
            dockerfile=PROJECT_ROOT / "hack" / "kueue" / "Dockerfile",
            context=home / "bin",
            ignore_file=PROJECT_ROOT / "hack" / "kueue" / "Dockerfile.dockerignore",
            repository=f"docker.io/mxjob-operator/{self.image_name}",
        )
        return ensure_extra_image(spec)

    def kustomization(
        self, *, image_ref: str, released_name: str, container_ops: ContainerOps = ()
    ) -> dict[str, object]:
        """Kueue's ``config/default`` without what this machine cannot run, and the changes the
        module docstring lists; ``container_ops`` are more patches of the manager's container
        (the install profile's, :mod:`localkube.thirdparty.multikueue`)."""
        repository, tag = image_ref.rsplit(":", 1)
        container_patch = [
            {"op": "replace", "path": "/spec/template/spec/containers/0/imagePullPolicy",
             "value": "Never"},
            {"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests",
             "value": MANAGER_REQUESTS},
            {"op": "add", "path": "/spec/template/spec/containers/0/args/-",
             "value": "--feature-gates=" + ",".join(self.feature_gates)},
            *({"op": "replace", "path": f"/spec/template/spec/containers/0/readinessProbe/{field}",
               "value": 1} for field in ("initialDelaySeconds", "periodSeconds")),
            *container_ops,
        ]  # fmt: skip
        extra = ["extra-objects.yaml"] if self.extra_objects() else []
        return {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": NAMESPACE,
            "namePrefix": "kueue-",
            "labels": [
                {"pairs": dict(self.labels), "includeTemplates": True},
                {"pairs": {"control-plane": "controller-manager"}, "includeSelectors": True},
            ],
            "resources": [*(f"../components/{name}" for name in self.components), *extra],
            **({"configurations": list(self.configurations)} if self.configurations else {}),
            "images": [{"name": released_name, "newName": repository, "newTag": tag}],
            "patches": [
                *({"path": name} for name in self.patches),
                {
                    "target": {"kind": "Deployment", "name": "controller-manager"},
                    "patch": json.dumps(container_patch),
                },
            ],
        }

    def write_overlay(
        self,
        home: Path,
        work: Path,
        *,
        image_ref: str,
        pods_ready: PodsReady | None = None,
        container_ops: ContainerOps = (),
        settings: Mapping[str, Any] | None = None,
    ) -> Path:
        """A copy of the build's ``config/`` in ``work`` with the configuration changed (then
        the top-level sections of ``settings`` replaced) and the overlay beside ``default``; its
        folder, for ``kubectl apply -k``."""
        config = work / "config"
        shutil.rmtree(config, ignore_errors=True)
        shutil.copytree(home / "config", config)
        path = config / "components" / "manager" / "controller_manager_config.yaml"
        changed = self.configure(yaml.safe_load(path.read_text()), pods_ready or self.pods_ready)
        path.write_text(yaml.safe_dump({**changed, **(settings or {})}))
        overlay = config / OVERLAY
        overlay.mkdir()
        for name in (*self.patches, *self.configurations):
            shutil.copy(config / "default" / name, overlay / name)
        if self.extra_objects():
            (overlay / "extra-objects.yaml").write_text(yaml.safe_dump_all(self.extra_objects()))
        kustomization = self.kustomization(
            image_ref=image_ref,
            released_name=released_image_name(config),
            container_ops=container_ops,
        )
        (overlay / "kustomization.yaml").write_text(json.dumps(kustomization, indent=2) + "\n")
        return overlay

    def install(
        self,
        cluster: RealCluster,
        work: Path,
        *,
        timeout: float = 180,
        pods_ready: PodsReady | None = None,
    ) -> float:
        """Build (cached), import the image into the node, ``kubectl apply --server-side -k``,
        wait until ready (:meth:`wait_ready`); the seconds from apply to ready. ``pods_ready``:
        ``waitForPodsReady`` (default: the release's)."""
        home = self.source.build()
        built = self.image(home)
        containerd.import_image(node_bin_dir(), cluster.node.containerd_paths.socket, built.archive)
        overlay = self.write_overlay(home, work, image_ref=built.ref, pods_ready=pods_ready)
        started = time.monotonic()
        apply_overlay(cluster.plane, overlay)
        self.wait_ready(cluster.plane, timeout=timeout)
        return time.monotonic() - started

    def wait_ready(self, plane: ControlPlane, *, timeout: float) -> None:
        """Until the manager's Deployment is rolled out and its webhook admits a ResourceFlavor
        (server-side dry run): its certificate controller has written the Secret and the
        caBundles, and the pod reads them."""
        plane.kubectl(
            "-n", NAMESPACE, "rollout", "status", f"deployment/{DEPLOYMENT}",
            f"--timeout={timeout:g}s", timeout=timeout + 10,
        )  # fmt: skip
        flavor = {"apiVersion": f"{API_GROUP}/{self.api_version}", "kind": "ResourceFlavor",
                  "metadata": {"name": "webhook-probe"}}  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            result = plane.kubectl(
                "create", "--dry-run=server", "-f", "-", input_text=json.dumps(flavor), check=False
            )
            if result.returncode == 0:
                # kubectl caches discovery per server (hours): after the other release line on
                # this plane it would still address the versions that one served (v1beta2 on
                # v0.10: NotFound). ``api-resources`` refreshes the cache.
                plane.kubectl("api-resources", f"--api-group={API_GROUP}", check=False)
                return
            if time.monotonic() > deadline:
                raise KueueError(f"Kueue's webhook does not answer: {result.stderr}")
            time.sleep(1)

    def uninstall(self, plane: ControlPlane, work: Path) -> None:
        """Delete every Kueue object first, while the manager still runs to remove its
        finalizers (``kueue.x-k8s.io/resource-in-use`` on flavors, queues and workloads), then
        what :meth:`install` applied. In the other order the CRDs stay terminating on objects
        nobody finalizes any more, and ``kubectl delete --wait`` times out."""
        # Unchecked: api-resources exits non-zero when any API group fails discovery, though it
        # lists the others; ``delete -k`` below says what went wrong if Kueue's own did.
        kinds = plane.kubectl(
            "api-resources", f"--api-group={API_GROUP}", "--verbs=delete", "-o=name", check=False
        ).stdout.split()
        if kinds:
            plane.kubectl(
                "delete", ",".join(kinds), "--all", "--all-namespaces", "--ignore-not-found",
                "--wait", "--timeout=120s", timeout=130,
            )  # fmt: skip
        plane.delete_kustomization(work / "config" / OVERLAY, timeout=120)


def apply_overlay(plane: ControlPlane, overlay: Path) -> None:
    """``kubectl apply --server-side -k``: Kueue's CRDs are too large for the client-side
    last-applied annotation."""
    applied = plane.kubectl("apply", "--server-side", "-k", str(overlay), timeout=120, check=False)
    if applied.returncode != 0:
        raise KueueError(f"kubectl apply -k {overlay} failed:\n{applied.stderr}")


V0_10 = KueueRelease(
    source=ReleaseSource("kueue", "Kueue", "KUEUE_VERSION", KueueError),
    image_name="kueue",
    configure=_v0_10_configuration,
    pods_ready=PodsReady(),
    api_version="v1beta1",
    labels=(("app.kubernetes.io/name", "kueue"), ("app.kubernetes.io/component", "controller")),
)
"""Kueue v0.10.6. Left out of its ``config/default``: the metrics proxy sidecar
(``manager_auth_proxy_patch.yaml``: its image, kube-rbac-proxy, is not built here, and nothing
reads Kueue's metrics) and the visibility API (an aggregated API server for pending-workload
listings, which no test reads; kube-apiserver here has no front-proxy certificate to reach it,
and an unavailable aggregated API stalls namespace deletion)."""

CURRENT = KueueRelease(
    source=ReleaseSource(
        "kueue-current", "Kueue (newest)", "KUEUE_CURRENT_VERSION", KueueError, project="kueue"
    ),
    image_name="kueue-current",
    configure=lambda released, pods_ready: current_configuration(released, pods_ready=pods_ready),
    pods_ready=TEST_PODS_READY,
    api_version="v1beta2",
    configurations=("webhook_name_reference.yaml",),
    extra_objects=mxjob_access,
    # Why a Workload waits in Kueue's own words (WaitingForQuota...), not v0.19's default
    # "Pending": the job's Pending condition copies it (docs/how-to/queue-with-kueue.md).
    feature_gates=("VisibilityOnDemand=false", "UnadmittedWorkloadsObservability=true"),
)
"""Kueue v0.19.2. Kept from its ``config/default`` beyond the components and the two patches:
``webhook_name_reference.yaml``, without which the manager's role names the unprefixed webhook
configurations and the cert rotator may not write their caBundles. Left out: the visibility API
(``components/visibility``, ``manager_visibility_patch.yaml`` with its ``/visibility`` emptyDir,
and the transformer that moves its RoleBinding to kube-system), for the reasons given for v0.10;
``metrics_service.yaml`` and ``manager_metrics_patch.yaml`` (a Service and a port declaration
for the metrics the manager serves itself over HTTPS, which nothing here reads); the inline
patches that only add ``app.kubernetes.io/component`` labels (nothing selects them). Plus
:func:`mxjob_access`."""

SOURCE = V0_10.source  # v0.10.6, as this module served it before it knew two releases
missing = SOURCE.missing


def kustomization(*, image_ref: str, released_name: str) -> dict[str, object]:
    """v0.10's overlay (:meth:`KueueRelease.kustomization`)."""
    return V0_10.kustomization(image_ref=image_ref, released_name=released_name)


def install(cluster: RealCluster, work: Path, *, timeout: float = 180) -> float:
    """Kueue v0.10.6 on the real node (:meth:`KueueRelease.install`)."""
    return V0_10.install(cluster, work, timeout=timeout)


def uninstall(cluster: RealCluster, work: Path) -> None:
    """Kueue v0.10.6 off the real node (:meth:`KueueRelease.uninstall`)."""
    V0_10.uninstall(cluster.plane, work)
