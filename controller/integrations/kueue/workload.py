"""A queued MXJob's Kueue Workload as data: names, labels, the Workload built for a job, and
whether one still stands for it. Pure; Kueue's ``kueue.x-k8s.io/v1beta2`` (its storage version
since v0.15), the way Kueue's ``jobframework`` builds and compares Workloads.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shared.constants import API_VERSION_V1, KIND, MODE_REPLICA_TYPES
from shared.queueing import queue_name
from shared.spec import as_mapping, job_mode, replica_specs, spec_replica_count

Obj = dict[str, Any]


GROUP: Final = "kueue.x-k8s.io"


VERSION: Final = "v1beta2"
"""Kueue's storage version since v0.15; no conversion is needed to read or write it."""


API_VERSION: Final = f"{GROUP}/{VERSION}"


FINALIZER: Final = "kueue.x-k8s.io/resource-in-use"
"""Held by the job's controller until the Workload's quota is truly free (pods gone)."""


JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"


PODSET_LABEL: Final = "kueue.x-k8s.io/podset"


MULTIKUEUE_ORIGIN_LABEL: Final = "kueue.x-k8s.io/multikueue-origin"


MULTIKUEUE_POD_LABEL: Final = "kueue.x-k8s.io/multikueue-worker-workload-pod"


LOCAL_QUEUE_LABEL: Final = "kueue.x-k8s.io/local-queue-name"


CLUSTER_QUEUE_LABEL: Final = "kueue.x-k8s.io/cluster-queue-name"


WORKLOAD_ANNOTATION: Final = "kueue.x-k8s.io/workload"
"""On every admitted pod while Kueue's TopologyAwareScheduling gate is on (its default)."""


UNCONSTRAINED_TOPOLOGY_ANNOTATION: Final = "kueue.x-k8s.io/podset-unconstrained-topology"


TOPOLOGY_GATE: Final = "kueue.x-k8s.io/topology"


MAX_EXEC_TIME_LABEL: Final = "kueue.x-k8s.io/max-exec-time-seconds"


NAME_HASH_LENGTH: Final = 5


MAX_NAME_LENGTH: Final = 253


