"""The API side of gang scheduling: which gang scheduler the cluster serves, the kinds of
objects each one's gang is made of and the RBAC they need, and the job's Volcano or
scheduler-plugins PodGroup.

Those PodGroups are built in :mod:`controller.integrations.gang.podgroups` (pure), written as
kubeflow training-operator v1.8.1 writes them, through the shared path of a job's children
(:mod:`controller.integrations.children.ensure`: read from the PodGroups' cache, created when
missing, the spec updated in place when it differs, a foreign one of the job's name left alone
while the pods wait); kube-scheduler's own Workload and PodGroup (``native``) in
:mod:`controller.integrations.gang.native_writes`. They are written only when a reconcile is
about to create pods, just before it does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from controller.integrations.children.ensure import ChildNotReadyError, OwnedChildren
from controller.integrations.children.kind import ChildKind
from controller.integrations.gang.native import NativeVersion
from controller.integrations.gang.native_writes import (
    NativeTarget,
    Owned,
    ensure_native_gang,
    native_kinds,
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
from controller.job.declaration import Rule
from controller.job.view import MXJobView
from controller.runtime.client import KubeClient, NotFound
from shared.spec import as_mapping

POD_GROUPS: Final = "podgroups"

CRD_POD_GROUPS: Final[Mapping[GangScheduler, ChildKind]] = {
    "volcano": ChildKind(kind="PodGroup", group=VOLCANO_GROUP, version=VOLCANO_VERSION,
                         plural=POD_GROUPS, pods_need_it=True),
    "scheduler-plugins": ChildKind(kind="PodGroup", group=PLUGINS_GROUP, version=PLUGINS_VERSION,
                                   plural=POD_GROUPS, pods_need_it=True),
}  # fmt: skip
"""The PodGroup of each project's own CRD: a job's pods join the group of their job's name."""

PRIORITY_CLASSES: Final = Rule(
    api_groups=("scheduling.k8s.io",), resources=("priorityclasses",), verbs=("get",)
)
"""A CRD PodGroup counts its pods' resources in their PriorityClasses' order
(:func:`priority_values`)."""

__all__ = [
    "ChildNotReadyError",
    "detect",
    "ensure_crd_pod_group",
    "ensure_gang",
    "gang_kinds",
    "gang_rules",
]


def detect(client: KubeClient) -> GangScheduler:
    """``native`` when the API server serves Workloads and PodGroups in a version this controller
    writes (:data:`~controller.integrations.gang.native.NATIVE_VERSIONS`), ``none`` otherwise."""
    return "none" if served_version(client) is None else "native"


def gang_kinds(scheduler: GangScheduler, version: NativeVersion) -> tuple[ChildKind, ...]:
    """The kinds of objects a job's gang is made of under ``scheduler`` (``version``: the native
    API's), in the order they are made; none for ``none``."""
    if scheduler == "native":
        return native_kinds(version)
    kind = CRD_POD_GROUPS.get(scheduler)
    return (kind,) if kind is not None else ()


def gang_rules(scheduler: GangScheduler, kinds: tuple[ChildKind, ...]) -> tuple[Rule, ...]:
    """The RBAC a job's gang of ``kinds`` needs under ``scheduler``: kube-scheduler's objects
    are immutable, so replaced (``delete``); a CRD PodGroup's spec is updated in place, and its
    pods' PriorityClasses read."""
    if scheduler == "native":
        return tuple(kind.rule("delete") for kind in kinds)
    if not kinds:
        return ()
    return (*(kind.rule("update") for kind in kinds), PRIORITY_CLASSES)


def ensure_gang(
    owned: Owned,
    client: KubeClient,
    job: MXJobView,
    *,
    labels: Mapping[str, str],
    scheduler: GangScheduler,
    native: NativeTarget | None = None,
) -> tuple[bool, list[str]]:
    """Make the job's gang objects stand before its pods are created; nothing for ``none``.
    Returns whether they stand (False: a foreign object holds a name the gang needs) and what the
    API server did not keep of them (``native`` only: Event messages)."""
    crd = CRD_POD_GROUPS.get(scheduler)
    if crd is not None:
        return ensure_crd_pod_group(owned(crd), client, job, scheduler=scheduler), []
    if scheduler == "native":
        target = native or NativeTarget()
        return ensure_native_gang(owned, client, job, labels=labels, target=target)
    return True, []


def crd_pod_group_path(scheduler: GangScheduler, namespace: str, name: str | None = None) -> str:
    return CRD_POD_GROUPS[scheduler].path(namespace, name)


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


def ensure_crd_pod_group(
    pod_groups: OwnedChildren, client: KubeClient, job: MXJobView, *, scheduler: GangScheduler
) -> bool:
    """Create the job's Volcano or scheduler-plugins PodGroup, or update its spec to the job's
    (training-operator's ``SyncPodGroup``); False when a foreign one holds the name. Then, for
    Volcano, hold pod creation back (:class:`ChildNotReadyError`, retried with back-off, and
    sooner when the PodGroups' cache sees it change) until Volcano admitted the group."""
    priorities = priority_values(client, job)

    def revise(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> dict[str, Any] | None:
        return crd_pod_group_update(stored, job, scheduler, priorities=priorities)

    wanted = build_crd_pod_group(job, scheduler, priorities=priorities)
    ensured = pod_groups.ensure(job, wanted, revise=revise)
    if ensured.foreign:
        return False
    if delays_pods(ensured.obj, scheduler):
        phase = as_mapping(ensured.obj.get("status")).get("phase") or "unset"
        raise ChildNotReadyError(
            f"podgroups {job.key}: waiting for Volcano to admit the group (phase {phase})"
        )
    return True
