"""The API side of native gang scheduling: which version of kube-scheduler's Workload API the
cluster serves, and the job's Workload and PodGroup as the API server keeps them.

The objects are built in :mod:`controller.integrations.gang.native` (pure). They are written
just before a reconcile creates pods (a pod that names a PodGroup which does not exist yet waits
in kube-scheduler until it appears, so the order is for speed, not correctness).

An API server drops a field whose feature gate is off without an error, so what it stored is
read back: from the create's answer, or, for an object found already there that lacks a field
the job asks for, from a server-side dry run of the same object under a generated name. A field
the server drops is reported (:func:`ensure_native_gang` returns the message) and the object
kept; a field it keeps but the stored object lacks (the job gained the option while suspended)
means replacing the object, as a changed ``minCount`` does. What the cluster drops is
remembered in :class:`ServedFields` for the controller's lifetime: gates change only with a
restart of the API server, and of the controller after it (the version is picked at start too).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controller.integrations.gang.native import (
    GANG_GROUP,
    NATIVE_VERSIONS,
    Comparison,
    NativeVersion,
    api_version,
    asked_fields,
    build_gang_workload,
    build_pod_group,
    compare,
    not_kept_message,
    version_of,
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


class GangNotReadyError(Conflict):
    """The job's PodGroup is being replaced (the old one is still terminating): retry later,
    before any pod is created that would join the old group."""

    def __init__(self, message: str) -> None:
        super().__init__(409, "Conflict", message)


def gang_path(
    plural: str, namespace: str, name: str | None = None, *, version: NativeVersion = "v1alpha2"
) -> str:
    """A kube-scheduler gang object (``scheduling.k8s.io`` Workload or PodGroup)."""
    return resource_path(
        group=GANG_GROUP, version=version, plural=plural, namespace=namespace, name=name
    )


def served_version(client: KubeClient) -> NativeVersion | None:
    """The newest version of :data:`~controller.integrations.gang.native.NATIVE_VERSIONS` the
    API server serves Workloads and PodGroups in; None when it serves none."""
    for version in NATIVE_VERSIONS:
        try:
            listing = client.request("GET", f"/apis/{GANG_GROUP}/{version}")
        except (NotFound, ApiError):
            continue
        served = {str(r.get("name")) for r in as_mapping(listing).get("resources", []) or []}
        if {WORKLOADS, POD_GROUPS} <= served:
            return version
    return None


class ServedFields:
    """Which of the optional fields the API server keeps, per resource, as seen so far."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], bool] = {}

    def learn(self, plural: str, wanted: Mapping[str, Any], stored: Mapping[str, Any]) -> None:
        """What a write of ``wanted`` answered (``stored``) tells of the server."""
        missing = set(compare(wanted, stored).missing)
        for name in asked_fields(wanted):
            self._kept[(plural, name)] = name not in missing

    def kept(self, plural: str, field: str) -> bool | None:
        """True: the server keeps it; False: drops it; None: not seen yet."""
        return self._kept.get((plural, field))


