"""Kueue's job contract for MXJob, as pure decisions (the I/O is
controller/integrations/kueue/workload_sync.py).

With ``--kueue-workloads`` this controller is the MXJob integration Kueue ≥ v0.11 no longer has
(``integrations.externalFrameworks: [MXJob.v1.kubeflow.org]``, docs/queueing.md). It does for a
queued MXJob what Kueue's own job reconciler (``pkg/controller/jobframework``) does for the kinds
it knows, in the same order:

1. one Workload per job, owned by it (``controller: true``: the owner Kueue looks for), with one
   podSet per replica type; a Workload that no longer matches the job is replaced;
2. a job whose Workload is Finished, or is being deleted, lets go of it;
3. a finished job marks its Workload ``Finished``;
4. replicas that succeeded give their quota back (``status.reclaimablePods``);
5. ``PodsReady`` follows the job's ``Running`` condition (for ``waitForPodsReady``);
6. an evicted Workload stops the job (suspend, pod templates restored from the Workload) and,
   once its pods are gone, gives the quota back (``QuotaReserved`` False, ``Requeued``);
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
    release_apply,
)
from controller.integrations.kueue.workload import (
    FINALIZER,
    Obj,
    condition,
    controlled_by,
    equivalent,
    has_quota_reservation,
    is_admitted,
    is_true,
)
from shared.queueing import prebuilt_workload, queue_name
from shared.spec import as_mapping, is_suspended


def job_finished(job: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the job's own conditions."""
    for kind, succeeded in (("Succeeded", True), ("Failed", False)):
        found = condition(job, kind)
        if found is not None and found.get("status") == "True":
            return True, succeeded, str(found.get("message") or kind)
    return False, False, ""


def job_active(job: Mapping[str, Any]) -> bool:
    """Pods of the job still exist (pending or running): its quota is still in use."""
    statuses = as_mapping(as_mapping(job.get("status")).get("replicaStatuses"))
    return any(
        isinstance(as_mapping(s).get("active"), int) and as_mapping(s)["active"] > 0
        for s in statuses.values()
    )


def wants_workload(job: Mapping[str, Any]) -> bool:
    """Queued by Kueue: a queue-name label, or a copy MultiKueue made with its own Workload."""
    return bool(queue_name(job)) or bool(prebuilt_workload(job))


StepKind = Literal[
    "wait", "create", "adopt", "out-of-sync", "replace", "let-go", "finish", "reclaim",
    "pods-ready", "stop", "release", "start", "queue-name",
]  # fmt: skip


@dataclass(frozen=True)
class Step:
    """The one write a reconcile makes for the job's Workload (Kueue's reconciler also makes
    one and returns: the write's own event brings the next step)."""

    kind: StepKind
    workload: Obj | None = None
    message: str = ""
    extra: tuple[Obj, ...] = ()
    """``replace``: the Workloads to delete."""
    # ``queue-name``: ``message`` is the job's LocalQueue, for the Workload's spec.queueName.
    body: Obj | None = None
    """The apply to send, for the status steps."""


def _owned_match(job: Mapping[str, Any], owned: Sequence[Obj]) -> tuple[Obj | None, list[Obj]]:
    match: Obj | None = None
    rest: list[Obj] = []
    for workload in owned:
        if match is None and equivalent(job, workload):
            match = workload
        else:
            rest.append(workload)
    return match, rest


