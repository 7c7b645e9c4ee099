"""A control plane with the real node, and the operator installed on it as a user installs it.

``make dev-up DEV_ARGS=--real-node``, ``make demo DEMO_ARGS=--real-node`` and the real-node tests
all start the same thing through ``RealCluster.start``: the project's images (built or found by
``localkube.images``), the node bridge, a control plane listening on the node address with
kube-scheduler and the controllers Deployments need, and the real node. ``install_operator``
applies an overlay that differs from ``manifests/overlays/in-cluster`` (the default install: the
controller makes the webhook's certificates) only by the images it names (the ones just built)
and ``imagePullPolicy: Never`` (no registry is reachable here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import ProjectImages, ensure_images
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import INSTALL_CONTROLLERS, ControlPlaneSettings
from localkube.realnode.network import NodeNetwork
from localkube.realnode.node import RealNode
from localkube.realnode.settings import RealNodeError, RealNodeSettings, RealNodeState

SYSTEM_NAMESPACE = "mxjob-system"
OVERLAY_NAME = "real-node"
NODE_GRACE_SECONDS = 20
"""How long the real node's kubelet may be silent before its node is NotReady."""
DEFAULT_BASE = "in-cluster"
"""The overlay of ``manifests/overlays`` a user installs with no step of their own."""
REAL_NODE_SUBDIR = "real-node"
"""``make dev-up DEV_ARGS=--real-node`` and the real-node demo keep it in ``.local/real-node``."""


ADMISSION_PROBE = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "MXJob",
    "metadata": {"name": "admission-probe"},
    "spec": {
        "runPolicy": {"suspend": True},
        "mxReplicaSpecs": {
            "Worker": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "mxnet", "image": "probe"}]}},
            }
        },
    },
}
"""A valid single-node MXJob, only ever sent as a dry run."""


def plane_settings(state_dir: Path, *, network: NodeNetwork) -> ControlPlaneSettings:
    """The control plane a real node joins: on the node address, scheduling pods itself."""
    return ControlPlaneSettings(
        state_dir=state_dir,
        node_address=network.node_ip,
        scheduler=True,
        # nodelifecycle lifts the not-ready taint a registering kubelet's node starts with, and
        # taints a node whose kubelet is gone; taint-eviction then deletes the pods that do not
        # tolerate it. The grace period before a silent node is NotReady is 20 s (50 s by
        # default), so the node-loss test (tests/e2e/test_real_node_disruptions.py) is quicker.
        # The persistent-volume controllers bind a claim to a volume an admin made (and let both
        # be deleted once unused): Katib's PostgreSQL keeps its data on one
        # (localkube.thirdparty.katib_install).
        extra_controllers=(
            *INSTALL_CONTROLLERS,
            "nodelifecycle",
            "taint-eviction-controller",
            "persistentvolume-binder-controller",
            "persistentvolumeclaim-protection-controller",
            "persistentvolume-protection-controller",
        ),
        extra_controller_manager_args=(f"--node-monitor-grace-period={NODE_GRACE_SECONDS}s",),
    )


def image_overlay(
    work: Path, *, images: ProjectImages, base: str = DEFAULT_BASE, components: Sequence[str] = ()
) -> Path:
    """``manifests/`` copied to ``work`` and an overlay of ``overlays/<base>`` that names the
    built images; its path. For ``self-signed`` the certificate is made first, as
    docs/how-to/install.md ("With your own PKI") says; ``in-cluster`` and ``cert-manager`` need
    nothing more (the controller or cert-manager makes it)."""
    manifests = work / "manifests"
    shutil.rmtree(manifests, ignore_errors=True)
    shutil.copytree(
        PROJECT_ROOT / "manifests",
        manifests,
        ignore=shutil.ignore_patterns("webhook-tls-secret.yaml"),
    )
    if base == "self-signed":
        subprocess.run(
            [sys.executable, "-m", "certs", "webhook", "--out",
             str(manifests / "overlays" / "self-signed"), "--ca-dir", str(work / "ca")],
            check=True, cwd=PROJECT_ROOT, capture_output=True,
        )  # fmt: skip
    # A nested component (network-policies/jobs) names the overlay with a dash, not a folder.
    overlay = manifests / "overlays" / "-".join((OVERLAY_NAME, base, *components)).replace("/", "-")
    overlay.mkdir()
    never = [{"op": "add", "path": "/spec/template/spec/containers/0/imagePullPolicy",
              "value": "Never"}]  # fmt: skip
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [f"../{base}"],
        "components": [f"../../components/{name}" for name in components],
        "images": [
            _image_entry("mxjob-operator/webhook", images.webhook.ref),
            _image_entry("mxjob-operator/controller", images.controller.ref),
        ],
        "patches": [
            {"target": {"kind": "Deployment", "name": name}, "patch": json.dumps(never)}
            for name in ("mxjob-webhook", "mxjob-controller")
        ],
    }
    (overlay / "kustomization.yaml").write_text(json.dumps(kustomization, indent=2) + "\n")
    return overlay


