"""``make demo``: after it exits, ``kubectl logs [-f]`` of its pods still works until dev-down.

The demo runs as the command ``make demo`` runs (``python -m localkube.scenarios.demo``) on a
control plane of its own (its own ``--state-dir``, as a developer's ``.local``): it starts a
controller that watches every namespace, which must not meet the jobs of the session's other tests.
Its test kubelet is a background process; once the demo's process is gone, the real ``kubectl logs``
reaches the pods through it. A second run replaces that kubelet, and ``dev-down`` stops it. The
job's progress shows as a real cluster's would: its worker 0 reports with the token and CA of its
pod's volume to the controller, which takes reports on the port of the URL the pod is told.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from localkube.base import processes
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator
from localkube.plane.settings import ControlPlaneSettings
from localkube.scenarios.demo import KUBELET_LOG
from localkube.scenarios.jobwatch import DEMO_NAMESPACE, EXAMPLES

WORKER = "dist-train-cpu-worker-0"


def kubelet_processes(state_dir: Path) -> list[int]:
    """Pids of live ``localkube.kubelet.daemon`` processes serving ``state_dir``'s plane."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            processes.running(int(proc.name))
            and b"localkube.kubelet.daemon" in argv
            and str(state_dir).encode() in (b" ".join(argv))
        ):
            found.append(int(proc.name))
    return found


def localkube(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    """The demo's own state dir; everything it leaves running is stopped after the test."""
    directory = tmp_path / "local"
    try:
        yield directory
    finally:
        down = localkube("localkube", "dev-down", "--state-dir", str(directory))
        assert down.returncode == 0, down.stderr
        assert kubelet_processes(directory) == [], "dev-down must stop the demo's kubelet"


def test_kubectl_logs_works_after_the_demo_exits_until_dev_down(state_dir: Path) -> None:
    demo = localkube("localkube.scenarios.demo", "--state-dir", str(state_dir))
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "keeps running after the demo" in demo.stdout
    plane = ControlPlane(ControlPlaneSettings(state_dir=state_dir))
    # Worker 0 reported to the demo's controller, through the token and CA its pod mounts, and
    # the live line showed the final report.
    final = re.search(r"^\[ *[0-9.]+s\] progress  \| 100% .*$", demo.stdout, re.MULTILINE)
    assert final is not None and "epoch 5/5" in final.group(0), demo.stdout[-3000:]
    job = json.loads(
        plane.kubectl("get", "mxjob", "dist-train-cpu", "-n", DEMO_NAMESPACE, "-o", "json").stdout
    )
    assert job["status"]["trainerStatus"]["progressPercentage"] == 100
    first = LocalOperator(plane).state().kubelet_pid
    assert kubelet_processes(state_dir) == [first]

    # The demo's process is gone: the Node's port is served by the background kubelet.
    logs = plane.kubectl("logs", "-n", DEMO_NAMESPACE, WORKER, check=False)
    assert logs.returncode == 0, logs.stderr
    assert "worker rank" in logs.stdout
    assert "final parameters sha256" in logs.stdout
    assert logs.stdout.rstrip().endswith("worker done")
    # `-f` of a container that has ended prints everything and returns.
    followed = plane.kubectl("logs", "-f", "-n", DEMO_NAMESPACE, WORKER, check=False, timeout=30)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout == logs.stdout
    node = json.loads(plane.kubectl("get", "node", "demo-node", "-o", "json").stdout)
    port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
    assert f"127.0.0.1:{port}" in (plane.logs / KUBELET_LOG).read_text()

    # Again: the previous job is deleted, its kubelet replaced by one (and only one) new one.
    again = localkube("localkube.scenarios.demo", "--state-dir", str(state_dir))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "deleted the MXJob dist-train-cpu of a previous run" in again.stdout
    second = LocalOperator(plane).state().kubelet_pid
    assert second != first
    assert kubelet_processes(state_dir) == [second]
    logs = plane.kubectl("logs", "-n", DEMO_NAMESPACE, WORKER, "--tail=1", check=False)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.strip() == "worker done"

    # The resumable example with a worker killed mid-training, on the same plane: the job
    # restarts as a whole, resumes from its checkpoint and Succeeds.
    resume = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu_resume.yaml"
    killed = localkube("localkube.scenarios.demo", "--state-dir", str(state_dir), "--job",
                       str(resume), "--kill-worker")  # fmt: skip
    assert killed.returncode == 0, killed.stdout[-3000:] + killed.stderr[-3000:]
    shown = killed.stdout
    assert "ending this worker now (sigkill)" in shown and "MXJob Restarting" in shown, shown
    assert shown.count("resumed from checkpoint epoch 2") == 2, shown
    assert re.search(r"dist-train-cpu-resume\s+Succeeded\s+MXTrain\s+1\s", shown), shown
