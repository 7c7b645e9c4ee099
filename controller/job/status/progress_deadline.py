"""``runPolicy.progressDeadlineSeconds``: a Running job that reports no progress for that long
is restarted as a whole, as a Deployment's stuck rollout is reported by its own deadline.

A hang gives no exit code (a process stopped by the node, a ps-lite member that never pushes, a
stuck read), so no retry by exit code can end it. The job's pods report their progress
(``status.trainerStatus``, written by the controller's progress endpoint, controller/progress/);
the clock runs from the later of the newest report (``trainerStatus.lastUpdatedTime``) and the
start of the running attempt (the time of the whole-job restart that began it, else
``startTime``). It runs only once the job has reported at least once, so a job never
instrumented is never restarted by it, and only while the job is Running: a job whose pods
are still being made has not had its chance to report yet.

Past the deadline the job gets ``Progressing`` False (``ProgressDeadlineExceeded``) and a
Warning Event, and restarts as a whole, counted against ``backoffLimit``
(controller/job/status/backoff.py); once the limit is spent it fails with that reason. Its next
report sets ``Progressing`` True again.
"""

from __future__ import annotations

import datetime
from typing import Final

from controller.job.status.outcome import EventSpec
from controller.job.status.sync import Sync, sooner
from shared.apitime import parse_time
from shared.conditions import ConditionType, Reason, is_true
from shared.constants import RestartScope
from shared.spec import as_mapping

RESUMED_REPORTING: Final = "reports progress again"


def last_report(sync: Sync) -> datetime.datetime | None:
    """``status.trainerStatus.lastUpdatedTime``: when the controller last took a report."""
    trainer = as_mapping(sync.status.passed_through.get("trainerStatus"))
    return parse_time(trainer.get("lastUpdatedTime"))


def attempt_started(sync: Sync) -> datetime.datetime | None:
    """When the running attempt began: its whole-job restart, else the job's start."""
    for entry in reversed(sync.status.restarts):
        if entry.get("scope") == RestartScope.JOB.value and "time" in entry:
            return parse_time(entry["time"])
    return parse_time(sync.status.start_time)


def check_progress(sync: Sync) -> None:
    """Restart a Running job whose reports stopped for its deadline (``sync.stalled``), or time
    the check; say ``Progressing`` True again once reports come back."""
    deadline = sync.job.run_policy.progress_deadline_seconds
    reported = last_report(sync)
    if deadline is None or reported is None or sync.job_causes:
        return
    started = attempt_started(sync)
    if started is not None and reported > started:
        _reporting_again(sync)
    if not is_true(sync.status.conditions, ConditionType.RUNNING):
        return
    since = max(reported, started) if started is not None else reported
    remaining = (since + datetime.timedelta(seconds=deadline) - sync.now).total_seconds()
    if remaining > 0:
        sync.requeue_after = sooner(sync.requeue_after, remaining)
        return
    sync.stalled = True
    message = (
        f"MXJob {sync.job.name} reported no progress for {deadline} s "
        f"(progressDeadlineSeconds): restarting it as a whole."
    )
    # Set even though it was never True: a condition False from the start is how a Deployment
    # says the same (JobStatus.update_condition writes no other condition so).
    sync.status.force_condition(
        ConditionType.PROGRESSING,
        status=False,
        reason=Reason.PROGRESS_DEADLINE_EXCEEDED,
        message=message,
        now=sync.stamp,
    )
    sync.events.append(EventSpec("Warning", Reason.PROGRESS_DEADLINE_EXCEEDED, message))


def _reporting_again(sync: Sync) -> None:
    """``Progressing`` True once a report came after a deadline restart (only then: a job
    that never stalled keeps no such condition)."""
    condition = next(
        (c for c in sync.status.conditions if c.get("type") == ConditionType.PROGRESSING.value),
        None,
    )
    if condition is not None and condition.get("status") == "False":
        sync.condition(
            ConditionType.PROGRESSING,
            status=True,
            reason=Reason.PROGRESS_REPORTED,
            message=f"MXJob {sync.job.name} {RESUMED_REPORTING}.",
        )
