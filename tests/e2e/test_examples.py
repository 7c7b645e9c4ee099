"""Every example MXJob is accepted by the real API server and webhook as it is written.

``kubectl apply --dry-run=server`` runs the whole admission chain (schema, conversion for
v1beta1, the mutating and validating webhooks) without storing anything, so an example that
drifted from the API fails here. The response is the defaulted object: it shows the webhook
injected the env and exactly what the pods report progress with (after the example's own mounts
and volumes), and that GPU limits reach the pod templates untouched (the test kubelet's node
advertises ``nvidia.com/gpu``, so the same jobs would schedule on it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import RunningOperator
from localkube.scenarios.jobwatch import EXAMPLES, load_job
from tests.e2e.progress_wiring import STATUS_MOUNT, status_env, status_volume

EXAMPLE_FILES = sorted([*EXAMPLES.glob("v1/*/*.yaml"), *EXAMPLES.glob("v1beta1/*/*.yaml")])
OWNED_BY_MODE = {
    "MXTrain": {"DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "MX_CONFIG"},
    "MXTune": {"TVM_TRACKER_HOST", "TVM_TRACKER_PORT", "MX_CONFIG"},
}
TRACKER_CLIENTS = {"TunerServer", "Tuner"}
"""The MXTune replicas that also get TVM_TRACKER_KEY: the tracker serves every key."""


def _id(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def test_the_seed_jobs_exist_in_both_versions_next_to_the_runnable_cpu_examples() -> None:
    assert {_id(p) for p in EXAMPLE_FILES} == {
        "v1/train/mx_job_dist_cpu.yaml",
        "v1/train/mx_job_dist_cpu_resume.yaml",
        "v1/train/mx_job_dist_gpu.yaml",
        "v1/tune/mx_job_tune_cpu.yaml",
        "v1/tune/mx_job_tune_gpu.yaml",
        "v1beta1/train/mx_job_dist_gpu.yaml",
        "v1beta1/tune/mx_job_tune_gpu.yaml",
    }


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_id)
def test_example_passes_server_side_admission_and_gets_the_operator_env(
    path: Path, control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    result = control_plane.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", str(path), "-o", "json", check=False
    )
    assert result.returncode == 0, result.stderr
    admitted = json.loads(result.stdout)
    written = load_job(path)
    assert admitted["apiVersion"] == written["apiVersion"]
    mode = admitted["spec"]["jobMode"]
    name = admitted["metadata"]["name"]
    for rtype, replica in admitted["spec"]["mxReplicaSpecs"].items():
        containers = replica["template"]["spec"]["containers"]
        mxnet = next(c for c in containers if c["name"] == "mxnet")
        env = {e["name"] for e in mxnet.get("env", [])}
        assert OWNED_BY_MODE[mode] <= env, f"{rtype}: webhook env missing, got {sorted(env)}"
        assert ("TVM_TRACKER_KEY" in env) == (rtype in TRACKER_CLIENTS), (rtype, sorted(env))
        pod = written["spec"]["mxReplicaSpecs"][rtype]["template"]["spec"]
        original = next(c for c in pod["containers"] if c["name"] == "mxnet")
        progress_env = [e for e in mxnet["env"] if e["name"].startswith("MXJOB_STATUS_")]
        assert progress_env == mxnet["env"][-3:] == status_env(namespace, name), rtype
        assert mxnet["volumeMounts"] == [*original.get("volumeMounts", []), STATUS_MOUNT], rtype
        assert replica["template"]["spec"]["volumes"] == [
            *pod.get("volumes", []), status_volume(name)
        ], rtype  # fmt: skip
        gpus = (original.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu")
        if gpus is not None:
            admitted_gpus = mxnet["resources"]["limits"]["nvidia.com/gpu"]
            assert str(admitted_gpus) == str(gpus)


@pytest.mark.parametrize("path", [p for p in EXAMPLE_FILES if "gpu" in p.name], ids=_id)
def test_gpu_examples_ask_for_a_gpu(path: Path) -> None:
    job = load_job(path)
    limits = [
        (c.get("resources") or {}).get("limits", {})
        for replica in job["spec"]["mxReplicaSpecs"].values()
        for c in replica["template"]["spec"]["containers"]
    ]
    assert any("nvidia.com/gpu" in limit for limit in limits)
