"""Gang scheduling as an :class:`~controller.job.hooks.Integration` (controller/job/hooks.py).

Before a job's pods are created its gang objects stand (a Volcano PodGroup must even be admitted
first: :mod:`controller.integrations.gang.podgroup_writes`), each pod is joined to the gang as it
is built, and a job whose pods all exist but wait for their gang to fit is told so in an Event.

The scheduler is resolved before the integrations are built (``--gang-scheduler=auto`` asks the
API server: :func:`~controller.integrations.gang.podgroup_writes.detect`, called by
controller/integrations/chosen.py), and given as it is. The gang declares the caches of the
kinds it is made of under it and the RBAC it needs (:meth:`GangIntegration.declaration`); for
``native``, the version of the API to write is asked then, or on first use
(:class:`~controller.integrations.gang.native_writes.NativeTarget`).

A foreign object of the name of the job's gang (a PodGroup, a Workload) is left alone, and the
job's pods wait for it to go: a pod joins the group of its name, whoever made it. The job's
``Pending`` condition says so, and a ``ForeignObjectExists`` Warning once
(:mod:`controller.integrations.children.foreign`).

A field of the job's PodGroup the API server did not keep (its feature gate is off) is said once
per job, in a ``GangFieldNotKept`` Warning on the job and a log line, at the reconcile after the
one that wrote it (Events are the notices' part of a reconcile, which runs before pods are made).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Final

from controller.integrations.children.ensure import OwnedChildren
from controller.integrations.children.kind import ChildKind
from controller.integrations.children.stores import ChildStores
from controller.integrations.gang.native_writes import NativeTarget
from controller.integrations.gang.podgroup_writes import ensure_gang, gang_kinds, gang_rules
from controller.integrations.gang.podgroups import (
    GANG_WAITING,
    GangScheduler,
    gang_waiting,
    join_pod,
)
from controller.job.declaration import Declaration, Stores
from controller.job.hooks import READY, NoHooks, Notice, Obj, Preparation
from controller.job.pods import JobPods
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView, ReplicaView
from controller.runtime.client import KubeClient

log = logging.getLogger(__name__)

GANG_FIELD_NOT_KEPT: Final = "GangFieldNotKept"
"""Event reason: the API server dropped a field of the job's Workload or PodGroup."""


class GangIntegration(NoHooks):
    """The job's pods are scheduled as one gang by :attr:`scheduler` (``none``: one by one)."""

    name = "gang"

    def __init__(self, client: KubeClient, *, scheduler: GangScheduler) -> None:
        self.client = client
        self.scheduler: Final[GangScheduler] = scheduler
        """The gang scheduler pods are written for, as resolved at start-up."""
        self.native = NativeTarget()
        self.children = ChildStores(client)
        self._told: dict[str, set[str]] = {}
        """Per job (``namespace/name``): the messages already given, so each is said once."""
        self._to_tell: dict[str, list[str]] = {}
        """Per job: messages for the next reconcile's notices."""

    def declaration(self) -> Declaration:
        """The caches of the kinds the gang is made of under the scheduler (``native``: in the
        version the cluster serves, asked now), and the RBAC to write them."""
        if self.scheduler == "native":
            self.native.resolve(self.client)
        kinds = self._kinds_now()
        return Declaration(
            watches=tuple(kind.watch for kind in kinds), rules=gang_rules(self.scheduler, kinds)
        )

    def bind(self, stores: Stores) -> None:
        self.children.bind(stores)

    def owned(self, kind: ChildKind) -> OwnedChildren:
        """The shared path of one of the gang's kinds, over its cache."""
        return self.children.owned(kind)

    def _kinds_now(self) -> tuple[ChildKind, ...]:
        return gang_kinds(self.scheduler, self.native.current())

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation:
        """The gang the pods join stands first; without it (a write failed, the old group is
        still going, Volcano has not admitted it, a foreign object holds its name) no pod is
        created: a pod outside its gang would be scheduled alone."""
        if self.scheduler == "none":
            return READY
        try:
            stands, messages = ensure_gang(
                self.owned, self.client, job, labels=labels, scheduler=self.scheduler,
                native=self.native,
            )  # fmt: skip
        except Exception as error:
            return Preparation(ready=False, errors=(error,))
        for message in messages:
            told = self._told.setdefault(job.key, set())
            if message not in told:
                told.add(message)
                self._to_tell.setdefault(job.key, []).append(message)
                log.warning("%s/%s: %s", job.namespace, job.name, message)
        return Preparation(ready=stands)

    def decorate_pod(self, job: MXJobView, pod: Obj, *, replica: ReplicaView) -> None:
        join_pod(pod, job, self.scheduler, replica_type=replica.lower)

    def notices(self, job: MXJobView, pods: JobPods) -> Sequence[Notice]:
        """``GangFieldNotKept`` once per field the API server dropped; ``ForeignObjectExists``
        once per foreign object of the gang's name; ``GangWaiting`` while every pod exists but
        too few are placed (a finished or suspended job waits for nothing)."""
        found = tuple(
            Notice(GANG_FIELD_NOT_KEPT, message, type="Warning")
            for message in self._to_tell.pop(job.key, [])
        )
        foreign = (self.owned(kind).notice(job) for kind in self._kinds_now())
        found = (*found, *(notice for notice in foreign if notice is not None))
        if job.finished or job.suspended:
            return found
        waiting = gang_waiting(job, pods, self.scheduler)
        return (*found, Notice(GANG_WAITING, waiting)) if waiting else found

    def waits(self, job: MXJobView, pods: JobPods) -> Wait | None:
        """The job's ``Pending`` condition while a foreign object holds its gang's name, or
        while its pods wait for their gang to fit."""
        if job.finished or job.suspended:
            return None
        for kind in self._kinds_now():
            foreign = self.owned(kind).wait(job)
            if foreign is not None:
                return foreign
        waiting = gang_waiting(job, pods, self.scheduler)
        return Wait(GANG_WAITING, waiting) if waiting else None

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        self._told.pop(f"{namespace}/{name}", None)
        self._to_tell.pop(f"{namespace}/{name}", None)
        for owned in self.children.owned_so_far():
            owned.forget(namespace, name)
