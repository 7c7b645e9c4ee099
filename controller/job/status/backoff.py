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


def _found_restarts(sync: Sync) -> list[tuple[PodView, RestartScope, int]]:
    """The ends that restart something now and are not counted yet, each with what it
    restarts and in which attempt; sets the new ``restartCount`` (``sync.needed``) and the pods
    to recreate (those already counted too: their deletion may not have happened)."""
    if sync.job_causes:
        sync.needed = sync.restarts_so_far + 1
        return [(first_ended(sync.job_causes), RestartScope.JOB, sync.attempt + 1)]
    if sync.stalled:
        sync.needed = sync.restarts_so_far + 1
        return []
    sync.pending = [
        v
        for v in sync.by_slot.values()
        if v and not v.gone and failure_kind(sync.job, v) == "retry"
    ]
    recorded = recorded_pods(sync.history)
    found = [(v, RestartScope.REPLICA, sync.attempt) for v in sync.pending if v.uid not in recorded]
    sync.needed = sync.restarts_so_far + len(found)
    return found


def fail_backoff(sync: Sync) -> Outcome | None:
    """Restarts (whole-job ones, recreations of failed pods, in-place ones) beyond
    ``backoffLimit`` fail it; restarts caused by a disruption count only under
    ``disruptionPolicy: Count``."""
    ignore = _ignores_disruptions(sync)
    found = _found_restarts(sync)
    sync.disruptions += sum(1 for view, _, _ in found if view.disruption)
    entries = [
        history_entry(view, scope=scope, attempt=attempt, stamp=sync.stamp,
                      counted=not (ignore and view.disruption))
        for view, scope, attempt in found
    ]  # fmt: skip
    if sync.stalled:
        entries.append(stall_entry(attempt=sync.attempt + 1, counted=True, stamp=sync.stamp))
    sync.history = with_entries(sync.history, entries)
    sync.limit = limit = sync.job.run_policy.backoff_limit
    if sync.needed - (sync.disruptions if ignore else 0) <= limit:
        return None
    if sync.stalled:
        message = (
            f"MXJob {sync.job.name} has failed because it reported no progress for "
            f"{sync.job.run_policy.progress_deadline_seconds} s (progressDeadlineSeconds) and "
            f"has reached the specified backoff limit ({limit} restart{'s' if limit != 1 else ''})."
        )
        return finish(sync, ConditionType.FAILED, Reason.PROGRESS_DEADLINE_EXCEEDED, message,
                      stop_active=True)  # fmt: skip
    ended = sync.pending or [view for view, _, _ in found]
    for view in ended:
        sync.events.append(
            EventSpec("Warning", EXITED_WITH_CODE, f"{describe(view)} {exit_text(view)}.")
        )
    last = f"; the last: {describe(ended[-1])} {exit_text(ended[-1])}" if ended else ""
    message = (
        f"MXJob {sync.job.name} has failed because it has reached the specified backoff limit "
        f"({limit} restart{'s' if limit != 1 else ''}){last}."
    )
    return finish(sync, ConditionType.FAILED, Reason.BACKOFF_LIMIT_EXCEEDED, message)


def limit_text(sync: Sync, view: PodView | None) -> str:
    """Where the restart stands against ``backoffLimit``."""
    if view is not None and view.disruption and _ignores_disruptions(sync):
        return (
            f"restart {sync.needed}, caused by a disruption ({view.disruption}): not counted "
            f"against the backoff limit of {sync.limit} (disruptionPolicy Ignore)."
        )
    counted = sync.needed - (sync.disruptions if _ignores_disruptions(sync) else 0)
    return f"restart {counted} of at most {sync.limit}."
