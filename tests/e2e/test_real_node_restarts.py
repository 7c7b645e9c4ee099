"""containerd, and then the kubelet, restarted under a training MXNet job on the real node.

Upgrades restart both while jobs run. Each test starts the CPU train example (a ps-lite
scheduler, a server and two workers, real MXNet in the examples image), waits until the job is
Running, restarts one program of the node as an upgrade would (SIGTERM, then the same command
line: ``RealNode.restart``), and follows the job to its end while
:class:`~tests.helpers.pod_creations.PodCreations` records every pod made. The containers run
on under their shims meanwhile, so the job must Succeed with each of its four pods made once.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from localkube.base.api import read_pod_log
from localkube.scenarios.jobwatch import DEFAULT_JOB, load_job
from localkube.scenarios.node_demo import node_fit
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.helpers.figures import Figures
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

JOB = "dist-train-cpu"
EPOCHS = 150


def state_of(installed: InstalledCluster, namespace: str) -> dict[str, Any]:
    job = installed.api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{JOB}")
    return dict(job.get("status", {}))


def worker_log(installed: InstalledCluster, namespace: str) -> str:
    return read_pod_log(installed.api, namespace, f"{JOB}-worker-0")


def longer(job: dict[str, Any]) -> dict[str, Any]:
    """The example with more epochs: training outlasts the restart (5 epochs take seconds)."""
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    args = worker["args"]
    args[args.index("--epochs") + 1] = str(EPOCHS)
    return job


def train_through_a_restart(installed: InstalledCluster, figures: Figures, program: str) -> None:
    """The train example through a restart of ``program``, and its figures."""
    namespace = namespace_for(installed, f"restart-{program}")
    creations = PodCreations(installed.api, namespace)
    try:
        fitted = node_fit(installed.cluster, longer(load_job(DEFAULT_JOB))).job
        started = time.monotonic()
        installed.plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(fitted))
        wait_for("the job Running", lambda: state_of(installed, namespace).get("state"),
                 lambda state: state == "Running", timeout=180)  # fmt: skip
        wait_for("worker 0 training", lambda: worker_log(installed, namespace),
                 lambda log: "epoch 5/" in log, timeout=120, interval=1)  # fmt: skip
        back_after = installed.node.restart(program, down_for=3)
        assert state_of(installed, namespace).get("state") == "Running", "restarted too late"
        final = wait_for(
            "the job to finish", lambda: state_of(installed, namespace),
            lambda status: status.get("state") in ("Succeeded", "Failed"), timeout=300,
        )  # fmt: skip
        seconds = time.monotonic() - started
    finally:
        creations.stop()
    assert final["state"] == "Succeeded", [c.get("message") for c in final["conditions"]]
    assert final.get("restartCount", 0) == 0, final
    names = sorted(name for name, _ in creations.seen)
    assert len(names) == len(set(names)) == 4, names  # scheduler, server, 2 workers: once each
    remove_namespace(installed, namespace)
    figures.record(
        table="node", case=f"{program} restarted (SIGTERM, down 3 s) while the job trains",
        restarted_at_epoch=5, back_after_s=round(back_after, 1),
        succeeded_after_s=round(seconds, 1), pods_made=4, restarts=0,
    )  # fmt: skip


def test_the_training_job_succeeds_through_a_containerd_restart(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    train_through_a_restart(real_cluster, figures, "containerd")


def test_the_training_job_succeeds_through_a_kubelet_restart(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    train_through_a_restart(real_cluster, figures, "kubelet")
