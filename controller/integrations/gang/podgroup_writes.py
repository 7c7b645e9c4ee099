"""The API side of gang scheduling: which gang scheduler the cluster serves, and the job's objects.

The objects themselves are built in :mod:`controller.integrations.gang.podgroups` (pure):
kube-scheduler's Workload and PodGroup (``native``), or the PodGroup of Volcano's or
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
    PLUGINS_GROUP,
    PLUGINS_VERSION,
    VOLCANO_GROUP,
    VOLCANO_VERSION,
    WORKLOAD_GROUP,
    WORKLOAD_VERSION,
    GangScheduler,
    build_crd_pod_group,
    build_pod_group,
    build_workload,
    crd_pod_group_update,
    delays_pods,
    pod_group_matches,
    workload_matches,
)
from controller.runtime.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    KubeClient,
    NotFound,
    resource_path,
)
from shared.spec import as_mapping, replica_specs

log = logging.getLogger(__name__)

WORKLOADS: Final = "workloads"
POD_GROUPS: Final = "podgroups"


class GangNotReadyError(Conflict):
    """The job's PodGroup is being replaced (the old one is still terminating): retry later,
    before any pod is created that would join the old group."""

    def __init__(self, message: str) -> None:
        super().__init__(409, "Conflict", message)


def gang_path(plural: str, namespace: str, name: str | None = None) -> str:
    return resource_path(
        group=WORKLOAD_GROUP,
        version=WORKLOAD_VERSION,
        plural=plural,
        namespace=namespace,
        name=name,
    )


def detect(client: KubeClient) -> GangScheduler:
    """``native`` when the API server serves Workloads and PodGroups, ``none`` otherwise."""
    try:
        listing = client.request("GET", f"/apis/{WORKLOAD_GROUP}/{WORKLOAD_VERSION}")
    except (NotFound, ApiError):
        return "none"
    served = {str(r.get("name")) for r in as_mapping(listing).get("resources", []) or []}
    return "native" if {WORKLOADS, POD_GROUPS} <= served else "none"


def ensure_gang(
    client: KubeClient,
    job: Mapping[str, Any],
    *,
    labels: Mapping[str, str],
    scheduler: GangScheduler = "native",
) -> list[str]:
    """Make the job's gang objects exist before its pods are created (see the two below)."""
    if scheduler in ("volcano", "scheduler-plugins"):
        return ensure_crd_pod_group(client, job, scheduler=scheduler)
    if scheduler == "native":
        return ensure_native_gang(client, job, labels=labels)
    return []


def ensure_native_gang(
    client: KubeClient, job: Mapping[str, Any], *, labels: Mapping[str, str]
) -> list[str]:
    """Make the job's Workload, then its PodGroup, exist as
    :mod:`controller.integrations.gang.podgroups` builds them.

    Returns the writes made (``<plural>`` or ``<plural>:delete``, for API-write metrics). One
    that no longer matches the job (or is an earlier job's) is deleted, and
    :class:`GangNotReadyError` holds pod creation back until the next reconcile makes it anew;
    so does one still terminating.
    """
    written: list[str] = []
    steps: tuple[
        tuple[str, dict[str, Any], Callable[[Mapping[str, Any], Mapping[str, Any]], bool]], ...
    ] = (
        (WORKLOADS, build_workload(job, labels=labels), workload_matches),
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
                written.append(plural)
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
            written.append(f"{plural}:delete")
        log.info("%s/%s: %s replaced, it no longer matches the job", namespace, name, plural)
        raise GangNotReadyError(f"{plural} {namespace}/{name} replaced: it no longer matched")
    return written


_CRD_API: Final = {
    "volcano": (VOLCANO_GROUP, VOLCANO_VERSION),
    "scheduler-plugins": (PLUGINS_GROUP, PLUGINS_VERSION),
}


def crd_pod_group_path(scheduler: GangScheduler, namespace: str, name: str | None = None) -> str:
    group, version = _CRD_API[scheduler]
    return resource_path(
        group=group, version=version, plural=POD_GROUPS, namespace=namespace, name=name
    )


def priority_values(client: KubeClient, job: Mapping[str, Any]) -> dict[str, int]:
    """The values of the PriorityClasses the job's templates name (one GET each; a class that
    does not exist counts 0, as in training-operator's ``CalcPGMinResources``)."""
    names = set()
    for spec in replica_specs(job).values():
        template = as_mapping(as_mapping(spec).get("template"))
        name = as_mapping(template.get("spec")).get("priorityClassName")
        if name:
            names.add(str(name))
    values: dict[str, int] = {}
    for name in sorted(names):
        with contextlib.suppress(NotFound):
            found = client.request("GET", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
            values[name] = int(as_mapping(found).get("value") or 0)
    return values


def ensure_crd_pod_group(
    client: KubeClient, job: Mapping[str, Any], *, scheduler: GangScheduler
) -> list[str]:
    """Create the job's Volcano or scheduler-plugins PodGroup, or update its spec to the job's
    (training-operator's ``SyncPodGroup``); then, for Volcano, hold pod creation back
    (:class:`GangNotReadyError`, retried with back-off) until Volcano admitted the group.

    One left by an earlier job of the same name is deleted first, like the native objects.
    """
    priorities = priority_values(client, job)
    wanted = build_crd_pod_group(job, scheduler, priorities=priorities)
    namespace, name = str(wanted["metadata"]["namespace"]), str(wanted["metadata"]["name"])
    path = crd_pod_group_path(scheduler, namespace, name)
    written: list[str] = []
    try:
        existing: Mapping[str, Any] | None = client.request("GET", path)
    except NotFound:
        existing = None
    if existing is None:
        try:
            existing = client.request("POST", crd_pod_group_path(scheduler, namespace), body=wanted)
            written.append(POD_GROUPS)
            log.info("%s/%s: %s PodGroup created", namespace, name, scheduler)
        except AlreadyExists as error:
            raise GangNotReadyError(f"podgroups {namespace}/{name} appeared meanwhile") from error
    else:
        meta = as_mapping(existing.get("metadata"))
        if meta.get("deletionTimestamp"):
            raise GangNotReadyError(f"podgroups {namespace}/{name} is still being deleted")
        job_uid = as_mapping(job.get("metadata")).get("uid")
        owners = [as_mapping(o).get("uid") for o in meta.get("ownerReferences") or []]
        if job_uid not in owners:
            with contextlib.suppress(NotFound, Conflict):
                client.request("DELETE", path, body={"preconditions": {"uid": meta.get("uid")}})
                written.append(f"{POD_GROUPS}:delete")
            raise GangNotReadyError(f"podgroups {namespace}/{name} was an earlier job's")
        update = crd_pod_group_update(existing, job, scheduler, priorities=priorities)
        if update is not None:
            existing = client.request("PUT", path, body=update)
            written.append(f"{POD_GROUPS}:update")
            log.info("%s/%s: %s PodGroup updated", namespace, name, scheduler)
    if delays_pods(existing, scheduler):
        raise GangNotReadyError(
            f"podgroups {namespace}/{name}: waiting for Volcano to admit the group (phase "
            f"{as_mapping(as_mapping(existing).get('status')).get('phase') or 'unset'})"
        )
    return written
