"""The API side of gang scheduling: which gang scheduler the cluster serves, and the job's objects.

The objects themselves are built in :mod:`controller.gang` (pure). They are written only when a
reconcile is about to create pods, just before it does (a pod that names a PodGroup which does
not exist yet waits in kube-scheduler until it appears, so the order is for speed, not
correctness). Nothing is cached: jobs create pods rarely, and a GET per pod-creating reconcile
costs less than a third and fourth watch.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from controller.gang import (
    WORKLOAD_GROUP,
    WORKLOAD_VERSION,
    GangScheduler,
    build_pod_group,
    build_workload,
    pod_group_matches,
    workload_matches,
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


def ensure_gang(
    client: KubeClient, job: Mapping[str, Any], *, labels: Mapping[str, str]
) -> list[str]:
    """Make the job's Workload, then its PodGroup, exist as :mod:`controller.gang` builds them.

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
