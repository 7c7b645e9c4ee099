"""The points where an integration (Kueue, a gang scheduler, a disruption budget) joins a reconcile.

The reconciler knows integrations only through :class:`Integration`, handed to it when it is
built (controller/manager.py chooses them from the flags), and calls every one of them at each
named point below, in the order it was given them. Kueue's ``jobframework`` plugs a job kind in
the same way (one ``GenericJob`` interface); here the job kind is fixed and the integrations vary.
An integration with nothing to do at a point inherits :class:`NoHooks`' answer.

The points, in the order of one reconcile:

1. :meth:`~Integration.job_gone`: the job is deleted or being deleted; let go of what was made
   for it outside its ownerReferences' reach.
2. :meth:`~Integration.takes_over`: before the job's pods are looked at. True stops this
   reconcile: the integration wrote the job (Kueue suspending or starting it), and its next
   version continues from there.
3. :meth:`~Integration.waits`: before status is computed, what holds the job back as far as
   the integration knows (its ``Pending`` condition, controller/job/status/waiting.py).
   :meth:`~Integration.notices`: after status is written, the Events to add to the job's story.
4. :meth:`~Integration.prepare_pods`: pods are about to be created; make what they need first.
   False holds the creations back (a PodGroup the pods name must exist before them). A write
   that failed goes into ``errors``: the reconcile carries on with the rest and then raises the
   first, so the job is retried with back-off.
5. :meth:`~Integration.decorate_pod`: each pod as built, before it is sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from controller.job.status.outcome import Wait
from controller.job.view import MXJobView, ReplicaView

Obj = dict[str, Any]


@dataclass(frozen=True)
class Notice:
    """An Event an integration adds to the job's story (``Normal`` unless it says otherwise)."""

    reason: str
    message: str
    type: str = "Normal"


class Integration(Protocol):
    """What the reconciler asks of an integration (see the module docstring for the order)."""

    name: str
    """Short and stable (``kueue``, ``gang``, ``budget``): in logs."""

    def job_gone(self, namespace: str, name: str) -> None: ...

    def takes_over(self, job: MXJobView) -> bool: ...

    def waits(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Wait | None: ...

    def notices(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Sequence[Notice]: ...

    def prepare_pods(
        self, job: MXJobView, *, labels: Mapping[str, str], errors: list[Exception]
    ) -> bool: ...

    def decorate_pod(self, job: MXJobView, pod: Obj, *, replica: ReplicaView) -> None: ...


class NoHooks:
    """Every point answered with "nothing to do": an integration overrides the points it uses."""

    name = "none"

    def job_gone(self, namespace: str, name: str) -> None:
        return None

    def takes_over(self, job: MXJobView) -> bool:
        return False

    def waits(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Wait | None:
        return None

    def notices(self, job: MXJobView, pods: Sequence[Mapping[str, Any]]) -> Sequence[Notice]:
        return ()

    def prepare_pods(
        self, job: MXJobView, *, labels: Mapping[str, str], errors: list[Exception]
    ) -> bool:
        return True

    def decorate_pod(self, job: MXJobView, pod: Obj, *, replica: ReplicaView) -> None:
        return None
