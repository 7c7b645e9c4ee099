"""training-operator v1.8.1's own MXJob examples apply unchanged through this operator's admission.

The files are read from the pinned module's source in the Go module cache
(``localkube.thirdparty.training_operator.examples_dir``: ``examples/mxnet`` of
github.com/kubeflow/training-operator@v1.8.1), not copied. Each is applied with ``kubectl apply``
as its README says, through the real API server and this project's webhooks, and read back:
what the user wrote is kept, the operator's env is added, and so are exactly the env, volume and
mount its pods report progress with (tests/e2e/progress_wiring.py): a file written for
training-operator needs no change for them.

None of them can run on this machine, which is why none is run here (docs/migrating.md):
``mxjob_dist_v1.yaml`` trains with ``--gpus 0`` and ``dist_device_sync`` on ``nvidia.com/gpu``,
from a script of MXNet's source tree that downloads MNIST; ``byteps/dist_gpu_v1.yaml`` needs
BytePS and 8 GPUs per worker; the Tuner of ``tune/mx_job_tune_gpu_v1.yaml`` runs
``auto-tuning.py``, which imports ``nnvm`` (gone from TVM since 0.7) and tunes for CUDA.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import RunningOperator
from localkube.scenarios.jobwatch import load_job
from localkube.thirdparty.training_operator import examples_dir
from shared.defaults import apply_defaults
from shared.env import resolve_env
from tests.e2e.progress_wiring import with_progress

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
    name = written["metadata"]["name"]
    stored = json.loads(
        control_plane.kubectl("get", "mxjob", name, "-n", namespace, "-o", "json").stdout
    )
    defaulted = apply_defaults(written)["spec"]["mxReplicaSpecs"]
    assert stored["spec"]["jobMode"] == written["spec"]["jobMode"]
    if "runPolicy" in written["spec"]:
        assert written["spec"]["runPolicy"].items() <= stored["spec"]["runPolicy"].items()
    for rtype, replica in written["spec"]["mxReplicaSpecs"].items():
        kept = stored["spec"]["mxReplicaSpecs"][rtype]
        assert kept["replicas"] == replica["replicas"]
        assert kept["restartPolicy"] == replica["restartPolicy"]
        mine = replica["template"]["spec"]["containers"][0]
        theirs = kept["template"]["spec"]["containers"][0]
        for field in ("name", "image", "command", "args", "resources"):
            assert theirs.get(field) == mine.get(field), f"{rtype}.{field}"
        # The operator's env (shared/defaults.py), then the progress env; the user's mounts and
        # volumes, then the progress volume's.
        expected = with_progress(defaulted[rtype]["template"], namespace=namespace, job=name)
        (container,) = expected["spec"]["containers"]
        assert theirs["env"] == container["env"], rtype
        assert theirs["volumeMounts"] == container["volumeMounts"], rtype
        assert kept["template"]["spec"]["volumes"] == expected["spec"]["volumes"], rtype
        for port in mine.get("ports", []):  # the protocol defaulted, as in a Pod
            assert {"protocol": "TCP", **port} in theirs["ports"]
        env = {e["name"]: e.get("value") for e in theirs.get("env", [])}
        assert "MX_CONFIG" in env, rtype
        if written["spec"]["jobMode"] == "MXTrain":
            assert env["DMLC_ROLE"] == rtype.lower()
            scheduler_ports = written["spec"]["mxReplicaSpecs"]["Scheduler"]["template"]["spec"][
                "containers"
            ][0].get("ports", [{"containerPort": 9091}])
            assert env["DMLC_PS_ROOT_PORT"] == str(scheduler_ports[0]["containerPort"])


def test_its_tune_script_unchanged_finds_what_it_reads_in_the_env_of_every_role(
    control_plane: ControlPlane, local_operator: RunningOperator, namespace: str, tmp_path: Path
) -> None:
    """Its ``start-job.py`` reads ``MX_CONFIG["labels"]["tunerserver"]`` in two roles.

    The script is run as written, for each role, with the env this operator injected into the
    stored job (resolved as the kubelet would for index 0). The ``python3`` it starts each TVM
    process with is a stand-in on PATH that records the command line, since the processes it
    starts (an RPC tracker and server that never exit, a tuner for CUDA) cannot run here, and
    its ``time.sleep(5)`` is skipped.
    """
    path = EXAMPLES / "tune" / "mx_job_tune_gpu_v1.yaml"
    control_plane.kubectl("apply", "-n", namespace, "-f", str(path))
    name = load_job(path)["metadata"]["name"]
    stored = json.loads(
        control_plane.kubectl("get", "mxjob", name, "-n", namespace, "-o", "json").stdout
    )
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    calls = tmp_path / "calls.txt"
    shim = shim_dir / "python3"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    shim.chmod(0o755)
    runner = (
        "import runpy, sys, time; time.sleep = lambda seconds: None; "
        "runpy.run_path(sys.argv[1], run_name='__main__')"
    )
    expected = {
        "TunerTracker": "-m tvm.exec.rpc_tracker --port=9991",
        "TunerServer": f"-m tvm.exec.rpc_server --tracker={name}-tunertracker-0:9991 --key=",
        "Tuner": (
            f"/home/scripts/auto-tuning.py --tracker {name}-tunertracker-0 --tracker_port 9991 "
            "--server_key "
        ),
    }
    for rtype, replica in stored["spec"]["mxReplicaSpecs"].items():
        container = replica["template"]["spec"]["containers"][0]
        labels = {"training.kubeflow.org/replica-index": "0"}
        env = resolve_env(container["env"], pod_metadata={"labels": labels})
        calls.unlink(missing_ok=True)
        ran = subprocess.run(
            [sys.executable, "-c", runner, str(EXAMPLES / "tune" / "start-job.py")],
            env={"PATH": f"{shim_dir}:/usr/bin:/bin", **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert ran.returncode == 0, (rtype, ran.stderr)
        assert calls.read_text().strip() == expected[rtype].strip(), rtype
