"""A MultiKueue manager cluster: the newest Kueue and the operator, run by the install profile.

:class:`ManagerCluster` is a control plane of its own (``INSTALL_CONTROLLERS``, so Deployments
make pods, and ``--enable-aggregator-routing=true``, so a Service-referenced webhook is dialled at
its pod's address) whose one node is a test kubelet with the install profile
(:mod:`localkube.kubelet.profile`). It runs, from their Deployments, the operator as a user
installs it (``python -m certs webhook --out`` then ``kubectl apply -k`` of a copy of
``manifests/overlays/<overlay>``, as ``tests/e2e/test_install_running.py`` does) and Kueue
v0.19.2 exactly as the real node gets it (:data:`localkube.thirdparty.kueue.CURRENT`), with the
image repository mapped to the built ``bin/kueue`` instead of an image. No root-only real node
and no image build: a manager that dispatches jobs to a worker runs none itself.

What the profile needs from Kueue's Deployment, as a patch of this install only
(:data:`PROFILE_OPS`): no ``command`` (``/manager``, a path inside the image; the profile runs its
program for the image's entrypoint), and ``POD_IP`` from the Downward API, so
:mod:`localkube.thirdparty.kueue_pod` can put Kueue's listeners on the pod's address. Kueue's
configuration is mounted with a ``subPath``, which the profile mounts as a file. Kueue's cert
rotator writes its webhook certificate into a Secret after the pod started and then waits for a
kubelet to update the mounted volume, which the profile does not do: so once the Secret holds
the certificate the first pod is deleted, and its replacement starts with it
(:meth:`ManagerCluster.install_kueue`).

The MultiKueue objects that point the manager at a worker (the real node's cluster) are plain
dict builders, v1beta2 as Kueue stores them (:func:`worker_objects`, :func:`manager_objects`),
applied by :func:`connect_workers`. Kueue v0.19.2 accepts only a self-contained kubeconfig in the
Secret (``MultiKueueAllowInsecureKubeconfigs`` is locked off): no token or CA files, no
``insecure-skip-tls-verify``, no exec plugin or basic auth, an IP or DNS name as server. The
worker's kubeconfig therefore embeds the CA and a client certificate of the worker plane's CA for
:data:`WORKER_USER`, whose RBAC on the worker is :func:`worker_access`.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from localkube.base.api import Api
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet.core import ExecSettings, TestKubelet
from localkube.kubelet.profile.entrypoints import ExecProfile
from localkube.plane.controlplane import ControlPlane
from localkube.plane.kubeconfig import kubeconfig
from localkube.plane.settings import INSTALL_CONTROLLERS, ControlPlaneSettings
from localkube.thirdparty import kueue
from localkube.thirdparty.kueue import CURRENT, NAMESPACE, KueueError, PodsReady
from localkube.thirdparty.kueue_pod import entrypoint_script

SYSTEM = "mxjob-system"
KUEUE_IMAGE = "docker.io/mxjob-operator/kueue-current:host"
"""The image Kueue's Deployment names here: never pulled, its repository is the profile's."""
MANAGER = "kueue.x-k8s.io/v1beta2"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
WORKER_USER = "multikueue-manager"
INTEGRATIONS = {"frameworks": ["batch/job"], "externalFrameworks": [kueue.MXJOB_FRAMEWORK]}
"""The manager's integrations: MultiKueue watches the kind of every enabled framework's adapter
on each worker, and a worker without that CRD (JobSet, MPIJob, ...: the real node has only
Jobs and MXJobs) never becomes active ("no matches for kind"). So batch Jobs and MXJobs only."""
PROFILE_OPS: tuple[dict[str, Any], ...] = (
    {"op": "remove", "path": "/spec/template/spec/containers/0/command"},
    {"op": "add", "path": "/spec/template/spec/containers/0/env",
     "value": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]},
)  # fmt: skip


class ManagerCluster:
    """A plane, its install-profile kubelet, the operator and Kueue v0.19.2; see the module."""

    def __init__(
        self,
        work: Path,
        *,
        overlay: str = "self-signed",
        components: tuple[str, ...] = (),
        pods_ready: PodsReady | None = None,
    ) -> None:
        """``overlay``: the one of ``manifests/overlays`` applied; ``components``: kustomize
        components (paths relative to ``manifests/``) added to it; ``pods_ready``: Kueue's
        ``waitForPodsReady`` (default: :data:`localkube.thirdparty.kueue.TEST_PODS_READY`)."""
        self.work = work
        self.overlay = overlay
        self.components = components
        self.pods_ready = pods_ready
        self.plane = ControlPlane(
            ControlPlaneSettings(
                state_dir=work / "plane",
                extra_controllers=INSTALL_CONTROLLERS,
                extra_apiserver_args=("--enable-aggregator-routing=true",),
            )
        )
        self.kubelet: TestKubelet | None = None
        self._api: Api | None = None
        self.seconds_operator_ready = 0.0
        """From ``kubectl apply -k`` to the operator's Deployments rolled out."""
        self.seconds_kueue_ready = 0.0
        """From Kueue's ``kubectl apply -k`` to its webhook admitting, the restart included."""

    @property
    def api(self) -> Api:
        """A client of the plane (once it is up)."""
        if self._api is None:
            self._api = Api.from_kubeconfig(self.plane.kubeconfig)
        return self._api

    def start(self, *, timeout: float = 180) -> ManagerCluster:
        """Everything up: the plane, the kubelet, Kueue (built, cached), then the operator."""
        home = CURRENT.source.build()
        state = self.plane.up()
        venv_bin = Path(sys.executable).parent
        hosts = self.work / "hosts"
        hosts.write_text("127.0.0.1 localhost\n")
        program = entrypoint_script(self.work / "kueue-pod" / "kueue", kueue=home / "bin" / "kueue")
        profile = ExecProfile(
            entrypoints={
                "mxjob-operator/webhook": str(venv_bin / "mxjob-webhook"),
                "mxjob-operator/controller": str(venv_bin / "mxjob-controller"),
                KUEUE_IMAGE.rsplit(":", 1)[0]: str(program),
            },
            api_port=state.apiserver_port,
        )
        settings = ExecSettings(
            log_dir=self.work / "pods", path_prefix=(str(venv_bin),), hosts_file=hosts,
            profile=profile,
        )  # fmt: skip
        self.kubelet = TestKubelet(self.api, node_name="manager-node", exec_settings=settings)
        self.kubelet.start()
        # Kueue first: with the kueue-workloads component the controller refuses to start on a
        # cluster that serves no Kueue Workload API
        # (controller/integrations/kueue/workload_sync.py).
        self.seconds_kueue_ready = self.install_kueue(home, timeout=timeout)
        self.seconds_operator_ready = self.install_operator(timeout=timeout)
        return self

    def install_operator(self, *, timeout: float) -> float:
        """docs/how-to/install.md's install with your own PKI, in a copy of ``manifests/`` (the
        generated Secret, a private key, stays out of the checkout); seconds to rolled out."""
        manifests = self.work / "manifests"
        shutil.rmtree(manifests, ignore_errors=True)
        shutil.copytree(
            PROJECT_ROOT / "manifests",
            manifests,
            ignore=shutil.ignore_patterns("webhook-tls-secret.yaml"),
        )
        overlay = manifests / "overlays" / self.overlay
        subprocess.run(
            [sys.executable, "-m", "certs", "webhook", "--out", str(overlay), "--ca-dir",
             str(self.work / "ca")],
            check=True, cwd=PROJECT_ROOT, capture_output=True,
        )  # fmt: skip
        if self.components:
            path = overlay / "kustomization.yaml"
            kustomization = yaml.safe_load(path.read_text())
            relative = [f"../../{component}" for component in self.components]
            kustomization["components"] = [*kustomization.get("components", []), *relative]
            path.write_text(yaml.safe_dump(kustomization))
        started = time.monotonic()
        self.plane.kubectl("apply", "-k", str(overlay), timeout=90)
        self.plane.kubectl(
            "-n", SYSTEM, "rollout", "status", f"--timeout={timeout:g}s",
            "deployment/mxjob-webhook", "deployment/mxjob-controller", timeout=timeout + 10,
        )  # fmt: skip
        return time.monotonic() - started

    def install_kueue(self, home: Path, *, timeout: float) -> float:
        """Kueue's overlay with :data:`PROFILE_OPS`; once its rotator has written the webhook
        certificate into the Secret, its first pod (which waits for a volume update the profile
        does not make) is deleted; then until ready. Seconds from apply to ready."""
        overlay = CURRENT.write_overlay(
            home, self.work / "kueue", image_ref=KUEUE_IMAGE, pods_ready=self.pods_ready,
            container_ops=PROFILE_OPS, settings={"integrations": INTEGRATIONS},
        )  # fmt: skip
        started = time.monotonic()
        kueue.apply_overlay(self.plane, overlay)
        self._wait_certificate(timeout=timeout)
        self.plane.kubectl(
            "-n", NAMESPACE, "delete", "pod", "-l", "control-plane=controller-manager",
            "--wait=false",
        )  # fmt: skip
        CURRENT.wait_ready(self.plane, timeout=timeout)
        return time.monotonic() - started

    def _wait_certificate(self, *, timeout: float) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/secrets/kueue-webhook-server-cert"
        deadline = time.monotonic() + timeout
        while not (self.api.request("GET", path).get("data") or {}).get("tls.crt"):
            if time.monotonic() > deadline:
                raise KueueError(f"Kueue wrote no webhook certificate in {timeout:g} s")
            time.sleep(0.5)

    def down(self) -> None:
        """The kubelet (its pods' processes) and the plane stop."""
        if self.kubelet is not None:
            self.kubelet.stop()
            self.kubelet = None
        self.plane.down()


