"""Suspend and resume: no pods and no deadline while suspended, startTime reset on resume."""

from __future__ import annotations

from shared.apitime import format_time
from tests.controller.job.status.status_samples import cond, step
from tests.controller.samples import job, later, pods_all


def test_suspend_stops_running_and_resume_resets_the_start_time() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    stored["spec"]["runPolicy"]["suspend"] = True
    stored, outcome = step(stored, pods_all(stored), now=later(5))
    assert outcome.suspended
    assert [e.reason for e in outcome.events] == ["MXJobSuspended"]
    assert outcome.status["state"] == "Suspended"
    assert cond(outcome.status, "Running")["status"] == "False"  # type: ignore[index]
    assert outcome.status["replicaStatuses"]["Worker"]["active"] == 0
    stored["spec"]["runPolicy"]["suspend"] = False
    _, outcome = step(stored, [], now=later(60))
    suspended = cond(outcome.status, "Suspended")
    assert suspended is not None and suspended["status"] == "False"
    assert suspended["reason"] == "MXJobResumed"
    assert [e.reason for e in outcome.events] == ["MXJobResumed"]
    assert outcome.status["startTime"] == format_time(later(60))
    assert outcome.status["state"] == "Created"


def test_a_suspended_job_has_no_deadline() -> None:
    stored, _ = step(job(run_policy={"activeDeadlineSeconds": 5, "suspend": True}), [])
    _, outcome = step(stored, [], now=later(3600))
    assert not outcome.finished and outcome.requeue_after is None
