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


def check_deadline(sync: Sync) -> Outcome | None:
    """``activeDeadlineSeconds`` from ``startTime``: fail when passed, else time the timer."""
    deadline_seconds = sync.job.run_policy.active_deadline_seconds
    if deadline_seconds is None:
        return None
    start = parse_time(sync.status.get("startTime")) or sync.now
    remaining = (start + datetime.timedelta(seconds=deadline_seconds) - sync.now).total_seconds()
    if remaining > 0:
        sync.requeue_after = remaining
        return None
    message = (
        f"MXJob {sync.job.name} has failed because it was active longer than its "
        f"activeDeadlineSeconds ({deadline_seconds} s)."
    )
    return finish(sync, ConditionType.FAILED, Reason.DEADLINE_EXCEEDED, message, stop_active=True)
