"""The Workload status writes a job's controller makes, as server-side apply bodies. Pure.

Each body is applied under the field manager Kueue itself uses for that part of the status
(``kueue-admission`` for the admission state and ``Finished``, ``kueue-job-controller-PodsReady``,
``kueue-reclaimable-pods``), so fields Kueue owns change exactly as Kueue would change them. An
apply as ``kueue-admission`` carries everything that manager owns (:func:`admission_apply`): a
field left out of an apply is a field given up.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from controller.integrations.kueue.workload import (
    KUEUE_API_VERSION,
    Obj,
    has_quota_reservation,
    is_admitted,
    mode_replicas,
    workload_conditions,
)
from controller.job.view import MXJobView
from shared.apitime import parse_time
from shared.conditions import get_condition
from shared.spec import as_mapping

ADMISSION_MANAGER: Final = "kueue-admission"


PODS_READY_MANAGER: Final = "kueue-job-controller-PodsReady"


RECLAIMABLE_MANAGER: Final = "kueue-reclaimable-pods"


ADMISSION_CONDITIONS: Final = (
    "QuotaReserved", "BlockedOnPreemptionGates", "Evicted", "Admitted", "Preempted", "Requeued",
    "DeactivationTarget", "Finished", "PodsReady",
)  # fmt: skip
"""The conditions ``kueue-admission`` owns: every apply under that manager carries them all."""


ADMISSION_FIELDS: Final = (
    "requeueState", "accumulatedPastExecutionTimeSeconds", "clusterName", "nominatedClusterNames",
    "unhealthyNodes", "preemptionGates", "admissionChecks",
)  # fmt: skip
"""The other status fields ``kueue-admission`` owns (besides admission and conditions)."""


REQUEUED_AFTER: Final = frozenset({"Preempted", "NodeFailures"})
"""Eviction reasons after which Kueue marks a Workload ``Requeued`` (it comes back by itself)."""


def make_condition(
    kind: str, status: bool, reason: str, message: str, *, now: str, generation: int
) -> Obj:
    return {
        "type": kind, "status": "True" if status else "False", "reason": reason,
        "message": message[:32768], "lastTransitionTime": now, "observedGeneration": generation,
    }  # fmt: skip


def _with_condition(conditions: list[Obj], new: Obj) -> list[Obj]:
    """``meta.SetStatusCondition``: the transition time moves only when the status does."""
    out = []
    replaced = False
    for existing in conditions:
        if existing.get("type") == new["type"]:
            kept = dict(new)
            if existing.get("status") == new["status"]:
                kept["lastTransitionTime"] = existing.get(
                    "lastTransitionTime", new["lastTransitionTime"]
                )
            out.append(kept)
            replaced = True
        else:
            out.append(existing)
    return out if replaced else [*out, new]


def _apply_base(workload: Mapping[str, Any]) -> Obj:
    meta = as_mapping(workload.get("metadata"))
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": meta.get("name"), "namespace": meta.get("namespace"), "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
    }  # fmt: skip


def admission_apply(
    workload: Mapping[str, Any],
    *,
    conditions: Sequence[Obj],
    clear_admission: bool = False,
) -> Obj:
    """The server-side apply, as ``kueue-admission``, that sets ``conditions`` (and clears the
    admission): it carries everything else that manager owns unchanged (Kueue's
    ``PatchAdmissionStatus``), since a field left out of an apply is a field given up."""
    status = as_mapping(workload.get("status"))
    current = [
        dict(c) for c in status.get("conditions") or [] if c.get("type") in ADMISSION_CONDITIONS
    ]
    for new in conditions:
        current = _with_condition(current, new)
    patch: Obj = {"conditions": current}
    if not clear_admission and status.get("admission"):
        patch["admission"] = copy.deepcopy(status["admission"])
        patch["resourceRequests"] = []
    elif status.get("resourceRequests"):
        patch["resourceRequests"] = copy.deepcopy(status["resourceRequests"])
    for key in ADMISSION_FIELDS:
        if status.get(key) is not None:
            patch[key] = copy.deepcopy(status[key])
    evictions = as_mapping(status.get("schedulingStats")).get("evictions")
    if evictions:
        patch["schedulingStats"] = {"evictions": copy.deepcopy(evictions)}
    return {**_apply_base(workload), "status": patch}


def finished_apply(workload: Mapping[str, Any], *, reason: str, message: str, now: str) -> Obj:
    """``Finished`` True with ``reason`` (Kueue's ``workloadfinish.Finish``): ``Succeeded`` or
    ``Failed`` when the job ended, ``FailedToStart``, ``OutOfSync`` for a prebuilt Workload."""
    generation = int(as_mapping(workload.get("metadata")).get("generation") or 0)
    finished = make_condition("Finished", True, reason, message, now=now, generation=generation)
    return admission_apply(workload, conditions=[finished])


def finish_apply(workload: Mapping[str, Any], *, succeeded: bool, message: str, now: str) -> Obj:
    """The job ended: ``Finished`` with reason ``Succeeded`` or ``Failed``."""
    reason = "Succeeded" if succeeded else "Failed"
    return finished_apply(workload, reason=reason, message=message, now=now)


def unreserve_apply(workload: Mapping[str, Any], *, now: str) -> Obj:
    """After an eviction, with the job's pods gone: the quota given back (``QuotaReserved``
    False, ``Admitted`` False) and ``Requeued`` True when Kueue will admit it again by itself
    (preemption, node failures), so Kueue's scheduler sees it pending again."""
    evicted = get_condition(workload_conditions(workload), "Evicted") or {}
    generation = int(as_mapping(workload.get("metadata")).get("generation") or 0)
    reason, message = str(evicted.get("reason", "")), str(evicted.get("message", ""))
    conditions = [
        make_condition(
            "Requeued",
            reason in REQUEUED_AFTER,
            reason or "Evicted",
            message,
            now=now,
            generation=generation,
        ),
        make_condition("QuotaReserved", False, "Pending", message, now=now, generation=generation),
    ]
    admitted = get_condition(workload_conditions(workload), "Admitted")
    if admitted is None or admitted.get("status") != "True":
        return admission_apply(workload, conditions=conditions, clear_admission=True)
    # Kueue's SyncAdmittedCondition (UnadmittedWorkloadsObservability off, its default): an
    # admitted Workload loses Admitted, and its admitted time is added to the past execution.
    checks_ready = all(
        as_mapping(c).get("state") == "Ready"
        for c in as_mapping(workload.get("status")).get("admissionChecks") or []
    )
    conditions.append(
        make_condition("Admitted", False, "NoReservation", "The workload has no reservation",
                       now=now, generation=generation)
        if checks_ready
        else make_condition("Admitted", False, "NoReservationUnsatisfiedChecks",
                            "The workload has no reservation and not all checks ready",
                            now=now, generation=generation)
    )  # fmt: skip
    body = admission_apply(workload, conditions=conditions, clear_admission=True)
    past = as_mapping(workload.get("status")).get("accumulatedPastExecutionTimeSeconds")
    admitted_for = _seconds_between(admitted.get("lastTransitionTime"), now)
    if admitted_for is not None:
        body["status"]["accumulatedPastExecutionTimeSeconds"] = int(past or 0) + admitted_for
    return body


