"""The API side of gang scheduling: which gang scheduler the cluster serves, and the job's objects.

The objects themselves are built in :mod:`controller.gang` (pure). They are written only when a
reconcile is about to create pods, just before it does (a pod that names a PodGroup which does
not exist yet waits in kube-scheduler until it appears, so the order is for speed, not
correctness). Nothing is cached: jobs create pods rarely, and a GET per pod-creating reconcile
costs less than a third and fourth watch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from controller.gang import (
    WORKLOAD_GROUP,
    WORKLOAD_VERSION,
    GangScheduler,
    build_pod_group,
    build_workload,
    pod_group_matches,
)
from controller.kube import AlreadyExists, ApiError, Conflict, KubeClient, NotFound, resource_path
from shared.spec import as_mapping

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


def _create(client: KubeClient, plural: str, body: Mapping[str, Any]) -> bool:
    namespace = str(body["metadata"]["namespace"])
    try:
        client.request("POST", gang_path(plural, namespace), body=body)
        return True
    except AlreadyExists:
        return False


def ensure_gang(
    client: KubeClient, job: Mapping[str, Any], *, labels: Mapping[str, str]
) -> list[str]:
    """Make the job's Workload and PodGroup exist as :mod:`controller.gang` builds them.

    Returns the kinds written (for API-write metrics). Raises :class:`GangNotReadyError` while
    an outdated PodGroup is still terminating.
    """
    written: list[str] = []
    if _create(client, WORKLOADS, build_workload(job, labels=labels)):
        written.append(WORKLOADS)
    wanted = build_pod_group(job, labels=labels)
    meta = wanted["metadata"]
    path = gang_path(POD_GROUPS, str(meta["namespace"]), str(meta["name"]))
    try:
        existing = client.request("GET", path)
    except NotFound:
        existing = None
    if existing is not None:
        existing_meta = as_mapping(existing.get("metadata"))
        if existing_meta.get("deletionTimestamp"):
            raise GangNotReadyError(f"PodGroup {meta['name']} is still being deleted")
        if pod_group_matches(existing, job):
            return written
        # Immutable: the job's replicas changed while it had no pods; make a new one.
        client.request("DELETE", path, body={"preconditions": {"uid": existing_meta.get("uid")}})
        written.append(f"{POD_GROUPS}:delete")
        raise GangNotReadyError(f"PodGroup {meta['name']} replaced: its minCount changed")
    if _create(client, POD_GROUPS, wanted):
        written.append(POD_GROUPS)
    log.info("%s/%s: gang created (native)", meta["namespace"], meta["name"])
    return written
