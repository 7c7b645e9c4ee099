"""``activeDeadlineSeconds``: how long a job may be active before it fails.

The deadline runs from ``startTime`` (reset on resume, controller/job/status/suspension.py) and
fails the job with DeadlineExceeded, stopping every active pod at once. The time still left is
returned, so a real timer fires it without any event (training-operator waited for one).
"""

from __future__ import annotations

import datetime

from controller.job.status.aftermath import finish
from controller.job.status.outcome import Outcome
from controller.job.status.sync import Sync
from shared.apitime import parse_time
from shared.conditions import ConditionType, Reason


def time_deadline(sync: Sync) -> None:
    """``activeDeadlineSeconds`` from ``startTime``: the seconds it leaves, and a timer for
    them while some are left."""
    deadline_seconds = sync.job.run_policy.active_deadline_seconds
    if deadline_seconds is None:
        return
    start = parse_time(sync.status.start_time) or sync.now
    end = start + datetime.timedelta(seconds=deadline_seconds)
    sync.deadline_left = (end - sync.now).total_seconds()
    if sync.deadline_left > 0:
        sync.requeue_after = sync.deadline_left


def deadline_passed(sync: Sync) -> bool:
    return sync.deadline_left is not None and sync.deadline_left <= 0


def fail_deadline(sync: Sync) -> Outcome:
    """Active longer than ``activeDeadlineSeconds``: failed, every active pod stopped at once."""
    message = (
        f"MXJob {sync.job.name} has failed because it was active longer than its "
        f"activeDeadlineSeconds ({sync.job.run_policy.active_deadline_seconds} s)."
    )
    return finish(sync, ConditionType.FAILED, Reason.DEADLINE_EXCEEDED, message, stop_active=True)
