"""Fidelity: real MXNet and TVM clusters form from exactly what the operator put into the pods.

The CPU examples go through the real ``kubectl``, API server, webhook and controller; the
exec-mode test kubelet runs each pod's command as a local process with the pod's env, so the
processes find each other only through the injected env and the pods' Service names:

- train (``examples/v1/train/mx_job_dist_cpu.yaml``): ps-lite's scheduler, server and two
  workers from the ``DMLC_*`` env; the loss must fall and both workers must end with the same
  parameters; a real process failing with exit code 2 must fail the job with that code shown;
- tune (``examples/v1/tune/mx_job_tune_cpu.yaml``): ``examples/scripts/start_tune.py`` takes its
  role from ``MX_CONFIG`` and the tracker from ``TVM_TRACKER_*``; the tracker binds the port
  listed for it, both servers register under the ``tuner-server-key`` annotation's value, and
  MetaSchedule's RPC runner reaches servers only through the tracker (a server accepts only the
  match key the tracker hands out); trials must be measured on both servers, and the best kernel
  checked against NumPy.

The tests read what the processes printed into their pod log files.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import Api
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.scenarios.demo import examples_kubelet, pod_log
from localkube.scenarios.jobwatch import EXAMPLES, load_job, on_free_ports
from tests.e2e.controller_fixtures import (
    condition,
    events,
    pods,
    status,
)
from tests.helpers.waiting import wait_for

TRAIN_EXAMPLE = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu.yaml"
TUNE_EXAMPLE = EXAMPLES / "v1" / "tune" / "mx_job_tune_cpu.yaml"
TUNE_GPU_EXAMPLE = EXAMPLES / "v1" / "tune" / "mx_job_tune_gpu.yaml"
GPU_DEVICE = Path("/dev/nvidia0")
TRAIN_JOB = "dist-train-cpu"
TUNE_JOB = "tune-cpu"
EPOCH = re.compile(r"^epoch (\d+)/(\d+) loss ([0-9.]+)", re.MULTILINE)
DIGEST = re.compile(r"^final parameters sha256 ([0-9a-f]{64})$", re.MULTILINE)
RANK = re.compile(r"^worker rank (\d+) of (\d+)", re.MULTILINE)
TRIAL = re.compile(
    r"^trial (\d+) on server (\S+): (?:([0-9.]+) us per run|error: .*)$", re.MULTILINE
)
BEST = re.compile(
    r"^best kernel checked against NumPy on server (\S+): ([0-9.]+) us per run \(trial (\d+) "
    r"on server \S+\); untuned ([0-9.]+) us per run; speed-up ([0-9.]+)x$",
    re.MULTILINE,
)


def require_importable(module: str) -> None:
    """Fail (never skip) when the examples' dependencies are missing: the test would be void."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, (
        f"`import {module}` fails in {sys.executable}; install the examples extra "
        f"(make venv, or pip install -e '.[examples]'):\n{result.stderr[-2000:]}"
    )


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "pods"


@pytest.fixture
def exec_kubelet(api: Api, namespace: str, log_dir: Path) -> Iterator[TestKubelet]:
    require_importable("mxnet")
    require_importable("tvm.rpc.tracker")  # the tracker also needs tornado
    with examples_kubelet(
        api, node_name=f"node-{namespace}", namespace=namespace, log_dir=log_dir
    ) as kubelet:
        yield kubelet
    api.request("DELETE", f"/api/v1/nodes/{kubelet.node_name}")


def apply(plane: ControlPlane, namespace: str, job: dict[str, Any]) -> None:
    """``kubectl apply`` the job, as a user would (ports moved off 9091: one shared host)."""
    plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(job))


def wait_finished(
    api: Api, namespace: str, name: str, log_dir: Path, *, timeout: float = 120
) -> dict[str, Any]:
    """Wait for Succeeded or Failed; on a timeout show what every process printed."""

    try:
        return wait_for(
            f"MXJob {name} finished",
            lambda: status(api, namespace, name),
            lambda current: current.get("state") in ("Succeeded", "Failed"),
            timeout=timeout,
            interval=0.2,
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\n{all_logs(log_dir)}") from None


def all_logs(log_dir: Path) -> str:
    return "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
        for path in sorted(log_dir.glob("*.log"))
    )


