"""Gang scheduling as an :class:`~controller.job.hooks.Integration` (controller/job/hooks.py).

Before a job's pods are created its gang objects exist (a Volcano PodGroup must even be admitted
first: :mod:`controller.integrations.gang.podgroup_writes`), each pod is joined to the gang as it
is built, and a job whose pods all exist but wait for their gang to fit is told so in an Event.

The scheduler is resolved when the controller starts (``--gang-scheduler=auto`` asks the API
server: :func:`~controller.integrations.gang.podgroup_writes.detect`), after the reconciler and
its integrations are built, so the manager sets :attr:`GangIntegration.scheduler` then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.integrations.gang.podgroup_writes import ensure_gang
from controller.integrations.gang.podgroups import (
    GANG_WAITING,
    GangScheduler,
    gang_waiting,
    join_pod,
)
from controller.job.hooks import NoHooks, Notice, Obj
from controller.job.view import MXJobView, ReplicaView
from controller.runtime.client import KubeClient


class GangIntegration(NoHooks):
    """The job's pods are scheduled as one gang by :attr:`scheduler` (``none``: one by one)."""

    name = "gang"

    def __init__(self, client: KubeClient, *, scheduler: GangScheduler) -> None:
        self.client = client
        self.scheduler: GangScheduler = scheduler
        """The gang scheduler pods are written for; the manager sets it once resolved."""

    def prepare_pods(
        self, job: MXJobView, *, labels: Mapping[str, str], errors: list[Exception]
    ) -> bool:
        """The gang the pods join exists first; without it (a write failed, the old group is
        still going, Volcano has not admitted it) no pod is created: a pod outside its gang
        would be scheduled alone."""
        if self.scheduler == "none":
            return True
        try:
            ensure_gang(self.client, job, labels=labels, scheduler=self.scheduler)
        except Exception as error:
            errors.append(error)
            return False
        return True

    def decorate_pod(self, job: MXJobView, pod: Obj, *, replica: ReplicaView) -> None:
        join_pod(pod, job, self.scheduler, replica_type=replica.lower)

    def notices(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Sequence[Notice]:
        """``GangWaiting`` while every pod exists but too few are placed; a finished or
        suspended job waits for nothing."""
        if job.finished or job.suspended:
            return ()
        waiting = gang_waiting(job, pods, self.scheduler)
        return (Notice(GANG_WAITING, waiting),) if waiting else ()
