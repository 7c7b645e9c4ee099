"""Kueue's job contract for MXJob, as pure decisions (the I/O is controller/workloads.py).

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

import copy
import datetime
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from shared.constants import API_VERSION_V1, KIND, MODE_REPLICA_TYPES
from shared.queueing import MULTIKUEUE, manager, prebuilt_workload, queue_name
from shared.spec import as_mapping, is_suspended, job_mode, replica_specs, spec_replica_count

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
DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
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
NAME_HASH_LENGTH: Final = 5
MAX_NAME_LENGTH: Final = 253


class PodSetConflictError(ValueError):
    """What admission asks for contradicts the job's own template (a node selector key with
    another value): starting cannot succeed, so the Workload is finished as failed to start."""


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


@dataclass
class PodSetInfo:
    """What admission adds to one podSet's pod template (Kueue's ``podset.PodSetInfo``)."""

    name: str
    count: int
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Obj] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    scheduling_gates: list[Obj] = field(default_factory=list)

    def merge(self, other: PodSetInfo, *, where: str) -> None:
        for mine, theirs, what in (
            (self.node_selector, other.node_selector, "node selector"),
            (self.labels, other.labels, "label"),
            (self.annotations, other.annotations, "annotation"),
        ):
            for key, value in theirs.items():
                if key in mine and mine[key] != value:
                    raise PodSetConflictError(
                        f"{where}: {what} {key}={value!r} conflicts with {mine[key]!r} in "
                        f"podSet {self.name}"
                    )
                mine[key] = value
        self.tolerations += [t for t in other.tolerations if t not in self.tolerations]
        self.scheduling_gates += [
            g for g in other.scheduling_gates if g not in self.scheduling_gates
        ]


def admitted_infos(
    workload: Mapping[str, Any], flavors: Mapping[str, Mapping[str, Any]]
) -> list[PodSetInfo]:
    """Per podSet, what Kueue's admission asks of its pods (``getPodSetsInfoFromStatus``, with
    Kueue v0.19's default feature gates): the assigned flavors' node labels and tolerations,
    the topology gate of a TAS assignment, the podSet, queue and MultiKueue worker labels, the
    Workload annotation, and each admission check's podSetUpdates. ``flavors``: by name."""
    status = as_mapping(workload.get("status"))
    meta = as_mapping(workload.get("metadata"))
    spec_sets = {
        str(p.get("name")): as_mapping(p)
        for p in as_mapping(workload.get("spec")).get("podSets") or []
    }
    admission = as_mapping(status.get("admission"))
    infos = []
    for assignment in admission.get("podSetAssignments") or []:
        name = str(assignment.get("name"))
        podset = spec_sets.get(name, {})
        count = assignment.get("count")
        info = PodSetInfo(name, int(count if count is not None else podset.get("count") or 0))
        if assignment.get("topologyAssignment"):
            _topology_info(info, podset)
        for flavor_name in dict.fromkeys(as_mapping(assignment.get("flavors")).values()):
            flavor = as_mapping(as_mapping(flavors.get(str(flavor_name))).get("spec"))
            info.node_selector.update(as_mapping(flavor.get("nodeLabels")))
            info.tolerations += [dict(t) for t in flavor.get("tolerations") or []]
        info.annotations[WORKLOAD_ANNOTATION] = str(meta.get("name"))
        info.labels[PODSET_LABEL] = name
        if MULTIKUEUE_ORIGIN_LABEL in as_mapping(meta.get("labels")):
            info.labels[MULTIKUEUE_POD_LABEL] = "true"
        _queue_labels(info, workload)
        for check in status.get("admissionChecks") or []:
            for update in as_mapping(check).get("podSetUpdates") or []:
                if as_mapping(update).get("name") == name:
                    info.merge(
                        _from_update(name, update), where=f"admission check {check.get('name')}"
                    )
                    break  # Kueue reads the first update per podSet of a check
        infos.append(info)
    return infos


