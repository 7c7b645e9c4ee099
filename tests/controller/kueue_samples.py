"""Queued MXJobs and their Kueue Workloads in each state, for the Workload route's unit tests.

A Workload here is what ``build_kueue_workload`` makes, then given the metadata the API server adds
and the status Kueue's scheduler writes (quota reserved, admitted, evicted, finished...).
"""

from __future__ import annotations

import copy
from typing import Any

from controller.integrations.kueue.workload import (
    Priority,
    build_kueue_workload,
    workload_conditions,
)
from shared.conditions import get_condition
from shared.queueing import QUEUE_NAME_LABEL
from tests.controller.samples import NOW_TEXT, job, view_of

Obj = dict[str, Any]

EARLIER = "2030-01-02T03:00:05Z"
"""Four minutes before ``NOW_TEXT``: when a sample Workload was admitted."""


def queued_job(
    *,
    queue: str = "team-a",
    suspend: bool = True,
    labels: dict[str, str] | None = None,
    status: Obj | None = None,
    **overrides: Any,
) -> Obj:
    """A defaulted MXJob labelled for a LocalQueue (suspended, as the webhook creates it)."""
    made = job(run_policy={"suspend": suspend}, status=status, **overrides)
    made["metadata"]["labels"] = {QUEUE_NAME_LABEL: queue, **(labels or {})}
    return made


def cond(kind: str, status: bool, reason: str, message: str = "", when: str = EARLIER) -> Obj:
    return {
        "type": kind, "status": "True" if status else "False", "reason": reason,
        "message": message, "lastTransitionTime": when, "observedGeneration": 1,
    }  # fmt: skip


def workload(job_obj: Obj, *, conditions: list[Obj] | None = None, **status: Any) -> Obj:
    """The job's Workload as stored: name, uid, resourceVersion and ``status``."""
    made = build_kueue_workload(view_of(job_obj), priority=Priority())
    made["metadata"].update(uid="wl-uid", resourceVersion="50", generation=1)
    made["status"] = {"conditions": list(conditions or []), **copy.deepcopy(status)}
    return made


def admission(flavor: str = "default", cluster_queue: str = "cq") -> Obj:
    """Every podSet of the sample job (Scheduler 1, Server 1, Worker 2) given ``flavor``."""
    return {
        "clusterQueue": cluster_queue,
        "podSetAssignments": [
            {"name": name, "flavors": {"cpu": flavor}, "count": count}
            for name, count in (("scheduler", 1), ("server", 1), ("worker", 2))
        ],
    }


def admitted(job_obj: Obj, *, extra: list[Obj] | None = None, **status: Any) -> Obj:
    """The Workload with quota reserved and admitted."""
    return workload(
        job_obj,
        conditions=[
            cond("QuotaReserved", True, "QuotaReserved", "Quota reserved in ClusterQueue cq"),
            cond("Admitted", True, "Admitted", "The workload is admitted"),
            *(extra or []),
        ],
        admission=admission(),
        **status,
    )


def evicted(job_obj: Obj, reason: str = "Preempted", **status: Any) -> Obj:
    """An admitted Workload that Kueue evicted for ``reason``."""
    message = f"Evicted: {reason}"
    return admitted(
        job_obj, extra=[cond("Evicted", True, reason, message, when=NOW_TEXT)], **status
    )


def flavor(name: str, labels: dict[str, str], tolerations: list[Obj] | None = None) -> Obj:
    """A ResourceFlavor as the API serves it."""
    spec: Obj = {"nodeLabels": labels}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def replica_status(**per_type: dict[str, int]) -> Obj:
    """A job status with ``replicaStatuses`` (``Worker={"succeeded": 1}``...)."""
    return {"replicaStatuses": {rtype: dict(counts) for rtype, counts in per_type.items()}}


def job_condition(kind: str, message: str = "") -> Obj:
    return {"type": kind, "status": "True", "reason": kind, "message": message}


FLAVORS = {"default": flavor("default", {"pool": "a"}, [{"key": "spot", "operator": "Exists"}])}
"""One ResourceFlavor with a node label and a toleration, by name."""


def status_condition(body: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The condition ``kind`` of an apply body or Workload; the test fails without one."""
    assert body is not None
    found = get_condition(workload_conditions(body), kind)
    assert found is not None, kind
    return found