def _image_entry(name: str, ref: str) -> dict[str, str]:
    repository, tag = ref.rsplit(":", 1)
    return {"name": name, "newName": repository, "newTag": tag}


def node_archives(images: ProjectImages) -> list[Path]:
    """What the node imports: the sandbox (pause), the operator's two images, the examples'."""
    return [image.archive for image in (images.pause, images.webhook, images.controller,
                                        images.examples)]  # fmt: skip


@dataclass
class RealCluster:
    """A started control plane and real node."""

    plane: ControlPlane
    node: RealNode
    images: ProjectImages
    node_state: RealNodeState
    seconds_to_ready: float
    """From the start (images found) to a Ready node with DNS and kube-proxy."""

    @classmethod
    def start(
        cls,
        state_dir: Path,
        *,
        images: ProjectImages | None = None,
        log: Callable[[str], None] = print,
    ) -> RealCluster:
        """A new plane and node in ``state_dir`` (one left there before is torn down first)."""
        images = images or ensure_images(log=log)
        started = time.monotonic()
        node = RealNode(RealNodeSettings(state_dir=state_dir / "node"))
        node.down()
        node.prepare_network()
        plane = ControlPlane(plane_settings(state_dir, network=node.net))
        try:
            plane.up()
            log(f"control plane ready at {plane.state().server}")  # type: ignore[union-attr]
            node_state = node.up(
                plane, images=node_archives(images), sandbox_image=images.pause.ref, log=log
            )
        except BaseException:
            node.down()
            plane.down()
            raise
        return cls(plane, node, images, node_state, time.monotonic() - started)

    @classmethod
    def resume(cls, state_dir: Path, *, images: ProjectImages) -> RealCluster | None:
        """The plane and node already running in ``state_dir`` with exactly ``images``
        imported (``make dev-up DEV_ARGS=--real-node``, an earlier demo); None otherwise."""
        node = RealNode(RealNodeSettings(state_dir=state_dir / "node"))
        plane = ControlPlane(plane_settings(state_dir, network=node.net))
        state = node.state()
        wanted = [archive.name for archive in node_archives(images)]
        if node.running() and plane.running() and state.imported == wanted:
            return cls(plane, node, images, state, seconds_to_ready=0.0)
        return None

    @classmethod
    def stop(cls, state_dir: Path) -> None:
        """Tear down the plane and node of ``state_dir``, from any process."""
        node = RealNode(RealNodeSettings(state_dir=state_dir / "node"))
        node.down()
        ControlPlane(plane_settings(state_dir, network=node.net)).down()

    def install_operator(
        self,
        work: Path,
        *,
        base: str = DEFAULT_BASE,
        components: Sequence[str] = (),
        timeout: float = 180,
    ) -> float:
        """``kubectl apply -k`` of the image overlay of ``base`` with ``components`` (of
        ``manifests/components``), then both rollouts; seconds it took. Applied again with other
        components, it changes the install in place (a rolling update)."""
        overlay = image_overlay(work, images=self.images, base=base, components=components)
        started = time.monotonic()
        self.plane.kubectl("apply", "-k", str(overlay), timeout=90)
        self.plane.kubectl(
            "-n", SYSTEM_NAMESPACE, "rollout", "status", f"--timeout={timeout:g}s",
            "deployment/mxjob-webhook", "deployment/mxjob-controller",
            timeout=timeout + 10,
        )  # fmt: skip
        self.wait_admission(timeout=timeout)
        return time.monotonic() - started

    def wait_admission(self, *, timeout: float = 120) -> None:
        """Until kube-apiserver reaches the webhook through its Service and trusts it: a
        server-side dry run of a valid MXJob is admitted. Rolled-out pods are not yet that: the
        Service's endpoints, kube-proxy's rules and (with cert-manager) the injected caBundle
        follow a moment later."""
        probe = json.dumps(ADMISSION_PROBE)
        deadline = time.monotonic() + timeout
        while True:
            result = self.plane.kubectl(
                "create", "--dry-run=server", "-n", "default", "-f", "-",
                input_text=probe, check=False,
            )  # fmt: skip
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RealNodeError(f"the webhook does not admit a valid MXJob: {result.stderr}")
            time.sleep(0.5)

    def uninstall_operator(
        self, work: Path, *, base: str = DEFAULT_BASE, pods_at_once: bool = True
    ) -> None:
        """What ``install_operator`` applied deleted, waiting for it to go (the namespace, the
        CRD with every MXJob, the webhook configurations); ``pods_at_once`` as
        ``ControlPlane.delete_kustomization`` says."""
        self.plane.delete_kustomization(
            image_overlay(work, images=self.images, base=base), pods_at_once=pods_at_once
        )

    def down(self) -> None:
        """The node first (its kubelet still reaches the API server), then the plane."""
        self.node.down()
        self.plane.down()
