"""The API side of gang scheduling: which gang scheduler the cluster serves, and the job's objects.

The objects themselves are built in :mod:`controller.integrations.gang.podgroups` (pure):
kube-scheduler's (gang) Workload and PodGroup (``native``), or the PodGroup of Volcano's or
scheduler-plugins' CRD, written as kubeflow training-operator v1.8.1 writes it. They are written
only when a reconcile is about to create pods, just before it does (a pod that names a PodGroup
which does not exist yet waits in kube-scheduler until it appears, so the order is for speed, not
correctness). Nothing is cached: jobs create pods rarely, and a GET per pod-creating reconcile
costs less than a third and fourth watch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from controller.integrations.gang.podgroups import (
    GANG_GROUP,
    GANG_VERSION,
    PLUGINS_GROUP,
    PLUGINS_VERSION,
    VOLCANO_GROUP,
    VOLCANO_VERSION,
    GangScheduler,
    build_crd_pod_group,
    build_gang_workload,
    build_pod_group,
    crd_pod_group_update,
    delays_pods,
    gang_workload_matches,
    pod_group_matches,
)
from controller.job.ownership import owned_by
from controller.job.view import MXJobView
from controller.runtime.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    KubeClient,
    NotFound,
    resource_path,
)
from shared.spec import as_mapping

log = logging.getLogger(__name__)

WORKLOADS: Final = "workloads"
POD_GROUPS: Final = "podgroups"

Matches = Callable[[Mapping[str, Any], MXJobView], bool]


class GangNotReadyError(Conflict):
    """The job's PodGroup is being replaced (the old one is still terminating): retry later,
    before any pod is created that would join the old group."""

    def __init__(self, message: str) -> None:
        super().__init__(409, "Conflict", message)


def gang_path(plural: str, namespace: str, name: str | None = None) -> str:
    """A kube-scheduler gang object (``scheduling.k8s.io`` Workload or PodGroup)."""
    return resource_path(
        group=GANG_GROUP, version=GANG_VERSION, plural=plural, namespace=namespace, name=name
    )


def detect(client: KubeClient) -> GangScheduler:
    """``native`` when the API server serves Workloads and PodGroups, ``none`` otherwise."""
    try:
        listing = client.request("GET", f"/apis/{GANG_GROUP}/{GANG_VERSION}")
    except (NotFound, ApiError):
        return "none"
    served = {str(r.get("name")) for r in as_mapping(listing).get("resources", []) or []}
    return "native" if {WORKLOADS, POD_GROUPS} <= served else "none"


def ensure_gang(
    client: KubeClient,
    job: MXJobView,
    *,
    labels: Mapping[str, str],
    scheduler: GangScheduler,
) -> None:
    """Make the job's gang objects exist before its pods are created (see the two below);
    nothing for ``none``."""
    if scheduler in ("volcano", "scheduler-plugins"):
        ensure_crd_pod_group(client, job, scheduler=scheduler)
    elif scheduler == "native":
        ensure_native_gang(client, job, labels=labels)


def ensure_native_gang(client: KubeClient, job: MXJobView, *, labels: Mapping[str, str]) -> None:
    """Make the job's gang Workload, then its PodGroup, exist as
    :mod:`controller.integrations.gang.podgroups` builds them.

    One that no longer matches the job (or is an earlier job's) is deleted, and
    :class:`GangNotReadyError` holds pod creation back until the next reconcile makes it anew;
    so does one still terminating.
    """
    steps: tuple[tuple[str, dict[str, Any], Matches], ...] = (
        (WORKLOADS, build_gang_workload(job, labels=labels), gang_workload_matches),
        (POD_GROUPS, build_pod_group(job, labels=labels), pod_group_matches),
    )
    for plural, wanted, matches in steps:
        namespace, name = str(wanted["metadata"]["namespace"]), str(wanted["metadata"]["name"])
        path = gang_path(plural, namespace, name)
        try:
            existing = client.request("GET", path)
        except NotFound:
            existing = None
        if existing is None:
            with contextlib.suppress(AlreadyExists):
                client.request("POST", gang_path(plural, namespace), body=wanted)
                log.info("%s/%s: %s created", namespace, name, plural)
            continue
        existing_meta = as_mapping(existing.get("metadata"))
        if existing_meta.get("deletionTimestamp"):
            raise GangNotReadyError(f"{plural} {namespace}/{name} is still being deleted")
        if matches(existing, job):
            continue
        with contextlib.suppress(NotFound, Conflict):
            client.request(
                "DELETE", path, body={"preconditions": {"uid": existing_meta.get("uid")}}
            )
        log.info("%s/%s: %s replaced, it no longer matches the job", namespace, name, plural)
        raise GangNotReadyError(f"{plural} {namespace}/{name} replaced: it no longer matched")


_CRD_API: Final = {
    "volcano": (VOLCANO_GROUP, VOLCANO_VERSION),
    "scheduler-plugins": (PLUGINS_GROUP, PLUGINS_VERSION),
}


def crd_pod_group_path(scheduler: GangScheduler, namespace: str, name: str | None = None) -> str:
    group, version = _CRD_API[scheduler]
    return resource_path(
        group=group, version=version, plural=POD_GROUPS, namespace=namespace, name=name
    )


def priority_values(client: KubeClient, job: MXJobView) -> dict[str, int]:
    """The values of the PriorityClasses the job's templates name (one GET each; a class that
    does not exist counts 0, as in training-operator's ``CalcPGMinResources``)."""
    names = set()
    for replica in job.replicas:
        name = as_mapping(replica.template.get("spec")).get("priorityClassName")
        if name:
            names.add(str(name))
    values: dict[str, int] = {}
    for name in sorted(names):
        with contextlib.suppress(NotFound):
            found = client.request("GET", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
            values[name] = int(as_mapping(found).get("value") or 0)
    return values


def ensure_crd_pod_group(client: KubeClient, job: MXJobView, *, scheduler: GangScheduler) -> None:
    """Create the job's Volcano or scheduler-plugins PodGroup, or update its spec to the job's
    (training-operator's ``SyncPodGroup``); then, for Volcano, hold pod creation back
    (:class:`GangNotReadyError`, retried with back-off) until Volcano admitted the group.

    One left by an earlier job of the same name is deleted first, like the native objects.
    """
    priorities = priority_values(client, job)
    wanted = build_crd_pod_group(job, scheduler, priorities=priorities)
    namespace, name = job.namespace, job.name
    path = crd_pod_group_path(scheduler, namespace, name)
    try:
        existing: Mapping[str, Any] | None = client.request("GET", path)
    except NotFound:
        existing = None
    if existing is None:
        try:
            existing = client.request("POST", crd_pod_group_path(scheduler, namespace), body=wanted)
            log.info("%s/%s: %s PodGroup created", namespace, name, scheduler)
        except AlreadyExists as error:
            raise GangNotReadyError(f"podgroups {namespace}/{name} appeared meanwhile") from error
    else:
        meta = as_mapping(existing.get("metadata"))
        if meta.get("deletionTimestamp"):
            raise GangNotReadyError(f"podgroups {namespace}/{name} is still being deleted")
        if not owned_by(existing, job):
            with contextlib.suppress(NotFound, Conflict):
                client.request("DELETE", path, body={"preconditions": {"uid": meta.get("uid")}})
            raise GangNotReadyError(f"podgroups {namespace}/{name} was an earlier job's")
        update = crd_pod_group_update(existing, job, scheduler, priorities=priorities)
        if update is not None:
            existing = client.request("PUT", path, body=update)
            log.info("%s/%s: %s PodGroup updated", namespace, name, scheduler)
    if delays_pods(existing, scheduler):
        phase = as_mapping(as_mapping(existing).get("status")).get("phase") or "unset"
        raise GangNotReadyError(
            f"podgroups {namespace}/{name}: waiting for Volcano to admit the group (phase {phase})"
        )
