"""training-operator v1.8.1's own MXJob examples apply unchanged through this operator's admission.

The files are read from the pinned module's source in the Go module cache
(``localkube.training_operator.examples_dir``: ``examples/mxnet`` of
github.com/kubeflow/training-operator@v1.8.1), not copied. Each is applied with ``kubectl apply``
as its README says, through the real API server and this project's webhooks, and read back:
what the user wrote is kept, the operator's env is added.

None of them can run on this machine, which is why none is run here (docs/migrating.md):
``mxjob_dist_v1.yaml`` trains with ``--gpus 0`` and ``dist_device_sync`` on ``nvidia.com/gpu``,
from a script of MXNet's source tree that downloads MNIST; ``byteps/dist_gpu_v1.yaml`` needs
BytePS and 8 GPUs per worker; the Tuner of ``tune/mx_job_tune_gpu_v1.yaml`` runs
``auto-tuning.py``, which imports ``nnvm`` (gone from TVM since 0.7) and tunes for CUDA.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localkube.cluster import ControlPlane
from localkube.demo import load_job
from localkube.operator import RunningOperator
from localkube.training_operator import examples_dir

EXAMPLES = examples_dir()
FILES = sorted(EXAMPLES.rglob("*.yaml"))


def _id(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def test_these_are_all_of_its_mxjob_examples() -> None:
    assert [_id(p) for p in FILES] == [
        "byteps/dist_gpu_v1.yaml",
        "mxjob_dist_v1.yaml",
        "tune/mx_job_tune_gpu_v1.yaml",
    ]


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_its_example_is_accepted_as_written_and_gets_the_operator_env(
    path: Path, control_plane: ControlPlane, local_operator: RunningOperator, namespace: str
) -> None:
    applied = control_plane.kubectl("apply", "-n", namespace, "-f", str(path), check=False)
    assert applied.returncode == 0, applied.stderr
    written = load_job(path)
    stored = json.loads(
        control_plane.kubectl(
            "get", "mxjob", written["metadata"]["name"], "-n", namespace, "-o", "json"
        ).stdout
    )
    assert stored["spec"]["jobMode"] == written["spec"]["jobMode"]
    if "runPolicy" in written["spec"]:
        assert written["spec"]["runPolicy"].items() <= stored["spec"]["runPolicy"].items()
    for rtype, replica in written["spec"]["mxReplicaSpecs"].items():
        kept = stored["spec"]["mxReplicaSpecs"][rtype]
        assert kept["replicas"] == replica["replicas"]
        assert kept["restartPolicy"] == replica["restartPolicy"]
        mine = replica["template"]["spec"]["containers"][0]
        theirs = kept["template"]["spec"]["containers"][0]
        for field in ("name", "image", "command", "args", "resources", "volumeMounts"):
            assert theirs.get(field) == mine.get(field), f"{rtype}.{field}"
        for port in mine.get("ports", []):
            assert port in theirs["ports"]
        env = {e["name"]: e.get("value") for e in theirs.get("env", [])}
        assert "MX_CONFIG" in env, rtype
        if written["spec"]["jobMode"] == "MXTrain":
            assert env["DMLC_ROLE"] == rtype.lower()
            scheduler_ports = written["spec"]["mxReplicaSpecs"]["Scheduler"]["template"]["spec"][
                "containers"
            ][0].get("ports", [{"containerPort": 9091}])
            assert env["DMLC_PS_ROOT_PORT"] == str(scheduler_ports[0]["containerPort"])
