"""Restart accounting: how many restarts the job has had, and when they exceed ``backoffLimit``.

``restartCount`` counts every in-place restart, every recreation of a replica and every
whole-job restart, and status is its only record. A restart the controller decides is counted
in the status write that decides it, before any pod is deleted: a whole-job restart moves
``status.attempt`` on, so the ended attempt's pods are stale and never decide again; a replica's
recreation names its pod by uid in ``status.restarts``, so a pod written there but not deleted
yet (the controller killed between the two) is recreated without being counted again. In-place
restarts are found, and counted once, through ``status.inPlaceRestarts``
(controller/job/status/in_place.py). Exceeding ``backoffLimit`` fails the job with
BackoffLimitExceeded (training-operator retried forever); a restart caused by a disruption
counts only under ``disruptionPolicy: Count`` (docs/how-to/survive-failures.md).
"""

from __future__ import annotations

from controller.job.observed import PodView
from controller.job.recovery import (
    first_ended,
    history_entry,
    recorded_pods,
    stall_entry,
    with_entries,
)
from controller.job.status.aftermath import finish
from controller.job.status.failures import describe, exit_text, failure_kind
from controller.job.status.outcome import EXITED_WITH_CODE, EventSpec, Outcome
from controller.job.status.sync import Sync
from shared.conditions import ConditionType, Reason
from shared.constants import DisruptionPolicy, RestartScope


def _ignores_disruptions(sync: Sync) -> bool:
    return sync.job.run_policy.disruption_policy is DisruptionPolicy.IGNORE


def count_restarts(sync: Sync) -> None:
    """The ends that restart something now, counted once: the new ``restartCount``
    (``sync.needed``), the pods to recreate (those counted before too: their deletion may not
    have happened), the disruptions among them, and their entries in ``status.restarts``."""
    status = sync.status
    if sync.job_causes:
        sync.needed = sync.restarts_so_far + 1
        found = [(first_ended(sync.job_causes), RestartScope.JOB, status.attempt + 1)]
    elif sync.stalled:
        sync.needed = sync.restarts_so_far + 1
        found = []
    else:
        sync.pending = [
            v
            for v in sync.by_slot.values()
            if v and not v.gone and failure_kind(sync.job, v) == "retry"
        ]
        recorded = recorded_pods(status.restarts)
        found = [
            (v, RestartScope.REPLICA, status.attempt) for v in sync.pending if v.uid not in recorded
        ]
        sync.needed = sync.restarts_so_far + len(found)
    sync.found = [view for view, _, _ in found]
    status.disruption_restarts += sum(1 for view in sync.found if view.disruption)
    ignore = _ignores_disruptions(sync)
    entries = [
        history_entry(view, scope=scope, attempt=attempt, stamp=sync.stamp,
                      counted=not (ignore and view.disruption))
        for view, scope, attempt in found
    ]  # fmt: skip
    if sync.stalled:
        entries.append(stall_entry(attempt=status.attempt + 1, counted=True, stamp=sync.stamp))
    status.restarts = with_entries(status.restarts, entries)


def counted_restarts(sync: Sync) -> int:
    """The restarts that count against ``backoffLimit``: disruptions do not under
    ``disruptionPolicy: Ignore``."""
    ignored = sync.status.disruption_restarts if _ignores_disruptions(sync) else 0
    return sync.needed - ignored


def over_backoff_limit(sync: Sync) -> bool:
    return counted_restarts(sync) > sync.job.run_policy.backoff_limit


def fail_backoff(sync: Sync) -> Outcome:
    """Restarts (whole-job ones, recreations of failed pods, in-place ones) beyond
    ``backoffLimit`` fail the job."""
    limit = sync.job.run_policy.backoff_limit
    restarts = f"{limit} restart{'s' if limit != 1 else ''}"
    if sync.stalled:
        message = (
            f"MXJob {sync.job.name} has failed because it reported no progress for "
            f"{sync.job.run_policy.progress_deadline_seconds} s (progressDeadlineSeconds) and "
            f"has reached the specified backoff limit ({restarts})."
        )
        return finish(sync, ConditionType.FAILED, Reason.PROGRESS_DEADLINE_EXCEEDED, message,
                      stop_active=True)  # fmt: skip
    ended = sync.pending or sync.found
    for view in ended:
        sync.events.append(
            EventSpec("Warning", EXITED_WITH_CODE, f"{describe(view)} {exit_text(view)}.")
        )
    last = f"; the last: {describe(ended[-1])} {exit_text(ended[-1])}" if ended else ""
    message = (
        f"MXJob {sync.job.name} has failed because it has reached the specified backoff limit "
        f"({restarts}){last}."
    )
    return finish(sync, ConditionType.FAILED, Reason.BACKOFF_LIMIT_EXCEEDED, message)


def limit_text(sync: Sync, view: PodView | None) -> str:
    """Where the restart stands against ``backoffLimit``."""
    limit = sync.job.run_policy.backoff_limit
    if view is not None and view.disruption and _ignores_disruptions(sync):
        return (
            f"restart {sync.needed}, caused by a disruption ({view.disruption}): not counted "
            f"against the backoff limit of {limit} (disruptionPolicy Ignore)."
        )
    return f"restart {counted_restarts(sync)} of at most {limit}."
