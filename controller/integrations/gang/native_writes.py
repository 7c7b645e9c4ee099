"""The API side of native gang scheduling: which version of kube-scheduler's Workload API the
cluster serves, and the job's Workload and PodGroup as children of the job.

The objects are built in :mod:`controller.integrations.gang.native` (pure) and made to stand
through the shared path (:mod:`controller.integrations.children.ensure`: read from their
caches, created when missing, a foreign one of the job's name left alone while the pods wait),
just before a reconcile creates pods (a pod that names a PodGroup which does not exist yet waits
in kube-scheduler until it appears, so the order is for speed, not correctness). Their spec is
immutable: one that no longer matches the job is replaced (:class:`~controller.integrations.
children.kind.Replace`), never updated.

An API server drops a field whose feature gate is off without an error, so what it stored is
read back: from the create's answer, or, for an object found already there that lacks a field
the job asks for, from a server-side dry run of the same object under a generated name. A field
the server drops is reported (:func:`ensure_native_gang` returns the message) and the object
kept; a field it keeps but the stored object lacks (the job gained the option while suspended)
means replacing the object, as a changed ``minCount`` does. What the cluster drops is
remembered in :class:`ServedFields` for the controller's lifetime: gates change only with a
restart of the API server, and of the controller after it (the version, and the caches, are
picked at start too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controller.integrations.children.ensure import CREATED, OwnedChildren
from controller.integrations.children.kind import ChildKind, Replace, Revise
from controller.integrations.gang.native import (
    GANG_GROUP,
    NATIVE_VERSIONS,
    NativeVersion,
    api_version,
    asked_fields,
    build_gang_workload,
    build_pod_group,
    compare,
    not_kept_message,
)
from controller.job.view import MXJobView
from controller.runtime.client import ApiError, KubeClient, resource_path
from shared.spec import as_mapping

log = logging.getLogger(__name__)

WORKLOADS: Final = "workloads"
POD_GROUPS: Final = "podgroups"

Owned = Callable[[ChildKind], OwnedChildren]
"""The shared path of each child kind (the gang integration's, over its caches)."""


def native_kinds(version: NativeVersion) -> tuple[ChildKind, ChildKind]:
    """The job's Workload and PodGroup in ``version``: its pods need both."""

    def kind(name: str, plural: str) -> ChildKind:
        return ChildKind(kind=name, group=GANG_GROUP, version=version, plural=plural,
                         pods_need_it=True)  # fmt: skip

    return kind("Workload", WORKLOADS), kind("PodGroup", POD_GROUPS)


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
        except ApiError:
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
                return self.current()
            self.version = found
            log.info("native gangs: writing %s", api_version(found))
        return self.version

    def current(self) -> NativeVersion:
        """The version known now, without asking (``v1alpha2`` until one is known)."""
        return self.version or NATIVE_VERSIONS[-1]


def reviser(client: KubeClient, kind: ChildKind, served: ServedFields) -> Revise:
    """How a stored Workload or PodGroup stands to the wanted one: kept, or replaced when a
    field differs or one the server keeps is missing. A missing field the server was not yet
    seen to keep or drop is learned first, by one dry run."""

    def revise(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> Replace | None:
        comparison = compare(wanted, stored)
        unknown = [f for f in comparison.missing if served.kept(kind.plural, f) is None]
        if unknown and not comparison.changed:
            namespace = str(as_mapping(wanted.get("metadata")).get("namespace"))
            served.learn(kind.plural, wanted, _dry_run(client, kind.path(namespace), wanted))
        kept_but_missing = [f for f in comparison.missing if served.kept(kind.plural, f)]
        if not comparison.changed and not kept_but_missing:
            return None
        return Replace(", ".join([*comparison.changed, *kept_but_missing]))

    return revise


def ensure_native_gang(
    owned: Owned,
    client: KubeClient,
    job: MXJobView,
    *,
    labels: Mapping[str, str],
    target: NativeTarget,
) -> tuple[bool, list[str]]:
    """Make the job's gang Workload, then its PodGroup, stand as
    :mod:`controller.integrations.gang.native` builds them. Returns whether they stand (False:
    a foreign object holds a name, and the pods wait) and what the API server did not keep of
    them (one message, for an Event; nothing when it kept all).

    One that no longer matches the job is deleted, and
    :class:`~controller.integrations.children.ensure.ChildNotReadyError` holds pod creation
    back until the next reconcile makes it anew; so does one still terminating.
    """
    version, served = target.resolve(client), target.served
    workloads, pod_groups = native_kinds(version)
    steps = (
        (workloads, build_gang_workload(job, labels=labels, version=version)),
        (pod_groups, build_pod_group(job, labels=labels, version=version)),
    )
    kinds: list[str] = []
    fields: dict[str, None] = {}
    for kind, wanted in steps:
        ensured = owned(kind).ensure(job, wanted, revise=reviser(client, kind, served))
        if ensured.foreign:
            return False, []
        if ensured.wrote == CREATED:
            served.learn(kind.plural, wanted, ensured.obj)
        dropped = compare(wanted, ensured.obj).missing
        if dropped:
            kinds.append(kind.kind)
            fields.update(dict.fromkeys(dropped))
    return True, [not_kept_message(tuple(kinds), tuple(fields), version)] if kinds else []