def _topology_info(info: PodSetInfo, podset: Mapping[str, Any]) -> None:
    """A Topology Aware Scheduling assignment: pods wait behind Kueue's topology gate (Kueue's
    TAS ungater places them); a podSet that asked for no topology runs unconstrained."""
    request = as_mapping(podset.get("topologyRequest"))
    if not any(request.get(key) is not None for key in ("required", "preferred", "unconstrained")):
        info.annotations[UNCONSTRAINED_TOPOLOGY_ANNOTATION] = "true"
    info.scheduling_gates.append({"name": TOPOLOGY_GATE})


def _queue_labels(info: PodSetInfo, workload: Mapping[str, Any]) -> None:
    """Kueue's ``AssignQueueLabelsForPods`` (on by default): the LocalQueue, and the
    ClusterQueue when its name is a valid label value."""
    info.labels[LOCAL_QUEUE_LABEL] = str(as_mapping(workload.get("spec")).get("queueName") or "")
    cluster_queue = as_mapping(as_mapping(workload.get("status")).get("admission")).get(
        "clusterQueue"
    )
    if isinstance(cluster_queue, str) and DNS1123_LABEL.fullmatch(cluster_queue):
        info.labels[CLUSTER_QUEUE_LABEL] = cluster_queue


def _from_update(name: str, update: Mapping[str, Any]) -> PodSetInfo:
    return PodSetInfo(
        name, 0, node_selector=dict(as_mapping(update.get("nodeSelector"))),
        tolerations=[dict(t) for t in update.get("tolerations") or []],
        labels=dict(as_mapping(update.get("labels"))),
        annotations=dict(as_mapping(update.get("annotations"))),
    )  # fmt: skip


def _templates(job: Obj) -> dict[str, Obj]:
    """podSet name → the job's own replica template (in place, for editing ``job``)."""
    return {
        rtype.lower(): rspec.setdefault("template", {})
        for rtype, rspec in job["spec"]["mxReplicaSpecs"].items()
        if isinstance(rspec, dict)
    }


def started(job: Mapping[str, Any], infos: Sequence[PodSetInfo]) -> Obj:
    """The job as it starts: unsuspended, each template merged with its podSet's info
    (Kueue's ``RunWithPodSetsInfo``); ``PodSetConflictError`` when they contradict."""
    result: Obj = copy.deepcopy(dict(job))
    templates = _templates(result)
    for info in infos:
        template = templates.get(info.name)
        if template is None:
            raise PodSetConflictError(f"the job has no replica type for podSet {info.name}")
        meta, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
        own = PodSetInfo(
            info.name, info.count, dict(spec.get("nodeSelector") or {}),
            list(spec.get("tolerations") or []), dict(meta.get("labels") or {}),
            dict(meta.get("annotations") or {}), list(spec.get("schedulingGates") or []),
        )  # fmt: skip
        own.merge(info, where="admission")
        _write(meta, "labels", own.labels)
        _write(meta, "annotations", own.annotations)
        _write(spec, "nodeSelector", own.node_selector)
        _write(spec, "tolerations", own.tolerations)
        _write(spec, "schedulingGates", own.scheduling_gates)
    result["spec"].setdefault("runPolicy", {})["suspend"] = False
    return result


def stopped(job: Mapping[str, Any], workload: Mapping[str, Any] | None) -> Obj:
    """The job as it stops: suspended, and each template's labels, annotations, node selector,
    tolerations and scheduling gates as the Workload recorded them before admission
    (Kueue's ``RestorePodSetsInfo``); without a Workload only suspended."""
    result: Obj = copy.deepcopy(dict(job))
    result["spec"].setdefault("runPolicy", {})["suspend"] = True
    if workload is None:
        return result
    templates = _templates(result)
    for podset in as_mapping(workload.get("spec")).get("podSets") or []:
        template = templates.get(str(podset.get("name")))
        if template is None:
            continue
        original = as_mapping(podset.get("template"))
        old_meta, old_spec = as_mapping(original.get("metadata")), as_mapping(original.get("spec"))
        meta, spec = template.setdefault("metadata", {}), template.setdefault("spec", {})
        for target, source, key in (
            (meta, old_meta, "labels"), (meta, old_meta, "annotations"),
            (spec, old_spec, "nodeSelector"), (spec, old_spec, "tolerations"),
            (spec, old_spec, "schedulingGates"),
        ):  # fmt: skip
            _write(target, key, copy.deepcopy(source.get(key)))
        if not meta:
            del template["metadata"]  # what starting added, nothing the job had
    return result


