"""The demo's resumable job: its checkpoint volume on this machine, and a worker killed once.

``make demo JOB=examples/v1/train/mx_job_dist_cpu_resume.yaml DEMO_ARGS=--kill-worker`` shows
a job that loses a worker mid-training restarted as a whole and resumed from its checkpoint.
The job mounts the claim of ``examples/volumes/checkpoints-pvc.yaml``:

- on the real node (``--real-node``) the claim is made as the example writes it, bound to a
  volume on a directory of the demo's state (a ``hostPath``: the real kubelet mounts it);
- the exec-mode test kubelet mounts no volume into a job's process, so there the directory is
  given to the program itself: the argument naming the mount path is rewritten to it, and the
  volume dropped (:func:`on_host_directory`), as :func:`localkube.scenarios.jobwatch.on_free_ports`
  moves ports.

``--kill-worker`` asks the example's worker rank 1 to SIGKILL itself in epoch 3, once
(``train_dist --fail-at-epoch``): exit 137, which the operator retries.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from localkube.base.api import Api
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane

CLAIMS_DIR = PROJECT_ROOT / "examples" / "volumes"
STORAGE_CLASS = "mxjob-demo-local"
KILL_EPOCH = 3


def _pod_specs(job: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for replica in job.get("spec", {}).get("mxReplicaSpecs", {}).values():
        spec = replica.get("template", {}).get("spec")
        if isinstance(spec, dict):
            yield spec


def claim_volumes(spec: Mapping[str, Any]) -> dict[str, str]:
    """The pod spec's volumes backed by a claim: volume name -> claim name."""
    return {
        str(volume["name"]): str(volume["persistentVolumeClaim"]["claimName"])
        for volume in spec.get("volumes", []) or []
        if isinstance(volume.get("persistentVolumeClaim"), Mapping)
    }


def claims_of(job: Mapping[str, Any]) -> set[str]:
    """Every claim the job's pods mount."""
    return {claim for spec in _pod_specs(job) for claim in claim_volumes(spec).values()}


def with_killed_worker(job: Mapping[str, Any], *, epoch: int = KILL_EPOCH) -> dict[str, Any]:
    """A copy whose Workers run ``train_dist`` told to end worker rank 1 in ``epoch``, once."""
    found = copy.deepcopy(dict(job))
    worker = found["spec"]["mxReplicaSpecs"].get("Worker")
    containers = worker["template"]["spec"]["containers"] if worker else []
    mxnet = next((c for c in containers if c.get("name") == "mxnet"), None)
    if mxnet is None or "train_dist" not in " ".join(mxnet.get("command", [])):
        raise ValueError("--kill-worker needs a job whose Workers run train_dist")
    mxnet["args"] = [*mxnet.get("args", []), "--fail-at-epoch", str(epoch), "--fail-with",
                     "sigkill"]  # fmt: skip
    return found


def on_host_directory(job: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """A copy whose containers are given ``directory`` instead of their claim's mount path
    (an argument equal to the mount path is rewritten) and mount no claim."""
    found = copy.deepcopy(dict(job))
    for spec in _pod_specs(found):
        claimed = claim_volumes(spec)
        if not claimed:
            continue
        for container in spec.get("containers", []):
            mounts = container.get("volumeMounts", []) or []
            paths = {str(m["mountPath"]) for m in mounts if m.get("name") in claimed}
            container["args"] = [str(directory) if a in paths else a for a in
                                 container.get("args", [])]  # fmt: skip
            container["volumeMounts"] = [m for m in mounts if m.get("name") not in claimed]
        spec["volumes"] = [v for v in spec.get("volumes", []) if v.get("name") not in claimed]
    return found


def fresh_directory(directory: Path) -> Path:
    """``directory`` empty, writable by the job's user (a rerun must not resume at the end)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.chmod(directory, 0o777)
    return directory


def example_claim(name: str) -> dict[str, Any]:
    """The claim ``name`` as ``examples/volumes`` writes it."""
    for path in sorted(CLAIMS_DIR.glob("*.yaml")):
        claim = yaml.safe_load(path.read_text())
        if claim.get("kind") == "PersistentVolumeClaim" and claim["metadata"]["name"] == name:
            found: dict[str, Any] = claim
            return found
    raise ValueError(f"the job mounts claim {name!r}, which examples/volumes does not define")


def make_claims(
    plane: ControlPlane, api: Api, *, job: Mapping[str, Any], namespace: str, root: Path
) -> list[str]:
    """Each claim the job mounts, from ``examples/volumes``, bound to a fresh ``hostPath``
    volume under ``root``; the claims made."""
    made = []
    for name in sorted(claims_of(job)):
        claim, volume = example_claim(name), f"{namespace}-{name}"
        directory = fresh_directory(root / volume)
        plane.kubectl("delete", "pvc", "-n", namespace, name, "--ignore-not-found", "--wait")
        plane.kubectl("delete", "pv", volume, "--ignore-not-found", "--wait")
        plane.kubectl("apply", "-f", "-", input_text=json.dumps({
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
            "spec": {"capacity": claim["spec"]["resources"]["requests"],
                     "accessModes": claim["spec"]["accessModes"],
                     "storageClassName": STORAGE_CLASS,
                     "persistentVolumeReclaimPolicy": "Retain",
                     "hostPath": {"path": str(directory), "type": "Directory"},
                     "claimRef": {"namespace": namespace, "name": name}}}))  # fmt: skip
        bound = {**claim, "spec": {**claim["spec"], "storageClassName": STORAGE_CLASS,
                                   "volumeName": volume}}  # fmt: skip
        plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(bound))
        made.append(name)
    return made
