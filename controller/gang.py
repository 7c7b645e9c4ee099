"""Gang scheduling: an MXJob → the objects a gang scheduler needs, and what its pods carry (pure).

A distributed MXNet job with one replica unplaced does not run slowly, it does not run at all:
ps-lite waits for every scheduler, server and worker it was told about. Two such jobs that each
got part of the GPUs they need wait for each other forever. A gang scheduler binds a job's pods
all together or not at all.

``runPolicy.schedulingPolicy.minAvailable`` keeps training-operator v1.8's meaning: how many of
the job's pods must be placed together, by default every replica of the job.

``native`` is Kubernetes' own (v1.36, ``scheduling.k8s.io/v1alpha2``, kube-scheduler's
GangScheduling plugin behind the ``GenericWorkload`` and ``GangScheduling`` feature gates): one
``Workload`` per job with one pod-group template, one ``PodGroup`` made from that template, and
every pod joined to it through ``spec.schedulingGroup.podGroupName``. Both objects are named
after the job and owned by it, so garbage collection removes them with it. A PodGroup is
immutable, so one whose ``minCount`` no longer matches the job (replicas changed while
suspended) is replaced before pods are created (:mod:`controller.gang_client`), and so is the
Workload.

The I/O (discovery, creating and replacing the objects) is :mod:`controller.gang_client`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from shared.constants import API_VERSION_V1, GROUP, KIND
from shared.spec import as_mapping, is_int, job_name, replica_count, replica_specs

GangScheduler = Literal["native", "none"]
"""Which gang scheduler the controller writes for: ``native`` is kube-scheduler's Workload API,
``none`` writes nothing (pods are scheduled one by one)."""
GANG_SCHEDULERS: Final[tuple[str, ...]] = ("native", "none")

WORKLOAD_GROUP: Final = "scheduling.k8s.io"
WORKLOAD_VERSION: Final = "v1alpha2"
WORKLOAD_API_VERSION: Final = f"{WORKLOAD_GROUP}/{WORKLOAD_VERSION}"
POD_GROUP_TEMPLATE: Final = "replicas"
"""The one pod-group template of a job's Workload: every replica of the job is one gang."""

GANG_WAITING: Final = "GangWaiting"
"""Event reason: the job's pods exist but fewer than ``minAvailable`` are placed on nodes."""


def scheduling_policy(job: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = as_mapping(job.get("spec"))
    return as_mapping(as_mapping(spec.get("runPolicy")).get("schedulingPolicy"))


def total_replicas(job: Mapping[str, Any]) -> int:
    return sum(replica_count(job, rtype) for rtype in replica_specs(job))


def min_available(job: Mapping[str, Any]) -> int:
    """``schedulingPolicy.minAvailable`` when it is a positive count no larger than the job, else
    every replica of the job (training-operator v1.8's default)."""
    total = total_replicas(job)
    value = scheduling_policy(job).get("minAvailable")
    if is_int(value) and 0 < value <= total:
        return value
    return total


def _owner(job: Mapping[str, Any]) -> dict[str, Any]:
    meta = as_mapping(job.get("metadata"))
    return {
        "apiVersion": API_VERSION_V1,
        "kind": KIND,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _metadata(job: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    meta = as_mapping(job.get("metadata"))
    return {
        "name": job_name(job),
        "namespace": meta.get("namespace"),
        "labels": dict(labels),
        "ownerReferences": [_owner(job)],
    }


def _gang_policy(job: Mapping[str, Any]) -> dict[str, Any]:
    return {"gang": {"minCount": min_available(job)}}


def build_workload(job: Mapping[str, Any], *, labels: Mapping[str, str]) -> dict[str, Any]:
    """The job's Workload: who the pods belong to, and that they form one gang."""
    return {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "Workload",
        "metadata": _metadata(job, labels),
        "spec": {
            "controllerRef": {"apiGroup": GROUP, "kind": KIND, "name": job_name(job)},
            "podGroupTemplates": [
                {"name": POD_GROUP_TEMPLATE, "schedulingPolicy": _gang_policy(job)}
            ],
        },
    }


def build_pod_group(job: Mapping[str, Any], *, labels: Mapping[str, str]) -> dict[str, Any]:
    """The job's PodGroup, the runtime instance of its Workload's template the pods join."""
    return {
        "apiVersion": WORKLOAD_API_VERSION,
        "kind": "PodGroup",
        "metadata": _metadata(job, labels),
        "spec": {
            "podGroupTemplateRef": {
                "workload": {
                    "workloadName": job_name(job),
                    "podGroupTemplateName": POD_GROUP_TEMPLATE,
                }
            },
            "schedulingPolicy": _gang_policy(job),
        },
    }


def _owned_by(existing: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    owners = as_mapping(existing.get("metadata")).get("ownerReferences") or []
    uid = as_mapping(job.get("metadata")).get("uid")
    return any(as_mapping(o).get("uid") == uid for o in owners)


def pod_group_matches(existing: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether an existing PodGroup is this job's and says what :func:`build_pod_group` would.

    Its spec is immutable: a different ``minCount`` (the replicas changed while the job was
    suspended) means delete and create again; so does one left by an earlier job of that name.
    """
    policy = as_mapping(existing.get("spec")).get("schedulingPolicy")
    return _owned_by(existing, job) and policy == _gang_policy(job)


def workload_matches(existing: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """As :func:`pod_group_matches`, for the Workload's one pod-group template."""
    templates = as_mapping(existing.get("spec")).get("podGroupTemplates") or []
    policies = [as_mapping(t).get("schedulingPolicy") for t in templates]
    return _owned_by(existing, job) and policies == [_gang_policy(job)]


def join_pod(pod: dict[str, Any], job: Mapping[str, Any], scheduler: GangScheduler) -> None:
    """Join a pod built for ``job`` to the job's gang (in place)."""
    if scheduler == "native":
        pod.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": job_name(job)}


def gang_waiting(
    job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], scheduler: GangScheduler
) -> str | None:
    """A message when the job's pods wait for their gang to fit, None otherwise.

    Waiting means: the job has all its pods, and fewer than ``minAvailable`` are on a node
    (a gang scheduler binds them together, so until then they stay Pending as a whole).
    """
    if scheduler == "none":
        return None
    live = [p for p in pods if not as_mapping(p.get("metadata")).get("deletionTimestamp")]
    if len(live) < total_replicas(job):
        return None
    placed = sum(1 for p in live if as_mapping(p.get("spec")).get("nodeName"))
    needed = min_available(job)
    if placed >= needed:
        return None
    return (
        f"Waiting for the gang: {placed} of {len(live)} pods placed; the scheduler binds "
        f"{needed} (minAvailable) together once they fit."
    )