def worker_kubeconfig(worker: ControlPlane, *, user: str = WORKER_USER) -> dict[str, Any]:
    """A self-contained kubeconfig for ``user`` on the running ``worker`` plane: its CA and a new
    client certificate embedded, its API server address (on the real node, a 198.18 address)."""
    state = worker.state()
    if state is None:
        raise KueueError("the worker's control plane is not running")
    ca = worker.certificate_authority()
    pair = ca.issue_client(common_name=user)
    return kubeconfig(
        server=state.server, ca_pem=ca.pair.cert_pem, cert_pem=pair.cert_pem,
        key_pem=pair.key_pem, cluster="worker", user=user,
    )  # fmt: skip


def worker_access(*, user: str = WORKER_USER) -> list[dict[str, Any]]:
    """What MultiKueue does on a worker, for ``user``: creates, watches and deletes the copies of
    Workloads and of the jobs of the manager's :data:`INTEGRATIONS` (batch Jobs, MXJobs), and
    reads their status."""
    verbs = ["create", "delete", "get", "list", "watch", "patch", "update"]
    rules = [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "workloads/status"],
         "verbs": verbs},
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs", "mxjobs/status"], "verbs": verbs},
        {"apiGroups": ["batch"], "resources": ["jobs", "jobs/status"], "verbs": verbs},
    ]  # fmt: skip
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": user}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": user},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
    ]  # fmt: skip


