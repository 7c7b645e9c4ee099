"""The verdicts that end a job from its spec and its replicas' ends: invalid, failed, succeeded.

- A job stored without passing the validating webhook, and invalid, fails before anything runs.
- A permanent failure of any replica fails the job, and it is checked before success, so a
  failed worker never ends in Succeeded (the older mxnet-operator could).
- MXTrain succeeds when the Scheduler's pod succeeds (``successPolicy: AllWorkers``: every
  Worker; single-node form: the Worker); MXTune when the Tuner's does
  (docs/how-to/write-an-mxjob.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from controller.job.observed import PodView
from controller.job.recovery import consequences, scope_of
from controller.job.status.aftermath import finish
from controller.job.status.failures import describe, exit_text, failure_kind, why_final
from controller.job.status.outcome import (
    EXITED_WITH_CODE,
    FAILED_VALIDATION_REASON,
    EventSpec,
    Outcome,
)
from controller.job.status.sync import Sync
from controller.job.view import MXJobView
from shared.conditions import ConditionType, Reason
from shared.constants import JobMode, ReplicaType, RestartScope, SuccessPolicy

WORKER_PREFIX: Final = f"{ReplicaType.WORKER.value.lower()}-"
"""The slot keys of the Workers (controller.job.desired.Slot.key)."""


def master_slot(job: MXJobView) -> ReplicaType | None:
    """The replica type whose pod decides the job (index 0), None for an unknown mode."""
    if job.mode is JobMode.MXTUNE:
        return ReplicaType.TUNER
    if job.mode is JobMode.MXTRAIN:
        return ReplicaType.WORKER if job.single_node else ReplicaType.SCHEDULER
    return None


def _succeeded(job: MXJobView, by_slot: Mapping[str, PodView | None]) -> bool:
    """Whether the replicas that decide success have succeeded."""
    if job.success_policy is SuccessPolicy.ALL_WORKERS and not job.single_node:
        workers = [v for k, v in by_slot.items() if k.startswith(WORKER_PREFIX)]
        return bool(workers) and all(v is not None and v.succeeded for v in workers)
    master = master_slot(job)
    if master is None:
        return False
    view = by_slot.get(f"{master.value.lower()}-0")
    return view is not None and view.succeeded


def fail_invalid(sync: Sync) -> Outcome:
    """A job stored without passing the validating webhook, and invalid, fails at once."""
    message = f"MXJob {sync.job.name} is invalid: " + "; ".join(sync.job.violations)
    return finish(sync, ConditionType.FAILED, FAILED_VALIDATION_REASON, message)


def find_causes(sync: Sync) -> None:
    """The ends of this attempt's replicas that decide: retryable ends of ``Job``-scoped
    replicas (the job restarts as a whole) and permanent failures, without those that followed
    such a restart's cause (controller/job/recovery.py)."""
    live = [v for v in sync.by_slot.values() if v and not v.gone]
    scopes = sync.scopes
    sync.job_causes = [
        v
        for v in live
        if failure_kind(sync.job, v) == "retry" and scope_of(scopes, v) is RestartScope.JOB
    ]
    permanent = [v for v in live if failure_kind(sync.job, v) == "permanent"]
    followed = consequences(permanent, sync.job_causes)
    sync.permanent = [v for v in permanent if v not in followed]


def fail_permanent(sync: Sync) -> Outcome:
    """A permanent failure of a replica fails the job (the rules check it before success)."""
    for view in sync.permanent:
        sync.events.append(
            EventSpec(
                "Warning",
                EXITED_WITH_CODE,
                f"{describe(view)} {exit_text(view)}: {why_final(sync.job, view)}.",
            )
        )
    first = sync.permanent[0]
    message = f"MXJob {sync.job.name} has failed because {describe(first)} {exit_text(first)}."
    return finish(sync, ConditionType.FAILED, Reason.FAILED, message)


def succeeded(sync: Sync) -> bool:
    """The replicas that decide success have succeeded."""
    return _succeeded(sync.job, sync.by_slot)


def succeed(sync: Sync) -> Outcome:
    """The job succeeds."""
    return finish(
        sync,
        ConditionType.SUCCEEDED,
        Reason.SUCCEEDED,
        f"MXJob {sync.job.name} is successfully completed.",
    )
