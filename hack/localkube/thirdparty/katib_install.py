"""Katib on the real node, installed from its own ``katib-standalone-postgres`` manifests with the
changes a user running MXJob trials makes, and nothing else.

The user's changes (docs/how-to/katib.md says why each):

- ``MXJob.v1.kubeflow.org`` added to katib-config's ``trialResources``, which Katib v0.18 dropped;
- the project's ``manifests/components/katib`` (mxjobs access for Katib's controller), applied as
  part of the operator's install (:meth:`localkube.realnode.cluster.RealCluster.install_operator`).

What this machine needs besides, as any cluster without a registry or storage would:

- the images built here (:mod:`localkube.thirdparty.katib`) named in place of Katib's, through
  kustomize ``images:`` and katib-config (the goptuna suggestion serves ``random``, ``tpe``,
  ``cmaes`` and ``sobol``; Katib maps the first two to its Python hyperopt image, which is not
  built here);
- the UI's Deployment left out (its image is not built here, and nothing reads it);
- a PersistentVolume for PostgreSQL's claim, on the node's disk, as an admin would make one where
  no StorageClass provisions volumes.

Katib's webhook certificate is made the way its install makes it: by the certificate generator
inside katib-controller, into the empty Secret the install creates.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from localkube.plane.controlplane import ControlPlane

NAMESPACE: Final = "kubeflow"
OVERLAY: Final = "mxjob-operator"
"""The overlay's folder, beside Katib's ``installs/katib-standalone-postgres``."""
MXJOB_RESOURCE: Final = "MXJob.v1.kubeflow.org"
GOPTUNA_ALGORITHMS: Final = ("random", "tpe", "cmaes", "sobol")
DEPLOYMENTS: Final = ("katib-postgres", "katib-db-manager", "katib-controller")
RELEASED_IMAGES: Final = {
    "controller": "ghcr.io/kubeflow/katib/katib-controller",
    "db_manager": "ghcr.io/kubeflow/katib/katib-db-manager",
    "postgres": "postgres",
}
"""The images Katib's manifests name, by the field of the built images that replaces each."""
VOLUME_NAME: Final = "katib-postgres"
INJECTION_LABEL: Final = "katib.kubeflow.org/metrics-collector-injection"
"""The namespace label Katib's pod webhook and Experiment validator look for."""
EXPERIMENT_PROBE: Final = {
    "apiVersion": "kubeflow.org/v1beta1",
    "kind": "Experiment",
    "metadata": {"name": "webhook-probe", "namespace": NAMESPACE},
    "spec": {
        "objective": {"type": "maximize", "objectiveMetricName": "accuracy"},
        "algorithm": {"algorithmName": "random"},
        "parameters": [{"name": "lr", "parameterType": "double",
                        "feasibleSpace": {"min": "0.01", "max": "0.1"}}],
        "trialTemplate": {
            "primaryContainerName": "training",
            "trialParameters": [{"name": "lr", "reference": "lr"}],
            "trialSpec": {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "training", "image": "probe",
                                "command": ["echo", "${trialParameters.lr}"]}]}}}},
        },
    },
}  # fmt: skip
"""A valid Experiment, only ever sent as a server-side dry run: admitted once Katib's webhooks
serve with the certificate its generator made."""


class KatibInstallError(RuntimeError):
    """Katib could not be installed or did not come up; the message says which step."""


def katib_config(
    released: Mapping[str, Any], *, suggestion_image: str, collector_image: str
) -> dict[str, Any]:
    """Katib's katib-config with MXJob a trial resource and the images built here (pure)."""
    config = json.loads(json.dumps(released))
    controller = config.setdefault("init", {}).setdefault("controller", {})
    resources = list(controller.get("trialResources") or ["Job.v1.batch"])
    if MXJOB_RESOURCE not in resources:
        resources.append(MXJOB_RESOURCE)
    controller["trialResources"] = resources
    runtime = config.setdefault("runtime", {})
    suggestions = [s for s in runtime.get("suggestions") or []
                   if s.get("algorithmName") not in GOPTUNA_ALGORITHMS]  # fmt: skip
    runtime["suggestions"] = [
        *({"algorithmName": name, "image": suggestion_image} for name in GOPTUNA_ALGORITHMS),
        *suggestions,
    ]
    for collector in runtime.get("metricsCollectors") or []:
        if collector.get("kind") in ("StdOut", "File"):
            collector["image"] = collector_image
    return dict(config)