def condition(obj: Mapping[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for entry in as_mapping(as_mapping(obj).get("status")).get("conditions") or []:
        if isinstance(entry, dict) and entry.get("type") == kind:
            return entry
    return None


def is_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found.get("status") == "True"


def has_quota_reservation(workload: Mapping[str, Any]) -> bool:
    return bool(as_mapping(workload.get("status")).get("admission")) and is_true(
        workload, "QuotaReserved"
    )


def is_admitted(workload: Mapping[str, Any]) -> bool:
    return has_quota_reservation(workload) and is_true(workload, "Admitted")


def workload_name(job_name: str, uid: str) -> str:
    """The name Kueue gives a job's Workload: ``mxjob-<job>-<5 hex of a sha1>`` (its
    ``GetWorkloadNameForOwnerWithGVK``), so a Workload written here reads like Kueue's own."""
    digest = hashlib.sha1(f"{KIND}\nkubeflow.org\n{job_name}\n{uid}".encode()).hexdigest()
    prefix = f"{KIND.lower()}-{job_name}"[: MAX_NAME_LENGTH - 1 - NAME_HASH_LENGTH]
    return f"{prefix}-{digest[:NAME_HASH_LENGTH]}"


def replica_order(job: Mapping[str, Any]) -> list[str]:
    """The job's replica types in the fixed order of its mode (Scheduler, Server, Worker...)."""
    mode = job_mode(job)
    present = replica_specs(job)
    return [t.value for t in MODE_REPLICA_TYPES[mode] if t in present] if mode else []


def pod_sets(job: Mapping[str, Any]) -> list[Obj]:
    """One podSet per replica type: its lowercase name, replica count and pod template."""
    specs = replica_specs(job)
    mode = job_mode(job)
    sets: list[Obj] = []
    for rtype in MODE_REPLICA_TYPES[mode] if mode else ():
        rspec = specs.get(rtype)
        if rspec is None:
            continue
        sets.append(
            {
                "name": rtype.value.lower(),
                "count": spec_replica_count(rspec),
                "template": copy.deepcopy(as_mapping(rspec).get("template") or {}),
            }
        )
    return sets


def priority_class(job: Mapping[str, Any]) -> str:
    """The pod PriorityClass Kueue's Kubeflow integration reads: ``schedulingPolicy
    .priorityClass``, else the first replica template (in mode order) that names one."""
    policy = as_mapping(
        as_mapping(as_mapping(job.get("spec")).get("runPolicy")).get("schedulingPolicy")
    )
    if isinstance(policy.get("priorityClass"), str) and policy["priorityClass"]:
        return str(policy["priorityClass"])
    for podset in pod_sets(job):
        name = as_mapping(podset["template"].get("spec")).get("priorityClassName")
        if isinstance(name, str) and name:
            return name
    return ""


@dataclass(frozen=True)
class Priority:
    """The Workload's priority and the class it came from (none: 0)."""

    value: int = 0
    group: str = ""
    kind: str = ""
    name: str = ""


def build_workload(job: Mapping[str, Any], *, priority: Priority) -> Obj:
    """The Workload Kueue's reconciler would make for ``job`` (``ConstructWorkload``)."""
    meta = as_mapping(job.get("metadata"))
    name, uid = str(meta.get("name")), str(meta.get("uid"))
    spec: Obj = {"queueName": queue_name(job), "podSets": pod_sets(job), "priority": priority.value}
    max_seconds = max_execution_seconds(job)
    if max_seconds is not None:
        spec["maximumExecutionTimeSeconds"] = max_seconds
    if priority.name:
        spec["priorityClassRef"] = {
            "group": priority.group, "kind": priority.kind, "name": priority.name,
        }  # fmt: skip
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(name, uid),
            "namespace": meta.get("namespace"),
            "labels": {JOB_UID_LABEL: uid} if len(uid) <= 63 else {},
            "finalizers": [FINALIZER],
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }


def max_execution_seconds(job: Mapping[str, Any]) -> int | None:
    """Kueue's ``kueue.x-k8s.io/max-exec-time-seconds`` label: a positive int32, else None."""
    value = as_mapping(as_mapping(job.get("metadata")).get("labels")).get(MAX_EXEC_TIME_LABEL)
    try:
        seconds = int(str(value))
    except ValueError:
        return None
    return seconds if 0 < seconds < 2**31 else None


def owner_reference(job: Mapping[str, Any]) -> Obj:
    meta = as_mapping(job.get("metadata"))
    return {
        "apiVersion": API_VERSION_V1, "kind": KIND, "name": meta.get("name"),
        "uid": meta.get("uid"), "controller": True, "blockOwnerDeletion": True,
    }  # fmt: skip


def controlled_by(workload: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    uid = as_mapping(job.get("metadata")).get("uid")
    return any(
        isinstance(ref, dict) and ref.get("controller") and ref.get("uid") == uid
        for ref in as_mapping(workload.get("metadata")).get("ownerReferences") or []
    )


def _quota_shape(sets: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, str]]:
    """What quota depends on in each podSet: name, count and the containers' resources."""
    shape = []
    for podset in sets:
        pod_spec = as_mapping(as_mapping(podset.get("template")).get("spec"))
        resources = [
            (as_mapping(c).get("name"), as_mapping(c).get("resources") or {})
            for key in ("initContainers", "containers")
            for c in pod_spec.get(key) or []
        ]
        shape.append((str(podset.get("name")), int(podset.get("count") or 0), repr(resources)))
    return shape


def equivalent(job: Mapping[str, Any], workload: Mapping[str, Any]) -> bool:
    """The Workload still stands for the job: same podSets, counts and resources (what Kueue's
    quota is computed from) and maximum execution time. Templates are not compared whole: the
    Workload CRD defaults some fields of a stored template, and a running job's templates carry
    what admission added."""
    spec = as_mapping(workload.get("spec"))
    if spec.get("maximumExecutionTimeSeconds") != max_execution_seconds(job):
        return False
    return _quota_shape(pod_sets(job)) == _quota_shape(spec.get("podSets") or [])