def _dry_run(client: KubeClient, path: str, wanted: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the server would store of ``wanted`` (a server-side dry run under a generated
    name, as the real name is taken)."""
    meta = dict(as_mapping(wanted.get("metadata")))
    meta["generateName"] = f"{meta.pop('name', 'gang')}-dry-run-"
    body = {**wanted, "metadata": meta}
    return as_mapping(client.request("POST", path, body=body, query=[("dryRun", "All")]))


@dataclass
class NativeTarget:
    """Where a controller writes its gangs: the API version, picked from what the cluster
    serves on first use (:meth:`resolve`), and what the cluster was seen to keep."""

    version: NativeVersion | None = None
    served: ServedFields = field(default_factory=ServedFields)

    def resolve(self, client: KubeClient) -> NativeVersion:
        """The version to write, asked until the cluster names one; ``v1alpha2`` meanwhile (its
        writes then fail with the API server's own error, and the job is retried)."""
        if self.version is None:
            found = served_version(client)
            if found is None:
                return NATIVE_VERSIONS[-1]
            self.version = found
            log.info("native gangs: writing %s", api_version(found))
        return self.version


def ensure_native_gang(
    client: KubeClient, job: MXJobView, *, labels: Mapping[str, str], target: NativeTarget
) -> list[str]:
    """Make the job's gang Workload, then its PodGroup, exist as
    :mod:`controller.integrations.gang.native` builds them; return what the API server did not
    keep of them (one message, for an Event), nothing when it kept all.

    One that no longer matches the job (or is an earlier job's) is deleted, and
    :class:`GangNotReadyError` holds pod creation back until the next reconcile makes it anew;
    so does one still terminating.
    """
    version, served = target.resolve(client), target.served
    steps = (
        (WORKLOADS, "Workload", build_gang_workload(job, labels=labels, version=version)),
        (POD_GROUPS, "PodGroup", build_pod_group(job, labels=labels, version=version)),
    )
    kinds: list[str] = []
    fields: dict[str, None] = {}
    for plural, kind, wanted in steps:
        path = gang_path(plural, job.namespace, job.name, version=version)
        try:
            existing = as_mapping(client.request("GET", path))
        except NotFound:
            existing = _create(client, job, plural=plural, wanted=wanted, served=served)
        dropped = _dropped_or_replace(client, job, plural=plural, wanted=wanted,
                                      existing=existing, served=served)  # fmt: skip
        if dropped:
            kinds.append(kind)
            fields.update(dict.fromkeys(dropped))
    return [not_kept_message(tuple(kinds), tuple(fields), version)] if kinds else []


def _create(
    client: KubeClient,
    job: MXJobView,
    *,
    plural: str,
    wanted: Mapping[str, Any],
    served: ServedFields,
) -> Mapping[str, Any]:
    """POST ``wanted``; the answer is what the server keeps (``wanted`` itself if another
    writer was first: the next reconcile reads that one)."""
    collection = gang_path(plural, job.namespace, version=version_of(wanted))
    try:
        created = as_mapping(client.request("POST", collection, body=wanted))
    except AlreadyExists:
        return wanted
    log.info("%s/%s: %s created", job.namespace, job.name, plural)
    served.learn(plural, wanted, created)
    return created


def _dropped_or_replace(
    client: KubeClient,
    job: MXJobView,
    *,
    plural: str,
    wanted: Mapping[str, Any],
    existing: Mapping[str, Any],
    served: ServedFields,
) -> tuple[str, ...]:
    """The fields ``existing`` lacks because the server drops them; raises
    :class:`GangNotReadyError` (after deleting it) when it must be replaced."""
    namespace, name, version = job.namespace, job.name, version_of(wanted)
    meta = as_mapping(existing.get("metadata"))
    if meta.get("deletionTimestamp"):
        raise GangNotReadyError(f"{plural} {namespace}/{name} is still being deleted")
    comparison = compare(wanted, existing)
    if not owned_by(existing, job):
        comparison = Comparison(("ownerReferences", *comparison.changed), comparison.missing)
    unknown = [f for f in comparison.missing if served.kept(plural, f) is None]
    if unknown and not comparison.changed:
        collection = gang_path(plural, namespace, version=version)
        served.learn(plural, wanted, _dry_run(client, collection, wanted))
    kept_but_missing = [f for f in comparison.missing if served.kept(plural, f)]
    if not comparison.changed and not kept_but_missing:
        return comparison.missing
    with contextlib.suppress(NotFound, Conflict):
        client.request(
            "DELETE",
            gang_path(plural, namespace, name, version=version),
            body={"preconditions": {"uid": meta.get("uid")}},
        )
    differs = ", ".join([*comparison.changed, *kept_but_missing])
    log.info("%s/%s: %s replaced, it no longer matches the job: %s", namespace, name, plural,
             differs)  # fmt: skip
    raise GangNotReadyError(
        f"{plural} {namespace}/{name} replaced: it no longer matched ({differs})"
    )
