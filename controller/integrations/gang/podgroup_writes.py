"""The API side of gang scheduling: which gang scheduler the cluster serves, and the job's
Volcano or scheduler-plugins PodGroup.

Those PodGroups are built in :mod:`controller.integrations.gang.podgroups` (pure), written as
kubeflow training-operator v1.8.1 writes them; kube-scheduler's own Workload and PodGroup
(``native``) in :mod:`controller.integrations.gang.native_writes`. They are written only when a
reconcile is about to create pods, just before it does. Nothing is cached: jobs create pods
rarely, and a GET per pod-creating reconcile costs less than a third and fourth watch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final

from controller.integrations.gang.native_writes import (
    GangNotReadyError,
    NativeTarget,
    ensure_native_gang,
    served_version,
)
from controller.integrations.gang.podgroups import (
    PLUGINS_GROUP,
    PLUGINS_VERSION,
    VOLCANO_GROUP,
    VOLCANO_VERSION,
    GangScheduler,
    build_crd_pod_group,
    crd_pod_group_update,
    delays_pods,
)
from controller.job.ownership import owned_by
from controller.job.view import MXJobView
from controller.runtime.client import (
    AlreadyExists,
    Conflict,
    KubeClient,
    NotFound,
    resource_path,
)
from shared.spec import as_mapping

log = logging.getLogger(__name__)

POD_GROUPS: Final = "podgroups"

__all__ = ["GangNotReadyError", "detect", "ensure_crd_pod_group", "ensure_gang"]


def detect(client: KubeClient) -> GangScheduler:
    """``native`` when the API server serves Workloads and PodGroups in a version this controller
    writes (:data:`~controller.integrations.gang.native.NATIVE_VERSIONS`), ``none`` otherwise."""
    return "none" if served_version(client) is None else "native"


def ensure_gang(
    client: KubeClient,
    job: MXJobView,
    *,
    labels: Mapping[str, str],
    scheduler: GangScheduler,
    native: NativeTarget | None = None,
) -> list[str]:
    """Make the job's gang objects exist before its pods are created; nothing for ``none``.
    Returns what the API server did not keep of them (``native`` only: Event messages)."""
    if scheduler in ("volcano", "scheduler-plugins"):
        ensure_crd_pod_group(client, job, scheduler=scheduler)
    elif scheduler == "native":
        return ensure_native_gang(client, job, labels=labels, target=native or NativeTarget())
    return []


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
