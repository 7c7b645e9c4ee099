"""A real MXNet job that hangs: ``runPolicy.progressDeadlineSeconds`` restarts it, and without it
the job holds its node with no end.

Two runs of the resumable train example (real MXNet 1.9.1 ``dist_sync``, a checkpoint volume
each; tests/e2e/recovery_jobs.py) side by side on the real node, alike but for the deadline.
Worker 0 reports its progress to the controller's endpoint (examples/scripts/train_dist.py,
through sdk/mxjob_progress). Once worker 0 saved checkpoint 2, worker 1's processes get SIGSTOP
from the host, as a node's freezer or a stuck read leaves a process: it lives, no exit code
ever comes, and ``dist_sync`` blocks worker 0 at its next push, so the reports stop.

- With the deadline, the job gets ``Progressing`` False (``ProgressDeadlineExceeded``) and a
  Warning, restarts as a whole (the stopped pod is deleted with the others), resumes from its
  checkpoint and ``Succeeded``: one restart, counted against ``backoffLimit``.
- Without it, the job is still ``Running`` two deadlines after the stop (the other run was
  restarted within one), its progress where the stop left it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from contextlib import ExitStack, suppress
from fractions import Fraction
from typing import Any

import pytest

from tests.e2e.failing_jobs import condition, events_of, mxjob
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.e2e.recovery_jobs import (
    Checkpoints,
    Run,
    checkpoint_claim,
    container_processes,
    resumable_job,
    resumed,
    status_of,
)
from tests.helpers.figures import Figures
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(600)

DEADLINE = 45
"""Seconds without a report: above the longest gap a healthy attempt leaves (a restart's pods
ended and made again, MXNet imported, the first batch), well under the test's patience."""
EPOCH_PAUSE = 5.0
"""Seconds after each of the 6 epochs: the jobs still train after checkpoint 2 and a written
report (the reporter sends every 5 s, the endpoint writes every 5 s)."""
STOPPED = "worker 1 SIGSTOPped after checkpoint 2"


def stop_container(pod: str) -> list[int]:
    """SIGSTOP every process of the pod's ``mxnet`` container: alive, and silent."""
    pids = wait_for(f"the processes of {pod}", lambda: container_processes(pod), bool, timeout=30)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    return pids


def kill(stopped: dict[str, list[int]]) -> None:
    """The stopped processes killed at the end: a stopped process never takes the SIGTERM of
    its pod's deletion, so the kubelet would wait out the grace period for each."""
    for pids in stopped.values():
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def progress_of(status: dict[str, Any]) -> int | None:
    found = (status.get("trainerStatus") or {}).get("progressPercentage")
    return found if isinstance(found, int) else None


def reported_past_zero(installed: InstalledCluster, name: str) -> None:
    """Wait for a written report past 0 %: the stop then freezes a progress the job made."""
    wait_for(
        f"{name}'s progress past 0 %", lambda: status_of(installed, name, name),
        lambda status: (progress_of(status) or 0) > 0, timeout=30,
    )  # fmt: skip


def start(installed: InstalledCluster, namespace: str, name: str, *, deadline: int | None) -> Any:
    """The resumable job ``name``, in half of the node (two run side by side), created in
    ``namespace``."""
    job = resumable_job(installed, name, claim_name=f"{name}-checkpoints",
                        epoch_pause=EPOCH_PAUSE, share=Fraction(1, 2))  # fmt: skip
    if deadline is not None:
        job["spec"]["runPolicy"]["progressDeadlineSeconds"] = deadline
    installed.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    return job


