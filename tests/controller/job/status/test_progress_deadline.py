"""runPolicy.progressDeadlineSeconds: a Running job without a progress report for that long
restarts as a whole, counted against backoffLimit, and fails once the limit is spent."""

from __future__ import annotations

from typing import Any

from shared.apitime import format_time
from tests.controller.job.status.status_samples import cond, step
from tests.controller.samples import NOW, job, later, pods_all

Obj = dict[str, Any]


def running(*, deadline: int | None = 60, backoff: int = 6) -> Obj:
    """A job whose four pods run (``Running`` True since ``NOW``)."""
    policy: dict[str, Any] = {"backoffLimit": backoff}
    if deadline is not None:
        policy["progressDeadlineSeconds"] = deadline
    stored, _ = step(job(run_policy=policy), [])
    stored, _ = step(stored, pods_all(stored))
    assert cond(stored["status"], "Running")["status"] == "True"  # type: ignore[index]
    return stored


def reported(stored: Obj, seconds: float) -> Obj:
    """The job as the progress endpoint leaves it: a report ``seconds`` after ``NOW``."""
    stored["status"]["trainerStatus"] = {
        "progressPercentage": 40, "lastUpdatedTime": format_time(later(seconds)),
    }  # fmt: skip
    return stored


def test_a_job_that_never_reported_is_never_restarted_by_the_deadline() -> None:
    stored = running()
    _, outcome = step(stored, pods_all(stored), now=later(3600))
    assert "restartCount" not in outcome.status or outcome.status["restartCount"] == 0
    assert not outcome.recreate and outcome.requeue_after is None
    assert cond(outcome.status, "Progressing") is None


def test_the_clock_runs_from_the_newest_report_and_arms_a_timer() -> None:
    stored = reported(running(), 30)
    _, outcome = step(stored, pods_all(stored), now=later(50))
    assert not outcome.recreate and outcome.requeue_after == 40.0  # 30 + 60 - 50


def test_no_report_for_the_deadline_restarts_the_whole_job_counted() -> None:
    stored = reported(running(), 30)
    after, outcome = step(stored, pods_all(stored), now=later(91))
    status = outcome.status
    assert status["restartCount"] == 1 and status["attempt"] == 1
    assert [v.name for v in outcome.recreate] == sorted(v.name for v in outcome.recreate)
    assert len(outcome.recreate) == 4 and outcome.hold_creations
    progressing = cond(status, "Progressing")
    assert progressing is not None and progressing["status"] == "False"
    assert progressing["reason"] == "ProgressDeadlineExceeded"
    [entry] = status["restarts"]
    assert entry["reason"] == "ProgressDeadlineExceeded" and entry["scope"] == "Job"
    assert entry["countedAgainstBackoff"] is True and "pod" not in entry
    assert {e.reason for e in outcome.events} >= {"ProgressDeadlineExceeded", "MXJobRestarting"}
    # The same status read back by a restarted controller counts nothing again.
    _, again = step(after, pods_all(after), now=later(92))
    assert again.status["restartCount"] == 1 and again.new_restarts == 0


def test_the_new_attempt_gets_its_own_deadline_and_a_report_says_progressing_again() -> None:
    stored = reported(running(), 30)
    after, _ = step(stored, pods_all(stored), now=later(91))
    new = pods_all(after, attempt=1, uid=None)
    for index, pod_obj in enumerate(new):
        pod_obj["metadata"]["uid"] = f"attempt-1-{index}"
    after, _ = step(after, new, now=later(100))
    after, outcome = step(after, new, now=later(120))
    assert outcome.status["restartCount"] == 1, "the restart's time starts the new clock"
    reported(after, 130)
    _, outcome = step(after, new, now=later(131))
    progressing = cond(outcome.status, "Progressing")
    assert progressing is not None and progressing["status"] == "True"
    assert progressing["reason"] == "ProgressReported"


def test_once_the_backoff_limit_is_spent_the_job_fails_with_the_deadline_reason() -> None:
    stored = reported(running(backoff=0), 0)
    _, outcome = step(stored, pods_all(stored), now=later(61))
    assert outcome.became == "Failed" and outcome.stop_active
    failed = cond(outcome.status, "Failed")
    assert failed is not None and failed["reason"] == "ProgressDeadlineExceeded"
    assert "reported no progress for 60 s" in failed["message"]


def test_without_the_field_reports_change_nothing() -> None:
    stored = reported(running(deadline=None), 0)
    _, outcome = step(stored, pods_all(stored), now=NOW.replace(year=NOW.year + 1))
    assert not outcome.recreate and cond(outcome.status, "Progressing") is None
