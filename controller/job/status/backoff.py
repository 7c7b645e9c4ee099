"""Restart accounting: how many restarts the job has had, and when they exceed ``backoffLimit``.

``restartCount`` counts every in-place restart and every recreation. Each pod carries the
restart total of its replica before it (an annotation written when it is created), so the
count is recomputed from the pods alone and is never lower than the persisted one: a
controller restart loses none and counts none twice. Exceeding ``backoffLimit`` fails the job
with BackoffLimitExceeded (training-operator retried forever); a restart caused by a disruption
counts only under ``disruptionPolicy: Count`` (docs/how-to/survive-failures.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from controller.job.desired import Slot
from controller.job.observed import PodView
from controller.job.recovery import first_ended, history_entry, recorded_pods, with_entries
from controller.job.status.aftermath import finish
from controller.job.status.failures import describe, exit_text, failure_kind
from controller.job.status.outcome import EXITED_WITH_CODE, EventSpec, Outcome
from controller.job.status.sync import Sync
from shared.conditions import ConditionType, Reason
from shared.constants import DisruptionPolicy, RestartScope

REMOVED_HISTORY: Final = "*removed"
"""Key in ``carries``: restarts of replicas the controller removed (scale-down, suspend), which
no live pod remembers any more but ``restartCount`` still includes."""


def restart_sum(
    slots: Sequence[Slot],
    by_slot: Mapping[str, PodView | None],
    carries: Mapping[str, int] | None,
    *,
    total: int = 0,
    attempt: int = 0,
) -> tuple[int, dict[str, int]]:
    """Restarts performed so far, and the history each missing slot's new pod must carry.

    A live pod knows its slot's history (annotation + in-place restarts). A slot without a live
    pod takes the carry reconcile remembered when it deleted the pod (and replicas removed by
    scaling down or suspending are remembered under :data:`REMOVED_HISTORY`); failing that (the
    controller restarted meanwhile, or someone else deleted the pod), the persisted ``total``
    minus what the live pods explain is given to the first such slot, so the sum, which is all
    that backoffLimit needs, stays exact. Each whole-job restart (``attempt``) counts once,
    beside the slots' own histories.
    """
    known = carries or {}
    performed = known.get(REMOVED_HISTORY, 0) + attempt
    unknown: list[str] = []
    restarts_before: dict[str, int] = {}
    for slot in slots:
        view = by_slot.get(slot.key)
        if view is not None and not view.gone:
            performed += view.slot_restarts
        elif slot.key in known:
            performed += known[slot.key]
            restarts_before[slot.key] = known[slot.key]
        elif view is not None:
            performed += view.slot_restarts
            restarts_before[slot.key] = view.slot_restarts
        else:
            unknown.append(slot.key)
    if unknown:
        remainder = max(0, total - performed)
        for position, key in enumerate(unknown):
            restarts_before[key] = remainder if position == 0 else 0
        performed += remainder
    return performed, {k: v for k, v in restarts_before.items() if v > 0}


def restarts_performed(sync: Sync) -> int:
    """Restarts the pods explain, never fewer than the persisted count."""
    performed = restart_sum(sync.slots, sync.by_slot, sync.carries, attempt=sync.attempt)[0]
    return max(sync.restarts_so_far, performed)


def _ignores_disruptions(sync: Sync) -> bool:
    return sync.job.run_policy.disruption_policy is DisruptionPolicy.IGNORE


def _found_restarts(sync: Sync, performed: int) -> list[tuple[PodView, RestartScope, int]]:
    """The ends that restart something now, each with what it restarts and in which attempt;
    sets the new ``restartCount`` (``sync.needed``) and the pods to recreate."""
    if sync.job_causes:
        sync.needed = max(sync.restarts_so_far, performed + 1)
        return [(first_ended(sync.job_causes), RestartScope.JOB, sync.attempt + 1)]
    sync.pending = [
        v
        for v in sync.by_slot.values()
        if v and not v.gone and failure_kind(sync.job, v) == "retry"
    ]
    sync.needed = max(sync.restarts_so_far, performed + len(sync.pending))
    recorded = recorded_pods(sync.history)
    found = [(v, RestartScope.REPLICA, sync.attempt) for v in sync.pending]
    return [item for item in found if item[0].uid not in recorded]


def fail_backoff(sync: Sync) -> Outcome | None:
    """Restarts (whole-job ones, recreations of failed pods, in-place ones) beyond
    ``backoffLimit`` fail it; restarts caused by a disruption count only under
    ``disruptionPolicy: Count``."""
    performed, sync.restarts_before = restart_sum(
        sync.slots, sync.by_slot, sync.carries, total=sync.restarts_so_far, attempt=sync.attempt
    )
    ignore = _ignores_disruptions(sync)
    found = _found_restarts(sync, performed)
    sync.disruptions += sum(1 for view, _, _ in found if view.disruption)
    sync.history = with_entries(sync.history, [
        history_entry(view, scope=scope, attempt=attempt, stamp=sync.stamp,
                      counted=not (ignore and view.disruption))
        for view, scope, attempt in found
    ])  # fmt: skip
    sync.limit = limit = sync.job.run_policy.backoff_limit
    if sync.needed - (sync.disruptions if ignore else 0) <= limit:
        return None
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
    return finish(
        sync,
        ConditionType.FAILED,
        Reason.BACKOFF_LIMIT_EXCEEDED,
        message,
        restart_count=max(sync.restarts_so_far, performed),
    )


def limit_text(sync: Sync, view: PodView | None) -> str:
    """Where the restart stands against ``backoffLimit``."""
    if view is not None and view.disruption and _ignores_disruptions(sync):
        return (
            f"restart {sync.needed}, caused by a disruption ({view.disruption}): not counted "
            f"against the backoff limit of {sync.limit} (disruptionPolicy Ignore)."
        )
    counted = sync.needed - (sync.disruptions if _ignores_disruptions(sync) else 0)
    return f"restart {counted} of at most {sync.limit}."