def kubeconfig_secret(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """The Secret in ``kueue-system`` a MultiKueueCluster names: the kubeconfig at the key
    ``kubeconfig``."""
    data = base64.b64encode(yaml.safe_dump(config).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"kubeconfig": data},
    }


def queue_objects(
    *, namespace: str, flavor: str, cluster_queue: str, local_queue: str,
    quota: dict[str, str], admission_check: str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """A ResourceFlavor, a ClusterQueue with ``quota`` on it (and ``admission_check`` for every
    Workload it admits) and a LocalQueue in ``namespace``: the same names on manager and worker,
    as MultiKueue creates a Workload's copy in the worker's namespace and queue of that name."""
    resources = [{"name": name, "nominalQuota": value} for name, value in quota.items()]
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": list(quota),
                            "flavors": [{"name": flavor, "resources": resources}]}],
    }  # fmt: skip
    if admission_check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": admission_check}]}
    return [
        {"apiVersion": MANAGER, "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        {"apiVersion": MANAGER, "kind": "ClusterQueue", "metadata": {"name": cluster_queue},
         "spec": spec},
        {"apiVersion": MANAGER, "kind": "LocalQueue",
         "metadata": {"name": local_queue, "namespace": namespace},
         "spec": {"clusterQueue": cluster_queue}},
    ]  # fmt: skip


def multikueue_objects(*, workers: Mapping[str, str], check: str) -> list[dict[str, Any]]:
    """A MultiKueueCluster per worker (name → the Secret with its kubeconfig), the
    MultiKueueConfig listing them all and the AdmissionCheck of MultiKueue's controller that
    uses that config."""
    clusters = [
        {"apiVersion": MANAGER, "kind": "MultiKueueCluster", "metadata": {"name": worker},
         "spec": {"clusterSource": {"kubeConfig": {"location": secret,
                                                   "locationType": "Secret"}}}}
        for worker, secret in workers.items()
    ]  # fmt: skip
    return [
        *clusters,
        {"apiVersion": MANAGER, "kind": "MultiKueueConfig", "metadata": {"name": check},
         "spec": {"clusters": list(workers)}},
        {"apiVersion": MANAGER, "kind": "AdmissionCheck", "metadata": {"name": check},
         "spec": {"controllerName": MULTIKUEUE_CONTROLLER,
                  "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig",
                                 "name": check}}},
    ]  # fmt: skip


def apply_objects(plane: ControlPlane, objects: list[dict[str, Any]]) -> None:
    """``kubectl apply`` of ``objects`` as one List."""
    items = {"apiVersion": "v1", "kind": "List", "items": objects}
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(items))


def connect_workers(
    manager: ManagerCluster, workers: Mapping[str, ControlPlane], *,
    namespace: str, quota: dict[str, str], flavor: str = "default-flavor",
    cluster_queue: str = "multikueue-cq", local_queue: str = "multikueue-lq",
    check: str = "multikueue",
) -> None:  # fmt: skip
    """MultiKueue on ``manager`` dispatching ``namespace``'s queue to ``workers`` (name → the
    worker's running control plane, where Kueue v0.19.2 runs): each worker's RBAC and queues,
    the manager's Secrets, MultiKueue objects and queues. The namespace must exist on all."""

    def queues(admission_check: str | None) -> list[dict[str, Any]]:
        return queue_objects(
            namespace=namespace, flavor=flavor, cluster_queue=cluster_queue,
            local_queue=local_queue, quota=quota, admission_check=admission_check,
        )  # fmt: skip

    secrets = {name: f"{name}-kubeconfig" for name in workers}
    for plane in workers.values():
        apply_objects(plane, [*worker_access(), *queues(None)])
    manager_side = [
        *(kubeconfig_secret(secrets[name], worker_kubeconfig(plane))
          for name, plane in workers.items()),
        *multikueue_objects(workers=secrets, check=check),
        *queues(check),
    ]  # fmt: skip
    apply_objects(manager.plane, manager_side)