def test_a_hung_worker_restarts_the_job_with_a_progress_deadline_and_holds_it_without(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    watched = {"deadline": "hang-deadline", "none": "hang-none"}
    for name in watched.values():
        namespace_for(real_cluster, name)
    with ExitStack() as stack:
        claims: dict[str, Checkpoints] = {
            key: stack.enter_context(checkpoint_claim(
                real_cluster, name, claim_name=f"{name}-checkpoints"))
            for key, name in watched.items()
        }  # fmt: skip
        creations = PodCreations(real_cluster.api, watched["deadline"])
        stack.callback(creations.stop)
        created = time.monotonic()
        start(real_cluster, watched["deadline"], watched["deadline"], deadline=DEADLINE)
        start(real_cluster, watched["none"], watched["none"], deadline=None)
        stopped_pids: dict[str, list[int]] = {}
        for key, name in watched.items():
            wait_for(f"{name}'s checkpoint 2", claims[key].epoch, lambda e: e >= 2, timeout=240)
            reported_past_zero(real_cluster, name)
            stopped_pids[key] = stop_container(f"{name}-worker-1")
        stack.callback(kill, stopped_pids)
        stopped = time.monotonic()
        check_restarted_and_resumed(real_cluster, watched["deadline"], created, stopped, figures)
        check_still_running(real_cluster, watched["none"], stopped, figures)
        made = sorted(pod for pod, _ in creations.seen)
        slots = ["scheduler-0", "server-0", "worker-0", "worker-1"]
        assert made == sorted(f"{watched['deadline']}-{s}" for s in slots for _ in range(2)), made
    remove_namespace(real_cluster, *watched.values())


def check_restarted_and_resumed(
    installed: InstalledCluster, name: str, created: float, stopped: float, figures: Figures
) -> None:
    """The job with the deadline: restarted for it, resumed, Succeeded."""
    restarting = wait_for(
        f"{name} restarted for its progress deadline", lambda: status_of(installed, name, name),
        lambda status: status.get("restartCount", 0) >= 1, timeout=DEADLINE + 90,
    )  # fmt: skip
    restarted_after = time.monotonic() - stopped
    final = wait_for(
        f"{name} to finish", lambda: status_of(installed, name, name),
        lambda status: status.get("state") in ("Succeeded", "Failed"), timeout=240,
    )  # fmt: skip
    assert final.get("state") == "Succeeded", final
    (entry,) = final["restarts"]
    assert entry["reason"] == "ProgressDeadlineExceeded", entry
    assert entry["scope"] == "Job" and entry["countedAgainstBackoff"] is True, entry
    assert final.get("restartCount") == 1 and final.get("attempt") == 1, final
    assert DEADLINE - 15 <= restarted_after <= DEADLINE + 60, (restarted_after, restarting)
    events = events_of(installed.api, name, name)
    assert any(e.startswith("ProgressDeadlineExceeded:") for e in events), events
    assert progress_of(final) == 100, final.get("trainerStatus")
    logs = {
        f"{name}-worker-{i}": installed.plane.kubectl(
            "logs", "-n", name, f"{name}-worker-{i}"
        ).stdout
        for i in range(2)
    }
    result = resumed_from(name, logs)
    figures.record(
        table="hang", case=f"{STOPPED}, `progressDeadlineSeconds: {DEADLINE}`",
        restarted_after_stop_s=round(restarted_after, 1),
        succeeded_after_s=round(time.monotonic() - created, 1),
        restarts=final["restartCount"], cause=entry["reason"], counted=True,
        resumed_from_epoch=result,
    )  # fmt: skip


def resumed_from(name: str, logs: dict[str, str]) -> int:
    """The checkpoint epoch both workers of the last attempt resumed from (>= 2)."""
    run = Run(name, name, logs=logs)
    result = resumed(run)
    assert result.from_epoch >= 2 and len(result.digests) == 1, result
    return result.from_epoch


def check_still_running(
    installed: InstalledCluster, name: str, stopped: float, figures: Figures
) -> None:
    """The job without the deadline: Running two deadlines after the stop, not a report more."""
    before = mxjob(installed.api, name, name)
    time.sleep(max(0.0, stopped + 2 * DEADLINE - time.monotonic()))
    job = mxjob(installed.api, name, name)
    status = job["status"]
    assert status.get("state") == "Running" and not status.get("restartCount"), status
    assert condition(job, "Running").get("status") == "True", status["conditions"]
    trainer = status.get("trainerStatus") or {}
    assert 0 < (progress_of(status) or 0) < 100, trainer
    assert trainer == before["status"].get("trainerStatus"), (before["status"], trainer)
    # kubectl shows where it stopped: STATE, MODE, RESTARTS, PROGRESS (and ETA with -o wide).
    shown = installed.plane.kubectl("get", "mxjobs", "-n", name, "-o", "wide").stdout
    row = rf"^{name}\s+Running\s+MXTrain\s+0\s+{progress_of(status)}\s"
    assert re.search(row, shown, re.MULTILINE), shown
    figures.record(
        table="hang", case=f"{STOPPED}, no deadline",
        still_running_after_stop_s=round(time.monotonic() - stopped, 1),
        restarts=0, progress_percentage=progress_of(status) or 0,
    )  # fmt: skip
