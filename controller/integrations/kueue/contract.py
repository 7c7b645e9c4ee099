"""Kueue's job contract for MXJob, as pure decisions (the I/O is
controller/integrations/kueue/workload_sync.py).

With ``--kueue-workloads`` this controller is the MXJob integration Kueue ≥ v0.11 no longer has
(``integrations.externalFrameworks: [MXJob.v1.kubeflow.org]``, docs/how-to/queue-with-kueue.md).
It does for a queued MXJob what Kueue's own job reconciler (``pkg/controller/jobframework``) does
for the kinds it knows, in the same order:

1. one Workload per job, owned by it (``controller: true``: the owner Kueue looks for), with one
   podSet per replica type; a Workload that no longer matches the job is replaced;
2. a job whose Workload is Finished, or is being deleted, lets go of it;
3. a finished job marks its Workload ``Finished``;
4. replicas that succeeded give their quota back (``status.reclaimablePods``);
5. ``PodsReady`` follows the job's ``Running`` condition (for ``waitForPodsReady``);
6. an evicted Workload stops the job (suspend, pod templates restored from the Workload) and,
   once its pods are gone, unreserves its quota (``QuotaReserved`` False, ``Requeued``: the
   ``unreserve`` step, Kueue's ``UnsetQuotaReservationWithCondition``);
7. a suspended job whose Workload is admitted starts, its pod templates given the flavors'
   node labels and tolerations and what admission checks ask for;
8. a running job whose Workload is not admitted is stopped.

Status writes are server-side applies under Kueue's own field managers (``kueue-admission``
for the admission state, ``kueue-job-controller-PodsReady``, ``kueue-reclaimable-pods``), so
fields Kueue owns are changed exactly as Kueue would change them and nothing else is touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from controller.integrations.kueue.status_applies import (
    finish_apply,
    pods_ready_apply,
    pods_ready_condition,
    reclaimable_apply,
    reclaimable_pods,
    unreserve_apply,
)
from controller.integrations.kueue.workload import (
    FINALIZER,
    Obj,
    equivalent,
    has_quota_reservation,
    is_admitted,
    workload_conditions,
)
from controller.job.ownership import controller_uid
from controller.job.view import MXJobView
from shared.conditions import ConditionType, get_condition, is_true
from shared.spec import as_mapping

StepKind = Literal[
    "wait", "create", "adopt", "out-of-sync", "replace", "let-go", "finish", "reclaim",
    "pods-ready", "stop", "unreserve", "start", "queue-name",
]  # fmt: skip


@dataclass(frozen=True)
class Step:
    """The one write a reconcile makes for the job's Workload (Kueue's reconciler also makes
    one and returns: the write's own event brings the next step)."""

    kind: StepKind
    workload: Obj | None = None
    message: str = ""
    """Why: the Event of a ``stop``, the reason a ``wait`` or an ``out-of-sync`` is logged."""
    extra: tuple[Obj, ...] = ()
    """``replace``: the Workloads to delete."""
    body: Obj | None = None
    """The apply to send, for the status steps."""
    queue_name: str = ""
    """``queue-name``: the job's LocalQueue, for the Workload's ``spec.queueName``."""


def _runs(job: MXJobView) -> bool:
    """Neither suspended nor finished: pods may run, so a job without its Workload is stopped."""
    return not job.suspended and not job.finished


def _owned_match(job: MXJobView, owned: Sequence[Obj]) -> tuple[Obj | None, list[Obj]]:
    match: Obj | None = None
    rest: list[Obj] = []
    for workload in owned:
        if match is None and equivalent(job, workload):
            match = workload
        else:
            rest.append(workload)
    return match, rest


def _prebuilt_step(job: MXJobView, prebuilt: Obj | None) -> Step | Obj:
    """Step 1 for a MultiKueue copy (Kueue's ``ensureOneWorkload`` for a prebuilt Workload):
    adopt it, finish it when out of sync; a copy without a usable one is stopped, as Kueue's
    ``handleJobWithNoWorkload`` stops it ("missing workload"), unless it finished."""
    usable = prebuilt is not None
    if prebuilt is not None and controller_uid(prebuilt) != job.uid:
        if controller_uid(prebuilt) is None:
            return Step("adopt", prebuilt)
        usable = False  # controlled by another object: Kueue ignores it
    if prebuilt is not None and usable and not equivalent(job, prebuilt):
        if not is_true(workload_conditions(prebuilt), "Finished"):
            return Step(
                "out-of-sync", prebuilt, "The prebuilt workload is out of sync with its user job"
            )
        usable = False
    if prebuilt is not None and usable:
        return prebuilt
    if _runs(job):
        return Step("stop", None, "missing workload")
    return Step("wait", message=f"no usable prebuilt Workload {job.queueing.prebuilt_workload}")