def _prebuilt_step(job: Mapping[str, Any], prebuilt: Obj | None) -> Step | Obj:
    """Step 1 for a MultiKueue copy (Kueue's ``ensureOneWorkload`` for a prebuilt Workload):
    adopt it, finish it when out of sync; a copy without a usable one is stopped, as Kueue's
    ``handleJobWithNoWorkload`` stops it ("missing workload"), unless it finished."""
    usable = prebuilt is not None
    if prebuilt is not None and not controlled_by(prebuilt, job):
        if not any(
            isinstance(r, dict) and r.get("controller")
            for r in as_mapping(prebuilt.get("metadata")).get("ownerReferences") or []
        ):
            return Step("adopt", prebuilt)
        usable = False  # controlled by another object: Kueue ignores it
    if prebuilt is not None and usable and not equivalent(job, prebuilt):
        if not is_true(prebuilt, "Finished"):
            return Step(
                "out-of-sync", prebuilt, "The prebuilt workload is out of sync with its user job"
            )
        usable = False
    if prebuilt is not None and usable:
        return prebuilt
    if not is_suspended(job) and not job_finished(job)[0]:
        return Step("stop", None, "missing workload")
    return Step("wait", message=f"no usable prebuilt Workload {prebuilt_workload(job)}")


def _workload_step(
    job: Mapping[str, Any], owned: Sequence[Obj], prebuilt: Obj | None
) -> Step | Obj:
    """Step 1: the job's one Workload, or the step that gets it there."""
    if prebuilt_workload(job):
        return _prebuilt_step(job, prebuilt)
    match, rest = _owned_match(job, owned)
    if match is None and not is_suspended(job) and not job_finished(job)[0]:
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
        if job_finished(job)[0]:
            return Step("wait", message="finished without a Workload")
        if job_active(job):
            return Step("wait", message="suspended but pods are still active")
        return Step("create")
    return match


def decide(
    job: Mapping[str, Any],
    *,
    owned: Sequence[Obj],
    prebuilt: Obj | None,
    wait_for_pods_ready: bool,
    now: str,
) -> Step:
    """The next step for a queued job (module docstring, steps 1-8). ``owned``: the Workloads
    whose controller is this job; ``prebuilt``: the one its MultiKueue label names, if any."""
    found = _workload_step(job, owned, prebuilt)
    if isinstance(found, Step):
        return found
    workload = found
    meta = as_mapping(workload.get("metadata"))
    if is_true(workload, "Finished") or meta.get("deletionTimestamp"):
        if meta.get("deletionTimestamp") and not is_suspended(job) and not job_finished(job)[0]:
            return Step("stop", workload, "Workload is deleted")
        if FINALIZER in (meta.get("finalizers") or []) and not job_active(job):
            return Step("let-go", workload)
        return Step("wait", workload, "Workload finished or deleted")
    finished, succeeded, message = job_finished(job)
    if finished:
        return Step(
            "finish",
            workload,
            body=finish_apply(workload, succeeded=succeeded, message=message, now=now),
        )
    # Also for a job MultiKueue runs elsewhere: its status, copied back from the worker, says
    # which replicas ended and whether it runs, and the manager's Kueue waits for PodsReady too.
    reclaim = reclaimable_apply(workload, reclaimable_pods(job, workload))
    if reclaim is not None:
        return Step("reclaim", workload, body=reclaim)
    if wait_for_pods_ready:
        ready = pods_ready_apply(
            workload, pods_ready_condition(workload, running=is_true(job, "Running"), now=now)
        )
        if ready is not None:
            return Step("pods-ready", workload, body=ready)
    evicted = condition(workload, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        if not is_suspended(job):
            return Step("stop", workload, str(evicted.get("message") or "Evicted"))
        if has_quota_reservation(workload) and not job_active(job):
            return Step("release", workload, body=release_apply(workload, now=now))
        return Step("wait", workload, "evicted")
    if is_suspended(job):
        if is_admitted(workload):
            return Step("start", workload)
        queue = queue_name(job)
        if (
            queue
            and as_mapping(workload.get("spec")).get("queueName") != queue
            and not has_quota_reservation(workload)
        ):
            # Kueue's QueueNameChange; a reserved Workload's queueName is immutable.
            return Step("queue-name", workload, queue)
        return Step("wait", workload, "waiting for admission")
    if not is_admitted(workload):
        return Step("stop", workload, "Not admitted by cluster queue")
    return Step("wait", workload, "running")