def exit_code(pod: dict[str, Any]) -> int | None:
    for container in pod.get("status", {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if container.get("name") == "mxnet" and terminated:
            return int(terminated["exitCode"])
    return None


@pytest.mark.usefixtures("controller", "exec_kubelet")
def test_cpu_train_example_succeeds_with_falling_loss_and_identical_worker_parameters(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    log_dir: Path,
) -> None:
    example = load_job(TRAIN_EXAMPLE)
    apply(control_plane, namespace, on_free_ports(example))

    final = wait_finished(api, namespace, TRAIN_JOB, log_dir)
    assert final["state"] == "Succeeded", f"{final}\n{all_logs(log_dir)}"
    scheduler = pods(api, namespace, job=TRAIN_JOB)[f"{TRAIN_JOB}-scheduler-0"]
    assert exit_code(scheduler) == 0  # success is the scheduler's exit code

    args = example["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]
    epochs = int(args[args.index("--epochs") + 1])
    digests, ranks = [], set()
    for index in (0, 1):
        text = pod_log(log_dir, namespace, f"{TRAIN_JOB}-worker-{index}").read_text()
        losses = [float(loss) for _, _, loss in EPOCH.findall(text)]
        assert len(losses) == epochs, text
        assert all(later < earlier for earlier, later in itertools.pairwise(losses)), (
            f"worker {index} loss did not fall every epoch: {losses}"
        )
        assert losses[-1] < losses[0] / 2, f"worker {index} barely learned: {losses}"
        rank_match = RANK.search(text)
        assert rank_match and rank_match.group(2) == "2", text  # ps-lite saw both workers
        ranks.add(int(rank_match.group(1)))
        digest = DIGEST.findall(text)
        assert len(digest) == 1, text
        digests.append(digest[0])
    assert ranks == {0, 1}
    assert digests[0] == digests[1], "dist_sync workers ended with different parameters"
    scheduler_log = pod_log(log_dir, namespace, f"{TRAIN_JOB}-scheduler-0").read_text()
    assert f"scheduler {TRAIN_JOB}-scheduler-0:" in scheduler_log  # the injected DMLC_PS_ROOT_URI


@pytest.mark.usefixtures("controller", "exec_kubelet")
def test_train_example_with_a_bad_argument_fails_the_job_with_exit_code_2(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    log_dir: Path,
) -> None:
    job = on_free_ports(load_job(TRAIN_EXAMPLE))
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["args"] = ["--epochs", "five"]  # argparse exits 2: a bug, not worth a retry
    apply(control_plane, namespace, job)

    final = wait_finished(api, namespace, TRAIN_JOB, log_dir)
    assert final["state"] == "Failed", f"{final}\n{all_logs(log_dir)}"
    assert final.get("restartCount", 0) == 0
    failed = condition(final, "Failed")
    assert failed is not None and failed["status"] == "True"
    assert "exited with code 2" in failed["message"], failed
    worker_log = pod_log(log_dir, namespace, f"{TRAIN_JOB}-worker-0").read_text()
    assert "argument --epochs: invalid int value: 'five'" in worker_log
    # Both workers exit 2; the job fails on the first, and a worker still starting may be
    # removed as Running, so any worker pod kept with exit code 2 is the evidence.
    wait_for(
        "a failed worker pod kept for its logs, with exit code 2",
        lambda: {
            name: exit_code(pod)
            for name, pod in pods(api, namespace, job=TRAIN_JOB).items()
            if "-worker-" in name
        },
        lambda codes: 2 in codes.values(),
        timeout=30,
    )
    # Events are written in the background, after the status: wait for the one that says why.
    wait_for(
        "a Warning event with exit code 2",
        lambda: [
            f"{e['type']} {e['reason']}: {e['message']}" for e in events(api, namespace, TRAIN_JOB)
        ],
        lambda messages: any(m.startswith("Warning") and "code 2" in m for m in messages),
        timeout=30,
    )
    described = control_plane.kubectl("describe", "mxjob", TRAIN_JOB, "-n", namespace).stdout
    assert "exited with code 2" in described


@pytest.mark.usefixtures("controller", "exec_kubelet")
@pytest.mark.timeout(420)
def test_cpu_tune_example_succeeds_using_both_servers_through_the_tracker(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    log_dir: Path,
) -> None:
    example = load_job(TUNE_EXAMPLE)
    specs = example["spec"]["mxReplicaSpecs"]
    key = specs["TunerServer"]["template"]["metadata"]["annotations"]["tuner-server-key"]
    job = on_free_ports(example)
    tracker_port = job["spec"]["mxReplicaSpecs"]["TunerTracker"]["template"]["spec"]["containers"][
        0
    ]["ports"][0]["containerPort"]
    apply(control_plane, namespace, job)

    # MetaSchedule compiles before the first trial: minutes on two cores shared with other tests.
    final = wait_finished(api, namespace, TUNE_JOB, log_dir, timeout=300)
    assert final["state"] == "Succeeded", f"{final}\n{all_logs(log_dir)}"
    assert exit_code(pods(api, namespace, job=TUNE_JOB)[f"{TUNE_JOB}-tuner-0"]) == 0

    tracker_log = pod_log(log_dir, namespace, f"{TUNE_JOB}-tunertracker-0").read_text()
    assert f"bind to 127.0.0.1:{tracker_port}" in tracker_log  # the port MX_CONFIG gave it

    tuner_log = pod_log(log_dir, namespace, f"{TUNE_JOB}-tuner-0").read_text()
    registered = re.search(
        rf"^tracker {TUNE_JOB}-tunertracker-0:{tracker_port}: 2 servers under key '{key}': "
        r"\['(127\.0\.0\.1:\d+)', '(127\.0\.0\.1:\d+)'\]$",
        tuner_log,
        re.MULTILINE,
    )
    assert registered, tuner_log
    assert registered.group(1) != registered.group(2)  # two servers, not one twice
    # Every server's address, as it bound it: what the tracker hands out for it.
    servers = {}
    for index in (0, 1):
        server_log = pod_log(log_dir, namespace, f"{TUNE_JOB}-tunerserver-{index}").read_text()
        assert f"--key={key}" in server_log, server_log  # TVM_TRACKER_KEY, the annotation's value
        bound = re.search(r"bind to (127\.0\.0\.1:\d+)", server_log)
        assert bound, server_log
        servers[bound.group(1)] = index
        # MetaSchedule's runner uploaded candidates to it in sessions the tracker matched.
        assert "connected from ('127.0.0.1'" in server_log, server_log
        assert "load_module" in server_log, server_log
    assert set(servers) == {registered.group(1), registered.group(2)}
    trials = TRIAL.findall(tuner_log)
    args = specs["Tuner"]["template"]["spec"]["containers"][0]["args"]
    count = int(args[args.index("--trials") + 1])
    assert [int(number) for number, _, _ in trials] == list(range(1, count + 1)), tuner_log
    measured = [(servers[address], float(us)) for _, address, us in trials if us]
    assert len(measured) == count, tuner_log  # nothing failed
    by_server = {index: sum(1 for s, _ in measured if s == index) for index in (0, 1)}
    assert all(by_server.values()), by_server  # both servers measured trials
    best = BEST.search(tuner_log)
    assert best, tuner_log
    assert best.group(1) in servers
    speed_up = float(best.group(4)) / float(best.group(2))
    assert abs(speed_up - float(best.group(5))) < 0.1
    # The JSON database holds every measured trial (no volume here: a temporary directory).
    assert re.search(rf"^database in \S+: {count} tuning records$", tuner_log, re.M), tuner_log


@pytest.fixture
def nvidia_gpu() -> None:
    """The GPU example needs a GPU: the one test here that skips, saying which device is
    missing, rather than fail on every machine without one."""
    if not GPU_DEVICE.exists():
        pytest.skip(f"no NVIDIA GPU: {GPU_DEVICE} is absent")
    require_importable("cuda.bindings.nvrtc")  # apache-tvm[cuda]: the tuner builds with NVRTC


@pytest.mark.usefixtures("nvidia_gpu", "controller", "exec_kubelet")
def test_gpu_tune_example_tunes_the_matmul_for_the_gpu_on_its_server(
    api: Api,
    namespace: str,
    control_plane: ControlPlane,
    log_dir: Path,
) -> None:
    example = load_job(TUNE_GPU_EXAMPLE)
    name = example["metadata"]["name"]
    specs = example["spec"]["mxReplicaSpecs"]
    args = specs["Tuner"]["template"]["spec"]["containers"][0]["args"]
    count = int(args[args.index("--trials") + 1])
    apply(control_plane, namespace, on_free_ports(example))

    final = wait_finished(api, namespace, name, log_dir)
    assert final["state"] == "Succeeded", f"{final}\n{all_logs(log_dir)}"
    tuner_log = pod_log(log_dir, namespace, f"{name}-tuner-0").read_text()
    assert re.search(r'^tuning for target \{"kind":"cuda"', tuner_log, re.M), tuner_log
    trials = TRIAL.findall(tuner_log)
    assert [int(number) for number, _, _ in trials] == list(range(1, count + 1)), tuner_log
    assert any(us for _, _, us in trials), tuner_log  # the server's GPU ran candidates
    best = BEST.search(tuner_log)
    assert best, tuner_log
