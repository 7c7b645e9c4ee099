"""A job that goes on: Running once every replica is up, and ``replicaStatuses`` as the pods
will be once reconcile has acted.

Pods about to be created or recreated count as active, so a reconcile's own actions do not
cause a second status write (docs/how-to/write-an-mxjob.md).
"""

from __future__ import annotations

from controller.job.status.counts import empty_counts
from controller.job.status.outcome import Outcome
from controller.job.status.sync import Sync
from controller.job.status.verdicts import master_slot
from shared.conditions import ConditionType, Reason, is_true


def mark_running(sync: Sync) -> None:
    """Running once every replica is up (or done) and the deciding one runs."""
    everyone_up = all(
        v is not None and not v.gone and (v.running or v.succeeded) for v in sync.by_slot.values()
    )
    master = master_slot(sync.job)
    master_view = sync.by_slot.get(f"{master.value.lower()}-0") if master else None
    if (
        not sync.pending
        and everyone_up
        and master_view is not None
        and master_view.running
        and not is_true(sync.status.conditions, ConditionType.RUNNING)
    ):
        sync.condition(
            ConditionType.RUNNING,
            status=True,
            reason=Reason.RUNNING,
            message=f"MXJob {sync.job.name} is running.",
        )


def progress(sync: Sync) -> Outcome:
    """Not finished: ``replicaStatuses`` as the pods will be once reconcile has acted."""
    counts = empty_counts(sync.job)
    for slot in sync.slots:
        view = sync.by_slot[slot.key]
        bucket = counts[slot.replica_type]
        if view is None or view.gone or view.active or view in sync.pending:
            bucket["active"] += 1
        elif view.succeeded:
            bucket["succeeded"] += 1
        else:
            bucket["failed"] += 1
    sync.status.restart_count = sync.needed
    sync.status.replica_counts = counts
    return Outcome(
        recreate=tuple(sync.pending),
        created=sync.created,
        new_restarts=sync.needed - sync.persisted_restarts,
        events=tuple(sync.events),
        requeue_after=sync.requeue_after,
        stale=tuple(sync.stale),
        attempt=sync.status.attempt,
        hold_creations=bool(sync.stale),
    )
