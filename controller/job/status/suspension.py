"""Suspending and resuming: a suspended job has no pods and no deadline.

Kueue (or a user) suspends a job through ``runPolicy.suspend``: Running and Restarting become
False, every pod and Service goes, and the job keeps its restart count. Resuming resets
``startTime``, so ``activeDeadlineSeconds`` counts from the resume, as kube's Job controller
does.
"""

from __future__ import annotations

from controller.job.status.counts import empty_counts
from controller.job.status.outcome import EventSpec, Outcome
from controller.job.status.sync import Sync
from shared.conditions import ConditionType, Reason, is_true


def suspend(sync: Sync) -> Outcome:
    """Suspended: no pods, no deadline; Running and Restarting become False."""
    message = f"MXJob {sync.job.name} is suspended."
    status = sync.status
    if not is_true(status.conditions, ConditionType.SUSPENDED):
        sync.events.append(EventSpec("Normal", Reason.SUSPENDED, message))
    sync.condition(ConditionType.SUSPENDED, status=True, reason=Reason.SUSPENDED, message=message)
    for ctype in (ConditionType.RUNNING, ConditionType.RESTARTING):
        if is_true(status.conditions, ctype):
            sync.condition(ctype, status=False, reason=Reason.SUSPENDED, message=message)
    status.restart_count = sync.restarts_so_far
    status.replica_counts = empty_counts(sync.job)
    return Outcome(
        suspended=True, created=sync.created, events=tuple(sync.events),
        new_restarts=sync.restarts_so_far - sync.persisted_restarts,
    )  # fmt: skip


def resume(sync: Sync) -> None:
    """Resuming resets ``startTime``, so the deadline counts from the resume."""
    status = sync.status
    if is_true(status.conditions, ConditionType.SUSPENDED):
        message = f"MXJob {sync.job.name} is resumed."
        sync.condition(
            ConditionType.SUSPENDED, status=False, reason=Reason.RESUMED, message=message
        )
        sync.events.append(EventSpec("Normal", Reason.RESUMED, message))
        status.start_time = sync.stamp
    status.start_time = status.start_time or sync.stamp
