"""What a retryable end restarts, as status says it: the Restarting condition and its Events.

Under ``ExitCode`` a retryable exit or an eviction recreates the pod; under
``OnFailure``/``Always`` the kubelet restarts in place, and an evicted pod is recreated. A
``Job``-scoped replica's retryable end restarts the whole job as one new attempt instead
(controller/job/recovery.py). Pods about to be recreated already count as active, so the next
reconcile finds nothing new to write.
"""

from __future__ import annotations

from controller.job.recovery import first_ended
from controller.job.status.backoff import limit_text
from controller.job.status.failures import describe, exit_text
from controller.job.status.outcome import EXITED_WITH_CODE, EventSpec
from controller.job.status.sync import Sync
from shared.conditions import ConditionType, Reason


def _announce(sync: Sync, *, condition: str, event: str) -> None:
    """The Restarting condition's message, and the Warning Event that says what restarts."""
    sync.condition(
        ConditionType.RESTARTING, status=True, reason=Reason.RESTARTING, message=condition
    )
    sync.events.append(EventSpec("Warning", Reason.RESTARTING, event))


def _restart_job(sync: Sync) -> None:
    """A ``Job``-scoped retryable end: the whole job restarts as the next attempt."""
    cause = first_ended(sync.job_causes)
    attempt = sync.status.attempt + 1
    why = f"{describe(cause)} {exit_text(cause)}"
    sync.events.append(
        EventSpec("Warning", EXITED_WITH_CODE, f"{why}: retryable, restarting the whole job.")
    )
    _announce(
        sync,
        condition=(
            f"MXJob {sync.job.name} is restarting as a whole (attempt {attempt}) because {why}."
        ),
        event=f"Restarting the whole job as attempt {attempt}: every pod ends, then all are made "
        f"again; {limit_text(sync, cause)}",
    )
    # Every pod of the ended attempt goes.
    sync.pending = [v for v in sync.views if v.replica_type is not None]
    sync.stale = [*sync.stale, *sync.views]
    sync.status.attempt = attempt


def _restart_stalled(sync: Sync) -> None:
    """No progress for ``progressDeadlineSeconds``: the whole job restarts as the next attempt
    (controller/job/status/progress_deadline.py), though no pod ended."""
    attempt = sync.status.attempt + 1
    _announce(
        sync,
        condition=(
            f"MXJob {sync.job.name} is restarting as a whole (attempt {attempt}) because it "
            f"reported no progress for {sync.job.run_policy.progress_deadline_seconds} s."
        ),
        event=f"Restarting the whole job as attempt {attempt}: every pod ends, then all are made "
        f"again; {limit_text(sync, None)}",
    )
    sync.pending = [v for v in sync.views if v.replica_type is not None]
    sync.stale = [*sync.stale, *sync.views]
    sync.status.attempt = attempt


def restart(sync: Sync) -> None:
    """Retryable failures are recreated (Restarting), or the whole job restarts; in-place
    restarts are reported."""
    if sync.job_causes:
        _restart_job(sync)
        return
    if sync.stalled:
        _restart_stalled(sync)
        return
    for view in sync.pending:
        sync.events.append(
            EventSpec(
                "Warning",
                EXITED_WITH_CODE,
                f"{describe(view)} {exit_text(view)}: retryable, recreating it.",
            )
        )
    said = limit_text(sync, sync.pending[0] if len(sync.pending) == 1 else None)
    if sync.pending:
        what = ", ".join(f"{describe(v)} {exit_text(v)}" for v in sync.pending)
        _announce(
            sync,
            condition=f"MXJob {sync.job.name} is restarting because {what}.",
            event=f"Restarting {len(sync.pending)} replica(s); {said}",
        )
    elif (new_restarts := sync.restarts_so_far - sync.persisted_restarts) > 0:
        sync.events.append(
            EventSpec(
                "Warning",
                Reason.RESTARTING,
                f"{new_restarts} container restart(s) in place; {said}",
            )
        )
