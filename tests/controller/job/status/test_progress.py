"""A job that goes on: created, then Running once every replica runs."""

from __future__ import annotations

from tests.controller.job.status.status_samples import cond, step
from tests.controller.samples import NOW_TEXT, job, pod, pods_all


def test_a_new_job_is_created_with_start_time_and_every_replica_counted_active() -> None:
    _, outcome = step(job(), [])
    status = outcome.status
    assert outcome.created
    assert status["state"] == "Created"
    assert cond(status, "Created")["reason"] == "MXJobCreated"  # type: ignore[index]
    assert status["startTime"] == NOW_TEXT
    assert status["restartCount"] == 0
    assert status["replicaStatuses"]["Worker"] == {
        "active": 2,
        "succeeded": 0,
        "failed": 0,
        "selector": (
            "training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=worker"
        ),
    }


def test_the_job_runs_once_every_replica_runs() -> None:
    stored, _ = step(job(), [])
    pending = [*pods_all(stored)[:-1], pod(stored, "worker-1", phase="Pending")]
    stored, outcome = step(stored, pending)
    assert outcome.status["state"] == "Created"
    _, outcome = step(stored, pods_all(stored))
    assert outcome.status["state"] == "Running"
    assert cond(outcome.status, "Running")["message"] == "MXJob mnist is running."  # type: ignore[index]
