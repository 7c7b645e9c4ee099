"""A queued MXJob's Kueue Workload as data: names, labels, the Workload built for a job, and
whether one still stands for it. Pure; Kueue's ``kueue.x-k8s.io/v1beta2`` (its storage version
since v0.15), the way Kueue's ``jobframework`` builds and compares Workloads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.job.ownership import owner_reference
from controller.job.view import MXJobView, ReplicaView
from shared.conditions import get_condition, is_true
from shared.constants import KIND, MODE_REPLICA_TYPES
from shared.jsontree import copy_json
from shared.kueue_topology import topology_request
from shared.spec import as_mapping

Obj = dict[str, Any]


KUEUE_GROUP: Final = "kueue.x-k8s.io"


KUEUE_VERSION: Final = "v1beta2"
"""Kueue's storage version since v0.15; no conversion is needed to read or write it."""


KUEUE_API_VERSION: Final = f"{KUEUE_GROUP}/{KUEUE_VERSION}"


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


def workload_conditions(workload: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """A Workload's ``status.conditions``, for :mod:`shared.conditions`' lookups."""
    found = as_mapping(as_mapping(workload).get("status")).get("conditions")
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def has_quota_reservation(workload: Mapping[str, Any]) -> bool:
    return bool(as_mapping(workload.get("status")).get("admission")) and is_true(
        workload_conditions(workload), "QuotaReserved"
    )


def is_admitted(workload: Mapping[str, Any]) -> bool:
    return has_quota_reservation(workload) and is_true(workload_conditions(workload), "Admitted")


def held_back(workload: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, message) of what keeps Kueue from admitting the Workload: its ``QuotaReserved``
    False (no quota, no topology placement, an inactive queue...), else, quota reserved, its
    ``Admitted`` False (admission checks pending); None once admitted or not yet looked at."""
    conditions = workload_conditions(workload)
    for kind in ("QuotaReserved", "Admitted"):
        found = get_condition(conditions, kind)
        if found is None:
            return None
        if found.get("status") == "False":
            return str(found.get("reason") or kind), str(found.get("message") or "")
    return None


def workload_name(job_name: str, uid: str) -> str:
    """The name Kueue gives a job's Workload: ``mxjob-<job>-<5 hex of a sha1>`` (its
    ``GetWorkloadNameForOwnerWithGVK``), so a Workload written here reads like Kueue's own."""
    digest = hashlib.sha1(f"{KIND}\nkubeflow.org\n{job_name}\n{uid}".encode()).hexdigest()
    prefix = f"{KIND.lower()}-{job_name}"[: MAX_NAME_LENGTH - 1 - NAME_HASH_LENGTH]
    return f"{prefix}-{digest[:NAME_HASH_LENGTH]}"


def mode_replicas(job: MXJobView) -> tuple[ReplicaView, ...]:
    """The job's replicas of its mode, in its fixed order (Scheduler, Server, Worker...): one
    podSet each. A type of the other mode (a job validation refuses) gets none."""
    if job.mode is None:
        return ()
    allowed = MODE_REPLICA_TYPES[job.mode]
    return tuple(replica for replica in job.replicas if replica.type in allowed)


def pod_sets(job: MXJobView) -> list[Obj]:
    """One podSet per replica type: its lowercase name, replica count, pod template (as
    stored: Kueue compares the Workload with the job the API server holds) and the topology
    its template's annotations ask for (shared/kueue_topology.py)."""
    sets = []
    for replica in mode_replicas(job):
        template = copy_json(dict(job.stored_template(replica.type)))
        annotations = as_mapping(as_mapping(template.get("metadata")).get("annotations"))
        sets.append({
            "name": replica.lower,
            "count": replica.replicas,
            "template": template,
            "topologyRequest": topology_request(annotations),
        })  # fmt: skip
    return sets


def priority_class(job: MXJobView) -> str:
    """The pod PriorityClass Kueue's Kubeflow integration reads: ``schedulingPolicy
    .priorityClass`` (also under a legacy top-level run policy), else the first replica
    template (in mode order) that names one."""
    named = job.run_policy.scheduling_policy.get("priorityClass")
    if isinstance(named, str) and named:
        return named
    for replica in mode_replicas(job):
        name = as_mapping(job.stored_template(replica.type).get("spec")).get("priorityClassName")
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


def build_kueue_workload(job: MXJobView, *, priority: Priority) -> Obj:
    """The Kueue Workload Kueue's reconciler would make for ``job`` (``ConstructWorkload``)."""
    spec: Obj = {
        "queueName": job.queueing.queue_name,
        "podSets": pod_sets(job),
        "priority": priority.value,
    }
    max_seconds = max_execution_seconds(job)
    if max_seconds is not None:
        spec["maximumExecutionTimeSeconds"] = max_seconds
    if priority.name:
        spec["priorityClassRef"] = {
            "group": priority.group, "kind": priority.kind, "name": priority.name,
        }  # fmt: skip
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(job.name, job.uid),
            "namespace": job.namespace,
            "labels": {JOB_UID_LABEL: job.uid} if len(job.uid) <= 63 else {},
            "finalizers": [FINALIZER],
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }


def max_execution_seconds(job: MXJobView) -> int | None:
    """Kueue's ``kueue.x-k8s.io/max-exec-time-seconds`` label: a positive int32, else None."""
    try:
        seconds = int(str(job.labels.get(MAX_EXEC_TIME_LABEL)))
    except ValueError:
        return None
    return seconds if 0 < seconds < 2**31 else None


PLACEMENT_IGNORED: Final = ("podIndexLabel", "unconstrained")
"""Left out when a job's placement is compared with its Workload's: the pod index (a Workload
written before topology requests were has none, and asks for the same), and ``unconstrained``,
which admission itself writes onto the templates of podSets that asked for nothing
(:func:`controller.integrations.kueue.podsets.admitted_infos`): the started job would
otherwise no longer match the Workload that started it."""


def _placement(podset: Mapping[str, Any]) -> str:
    """What a podSet asks of its placement, as far as a change of it needs a new Workload."""
    request = as_mapping(podset.get("topologyRequest"))
    return repr(sorted((k, repr(v)) for k, v in request.items() if k not in PLACEMENT_IGNORED))


def _quota_shape(sets: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, str, str]]:
    """What admission depends on in each podSet: name, count, the containers' resources and
    the placement asked for."""
    shape = []
    for podset in sets:
        pod_spec = as_mapping(as_mapping(podset.get("template")).get("spec"))
        resources = [
            (as_mapping(c).get("name"), as_mapping(c).get("resources") or {})
            for key in ("initContainers", "containers")
            for c in pod_spec.get(key) or []
        ]
        shape.append(
            (str(podset.get("name")), int(podset.get("count") or 0), repr(resources),
             _placement(podset))
        )  # fmt: skip
    return shape


def equivalent(job: MXJobView, workload: Mapping[str, Any]) -> bool:
    """The Workload still stands for the job: same podSets, counts and resources (what Kueue's
    quota is computed from), topology asked for and maximum execution time. Templates are not
    compared whole: the Workload CRD defaults some fields of a stored template, and a running
    job's templates carry what admission added."""
    spec = as_mapping(workload.get("spec"))
    if spec.get("maximumExecutionTimeSeconds") != max_execution_seconds(job):
        return False
    return _quota_shape(pod_sets(job)) == _quota_shape(spec.get("podSets") or [])