def kustomization(images: Mapping[str, str]) -> dict[str, Any]:
    """The overlay of ``katib-standalone-postgres``: ``images`` maps the fields of
    :data:`RELEASED_IMAGES` to the refs built here (pure)."""
    entries = []
    for field, released in RELEASED_IMAGES.items():
        repository, tag = images[field].rsplit(":", 1)
        entries.append({"name": released, "newName": repository, "newTag": tag})
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../katib-standalone-postgres"],
        "images": entries,
        "configMapGenerator": [{
            "name": "katib-config", "behavior": "replace", "files": ["katib-config.yaml"],
            "options": {"disableNameSuffixHash": True}}],
        "patches": [{"patch": yaml.safe_dump({
            "$patch": "delete", "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "katib-ui", "namespace": NAMESPACE}})},
            # Katib's namespace is labelled for injection once its pods run (wait_ready):
            # labelled before, its pods would go through Katib's pod webhook, which the
            # controller being created serves, and a ReplicaSet slower than the webhook's
            # registration would wait for it forever.
            {"patch": yaml.safe_dump({
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE,
                "labels": {INJECTION_LABEL: None}}})}],
    }  # fmt: skip


def postgres_volume(path: Path) -> dict[str, Any]:
    """A volume on the node's disk for PostgreSQL's claim (3Gi, ReadWriteOnce), bound to that
    claim only (pure)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": VOLUME_NAME},
        "spec": {
            "capacity": {"storage": "3Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": NAMESPACE, "name": VOLUME_NAME},
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
        },
    }


def write_overlay(
    manifests: Path, work: Path, *, images: Mapping[str, str], suggestion_image: str,
    collector_image: str,
) -> Path:  # fmt: skip
    """A copy of Katib's ``manifests/`` in ``work`` with the overlay beside its install; the
    overlay's folder, for ``kubectl apply -k``."""
    copied = work / "katib-manifests"
    shutil.rmtree(copied, ignore_errors=True)
    shutil.copytree(manifests, copied)
    installs = copied / "installs"
    released = yaml.safe_load(
        (installs / "katib-standalone-postgres" / "katib-config.yaml").read_text()
    )
    overlay = installs / OVERLAY
    overlay.mkdir()
    config = katib_config(
        released, suggestion_image=suggestion_image, collector_image=collector_image
    )
    (overlay / "katib-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (overlay / "kustomization.yaml").write_text(json.dumps(kustomization(images), indent=2))
    return overlay


def apply(plane: ControlPlane, overlay: Path, *, volume_dir: Path) -> None:
    """The volume, then ``kubectl apply --server-side -k`` (Katib's CRDs are too large for the
    client-side last-applied annotation)."""
    plane.kubectl("apply", "-f", "-", input_text=json.dumps(postgres_volume(volume_dir)))
    applied = plane.kubectl("apply", "--server-side", "-k", str(overlay), timeout=120, check=False)
    if applied.returncode != 0:
        raise KatibInstallError(f"kubectl apply -k {overlay} failed:\n{applied.stderr}")


def wait_ready(plane: ControlPlane, *, timeout: float) -> None:
    """Until PostgreSQL, the DB manager and the controller are rolled out and Katib's webhook
    admits an Experiment (its generator wrote the certificate and the caBundles)."""
    plane.kubectl(
        "-n", NAMESPACE, "rollout", "status", f"--timeout={timeout:g}s",
        *(f"deployment/{name}" for name in DEPLOYMENTS), timeout=timeout + 10,
    )  # fmt: skip
    # As released: Katib's validator admits Experiments only in a namespace so labelled.
    plane.kubectl("label", "namespace", NAMESPACE, f"{INJECTION_LABEL}=enabled", "--overwrite")
    deadline = time.monotonic() + timeout
    probe = json.dumps(EXPERIMENT_PROBE)
    while True:
        result = plane.kubectl("create", "--dry-run=server", "-f", "-", input_text=probe,
                               check=False)  # fmt: skip
        if result.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise KatibInstallError(
                f"Katib's webhook does not admit an Experiment: {result.stderr}"
            )
        time.sleep(1)


def uninstall(plane: ControlPlane, overlay: Path) -> None:
    """Experiments first, while Katib's controller runs to remove its finalizers; then what
    :func:`apply` made but the ``kubeflow`` namespace, which other programs use too (the volume
    last, once its claim is gone)."""
    plane.kubectl(
        "delete", "experiments.kubeflow.org", "--all", "--all-namespaces", "--ignore-not-found",
        "--wait", "--timeout=120s", timeout=130, check=False,
    )  # fmt: skip
    kept = [doc for doc in plane.kustomize(overlay) if doc.get("kind") != "Namespace"]
    plane.kubectl(
        "delete", "-f", "-", "--ignore-not-found", "--wait", "--timeout=120s",
        input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": kept}),
        timeout=130, check=False,
    )  # fmt: skip
    plane.kubectl("delete", "persistentvolume", VOLUME_NAME, "--ignore-not-found", "--wait",
                  "--timeout=60s", timeout=70, check=False)  # fmt: skip