def _write(target: Obj, key: str, value: Any) -> None:
    if value:
        target[key] = value
    else:
        target.pop(key, None)


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
        "apiVersion": API_VERSION,
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


def finish_apply(workload: Mapping[str, Any], *, succeeded: bool, message: str, now: str) -> Obj:
    """``Finished`` True, reason ``Succeeded`` or ``Failed`` (Kueue's ``workloadfinish.Finish``)."""
    generation = int(as_mapping(workload.get("metadata")).get("generation") or 0)
    reason = "Succeeded" if succeeded else "Failed"
    finished = make_condition("Finished", True, reason, message, now=now, generation=generation)
    return admission_apply(workload, conditions=[finished])


def failed_to_start_apply(workload: Mapping[str, Any], *, message: str, now: str) -> Obj:
    generation = int(as_mapping(workload.get("metadata")).get("generation") or 0)
    finished = make_condition(
        "Finished", True, "FailedToStart", message, now=now, generation=generation
    )
    return admission_apply(workload, conditions=[finished])


def release_apply(workload: Mapping[str, Any], *, now: str) -> Obj:
    """After an eviction, with the job's pods gone: the quota given back (``QuotaReserved``
    False, ``Admitted`` False) and ``Requeued`` True when Kueue will admit it again by itself
    (preemption, node failures), so Kueue's scheduler sees it pending again."""
    evicted = condition(workload, "Evicted") or {}
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
    admitted = condition(workload, "Admitted")
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
    admitted_for = _seconds_between(str(admitted.get("lastTransitionTime") or ""), now)
    if admitted_for is not None:
        body["status"]["accumulatedPastExecutionTimeSeconds"] = int(past or 0) + admitted_for
    return body


def _seconds_between(start: str, end: str) -> int | None:
    """Whole seconds from one RFC 3339 time to another (Go's ``int32(d.Seconds())``)."""
    try:
        delta = datetime.datetime.fromisoformat(end) - datetime.datetime.fromisoformat(start)
    except ValueError:
        return None
    return int(delta.total_seconds())


def pods_ready_condition(workload: Mapping[str, Any], *, running: bool, now: str) -> Obj:
    """Kueue's ``generatePodsReadyCondition``: ``Started``/``Recovered`` when the job runs,
    ``WaitForStart`` until it first did, ``WaitForRecovery`` after it stopped running."""
    generation = int(as_mapping(workload.get("metadata")).get("generation") or 0)
    current = condition(workload, "PodsReady")
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
    current = condition(workload, "PodsReady")
    if (
        current is not None
        and current.get("status") == new["status"]
        and current.get("reason") == new["reason"]
    ):
        return None
    return {**_apply_base(workload), "status": {"conditions": [new]}}


def reclaimable_pods(job: Mapping[str, Any], workload: Mapping[str, Any]) -> list[Obj]:
    """Per podSet, its replicas that succeeded: their quota can go back while the rest of the
    job runs (a Succeeded pod is never restarted under any restart policy here)."""
    statuses = as_mapping(as_mapping(job.get("status")).get("replicaStatuses"))
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
    for rtype in replica_order(job):
        done = as_mapping(statuses.get(rtype)).get("succeeded")
        name = rtype.lower()
        count = min(done, counts.get(name, 0)) if isinstance(done, int) else 0
        count = max(count, reported.get(name, 0))
        if count > 0 and name in counts:
            reclaimable.append({"name": name, "count": count})
    return reclaimable


def reclaimable_apply(workload: Mapping[str, Any], pods: list[Obj]) -> Obj | None:
    if (as_mapping(workload.get("status")).get("reclaimablePods") or []) == pods:
        return None
    return {**_apply_base(workload), "status": {"reclaimablePods": pods}}


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


def runs_here(job: Mapping[str, Any]) -> bool:
    """Pods are made in this cluster; False when MultiKueue runs the job elsewhere."""
    return manager(job) != MULTIKUEUE


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