def _workload_step(job: MXJobView, owned: Sequence[Obj], prebuilt: Obj | None) -> Step | Obj:
    """Step 1: the job's one Workload, or the step that gets it there."""
    if job.queueing.prebuilt_workload:
        return _prebuilt_step(job, prebuilt)
    match, rest = _owned_match(job, owned)
    if match is None and _runs(job):
        restore = rest[0] if len(rest) == 1 else None
        return Step(
            "stop",
            restore,
            "No matching Workload; restoring pod templates according to existent Workload"
            if restore
            else "Missing Workload; unable to restore pod templates",
        )
    if rest:
        return Step("replace", match, extra=tuple(rest))
    if match is None:
        if job.finished:
            return Step("wait", message="finished without a Workload")
        if job.active:
            return Step("wait", message="suspended but pods are still active")
        return Step("create")
    return match


def _gone_step(job: MXJobView, workload: Obj) -> Step:
    """Step 2: the Workload is Finished or being deleted."""
    meta = as_mapping(workload.get("metadata"))
    if meta.get("deletionTimestamp") and _runs(job):
        return Step("stop", workload, "Workload is deleted")
    if FINALIZER in (meta.get("finalizers") or []) and not job.active:
        return Step("let-go", workload)
    return Step("wait", workload, "Workload finished or deleted")


def _evicted_step(job: MXJobView, workload: Obj, evicted: Mapping[str, Any], now: str) -> Step:
    """Step 6: the Workload was evicted."""
    if not job.suspended:
        return Step("stop", workload, str(evicted.get("message") or "Evicted"))
    if has_quota_reservation(workload) and not job.active:
        return Step("unreserve", workload, body=unreserve_apply(workload, now=now))
    return Step("wait", workload, "evicted")


def _suspended_step(job: MXJobView, workload: Obj) -> Step:
    """Step 7: the suspended job starts once admitted; till then its Workload follows its
    queue (Kueue's QueueNameChange; a reserved Workload's queueName is immutable)."""
    if is_admitted(workload):
        return Step("start", workload)
    queue = job.queueing.queue_name
    if (
        queue
        and as_mapping(workload.get("spec")).get("queueName") != queue
        and not has_quota_reservation(workload)
    ):
        return Step("queue-name", workload, queue_name=queue)
    return Step("wait", workload, "waiting for admission")


def decide(
    job: MXJobView,
    *,
    owned: Sequence[Obj],
    prebuilt: Obj | None,
    wait_for_pods_ready: bool,
    now: str,
) -> Step:
    """The next step for a queued job (module docstring, steps 1-8). ``owned``: the Workloads
    whose controller is this job; ``prebuilt``: the one its MultiKueue label names, if any.
    The job's facts (finished, suspended, active) are the view's, read once per reconcile."""
    found = _workload_step(job, owned, prebuilt)
    if isinstance(found, Step):
        return found
    workload = found
    conditions = workload_conditions(workload)
    if is_true(conditions, "Finished") or as_mapping(workload.get("metadata")).get(
        "deletionTimestamp"
    ):
        return _gone_step(job, workload)
    if job.finished:
        body = finish_apply(workload, succeeded=job.succeeded, message=job.end_message, now=now)
        return Step("finish", workload, body=body)
    # Also for a job MultiKueue runs elsewhere: its status, copied back from the worker, says
    # which replicas ended and whether it runs, and the manager's Kueue waits for PodsReady too.
    reclaim = reclaimable_apply(workload, reclaimable_pods(job, workload))
    if reclaim is not None:
        return Step("reclaim", workload, body=reclaim)
    if wait_for_pods_ready:
        running = is_true(job.conditions, ConditionType.RUNNING)
        ready = pods_ready_apply(workload, pods_ready_condition(workload, running=running, now=now))
        if ready is not None:
            return Step("pods-ready", workload, body=ready)
    evicted = get_condition(conditions, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        return _evicted_step(job, workload, evicted, now)
    if job.suspended:
        return _suspended_step(job, workload)
    if not is_admitted(workload):
        return Step("stop", workload, "Not admitted by cluster queue")
    return Step("wait", workload, "running")
