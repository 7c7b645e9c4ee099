"""activeDeadlineSeconds: a timer, then DeadlineExceeded."""

from __future__ import annotations

from tests.controller.job.status.status_samples import cond, step
from tests.controller.samples import job, later, pods_all


def test_the_deadline_arms_a_timer_then_fails_the_job_and_stops_its_pods() -> None:
    stored, outcome = step(job(run_policy={"activeDeadlineSeconds": 5}), [])
    assert outcome.requeue_after == 5
    stored, outcome = step(stored, pods_all(stored), now=later(3))
    assert outcome.requeue_after == 2
    _, outcome = step(stored, pods_all(stored), now=later(5))
    assert outcome.became == "Failed" and outcome.stop_active
    failed = cond(outcome.status, "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert [e.reason for e in outcome.events] == ["DeadlineExceeded"]