def _seconds_between(start: object, end: str) -> int | None:
    """Whole seconds from one API time to another (Go's ``int32(d.Seconds())``)."""
    began, ended = parse_time(start), parse_time(end)
    if began is None or ended is None:
        return None
    return int((ended - began).total_seconds())


def pods_ready_condition(workload: Mapping[str, Any], *, running: bool, now: str) -> Obj:
    """Kueue's ``generatePodsReadyCondition``: ``Started``/``Recovered`` when the job runs,
    ``WaitForStart`` until it first did, ``WaitForRecovery`` after it stopped running."""
    generation = int(as_mapping(workload.get("metadata")).get("generation") or 0)
    current = get_condition(workload_conditions(workload), "PodsReady")
    ready_message = "All pods reached readiness and the workload is running"
    waiting, recovering = (
        "Not all pods are ready or succeeded",
        "At least one pod has failed, waiting for recovery",
    )
    if not is_admitted(workload):
        return make_condition(
            "PodsReady", False, "WaitForStart", waiting, now=now, generation=generation
        )
    if running:
        recovered = current is not None and current.get("reason") in (
            "WaitForRecovery",
            "Recovered",
        )
        reason = "Recovered" if recovered else "Started"
        return make_condition(
            "PodsReady", True, reason, ready_message, now=now, generation=generation
        )
    if current is not None and (
        current.get("status") == "True" or current.get("reason") == "WaitForRecovery"
    ):
        return make_condition(
            "PodsReady", False, "WaitForRecovery", recovering, now=now, generation=generation
        )
    return make_condition(
        "PodsReady", False, "WaitForStart", waiting, now=now, generation=generation
    )


def pods_ready_apply(workload: Mapping[str, Any], new: Obj) -> Obj | None:
    """The apply of ``PodsReady`` as its own manager, None when it already says so."""
    current = get_condition(workload_conditions(workload), "PodsReady")
    if (
        current is not None
        and current.get("status") == new["status"]
        and current.get("reason") == new["reason"]
    ):
        return None
    return {**_apply_base(workload), "status": {"conditions": [new]}}


def reclaimable_pods(job: MXJobView, workload: Mapping[str, Any]) -> list[Obj]:
    """Per podSet, its replicas that succeeded: their quota can go back while the rest of the
    job runs (a Succeeded pod is never restarted under any restart policy here)."""
    statuses = as_mapping(job.status.get("replicaStatuses"))
    counts = {
        str(p.get("name")): int(p.get("count") or 0)
        for p in as_mapping(workload.get("spec")).get("podSets") or []
    }
    reported: dict[str, int] = {}
    if has_quota_reservation(workload):
        # Kueue's webhook refuses a smaller or missing count while quota is reserved (a
        # succeeded pod deleted by hand lowers the job's count): the highest count stays.
        for entry in as_mapping(workload.get("status")).get("reclaimablePods") or []:
            reported[str(as_mapping(entry).get("name"))] = int(as_mapping(entry).get("count") or 0)
    reclaimable = []
    for replica in mode_replicas(job):
        done = as_mapping(statuses.get(replica.type.value)).get("succeeded")
        name = replica.lower
        count = min(done, counts.get(name, 0)) if isinstance(done, int) else 0
        count = max(count, reported.get(name, 0))
        if count > 0 and name in counts:
            reclaimable.append({"name": name, "count": count})
    return reclaimable


def reclaimable_apply(workload: Mapping[str, Any], pods: list[Obj]) -> Obj | None:
    if (as_mapping(workload.get("status")).get("reclaimablePods") or []) == pods:
        return None
    return {**_apply_base(workload), "status": {"reclaimablePods": pods}}
