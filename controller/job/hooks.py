"""The points where an integration (Kueue, a gang scheduler, a disruption budget) joins a reconcile.

The reconciler knows integrations only through :class:`Integration`, handed to it when it is
built (controller/integrations/chosen.py chooses them from the flags), and calls every one of
them at each named point below, in the order it was given them. Kueue's ``jobframework`` plugs a
job kind in the same way (one ``GenericJob`` interface); here the job kind is fixed and the
integrations vary. An integration with nothing to do at a point inherits :class:`NoHooks`'
answer.

Before any reconcile, once, when the controller is built:

0. :meth:`~Integration.declaration`: what the integration watches (its informers, and how an
   object maps back to its job) and the RBAC rules it needs (controller/job/declaration.py).
   The manager builds those informers the same way for every integration
   (controller/integrations/registration.py) and hands their stores back through
   :meth:`~Integration.bind`.

The points, in the order of one reconcile:

1. :meth:`~Integration.job_gone`: the job is deleted or being deleted; let go of what was made
   for it outside its ownerReferences' reach. Its uid comes along, or None when the controller
   never cached the job (controller/job/reconciler.py says when).
2. :meth:`~Integration.takes_over`: before the job's pods are looked at. True stops this
   reconcile: the integration wrote the job (Kueue suspending or starting it), and its next
   version continues from there.
3. :meth:`~Integration.waits`: before status is computed, what holds the job back as far as
   the integration knows (its ``Pending`` condition, controller/job/status/waiting.py).
   :meth:`~Integration.notices`: after status is written, the Events to add to the job's story.
   Both are handed the job's pods as the reconcile read them, once
   (:class:`~controller.job.pods.JobPods`, each with its view): an integration asks the views,
   and never parses a pod itself.
4. :meth:`~Integration.prepare_pods`: pods are about to be created; make what they need first.
   The answer is a :class:`Preparation`: not ready holds the creations back (a PodGroup the pods
   name must exist before them), and the writes that failed are carried in it: the reconcile
   goes on with the rest and then raises the first, so the job is retried with back-off. The
   integrations' answers are :func:`combined` into one.
5. :meth:`~Integration.decorate_pod`: each pod as built, before it is sent.
6. :meth:`~Integration.refresh`: instead of 4 and 5, when the reconcile creates no pod of a job
   that runs (not finished, not suspended): bring what was made for the job's pods up to date
   with what changed outside the job (the CA of the controller's progress endpoint, renewed
   while the pods run). The writes that failed are returned, and join the reconcile's errors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from controller.job.declaration import NOTHING, Declaration, Stores
from controller.job.pods import JobPods
from controller.job.status.outcome import Wait
from controller.job.view import MXJobView, ReplicaView

Obj = dict[str, Any]


@dataclass(frozen=True)
class Notice:
    """An Event an integration adds to the job's story (``Normal`` unless it says otherwise)."""

    reason: str
    message: str
    type: str = "Normal"


@dataclass(frozen=True)
class Preparation:
    """What an integration made ready before the job's pods are created."""

    ready: bool = True
    """False: no pod of the job is created in this reconcile."""
    errors: tuple[Exception, ...] = ()
    """The writes that failed; whether they hold the pods back is :attr:`ready`'s to say."""


READY: Final = Preparation()
"""Nothing to make, or everything made."""


def combined(preparations: Iterable[Preparation]) -> Preparation:
    """Every integration's answer as one: ready only when each is, with every error in the
    order the integrations were called (the reconcile raises the first)."""
    ready, errors = True, list[Exception]()
    for preparation in preparations:
        ready = ready and preparation.ready
        errors.extend(preparation.errors)
    return Preparation(ready, tuple(errors))


class Integration(Protocol):
    """What the reconciler asks of an integration (see the module docstring for the order)."""

    name: str
    """Short and stable (``kueue``, ``gang``, ``budget``): in logs."""

    def declaration(self) -> Declaration:
        """Called once, when the controller is built, before :meth:`bind` (it may ask the API
        server: the gang's native API version)."""
        ...

    def bind(self, stores: Stores) -> None:
        """The store of every declared watch, filled by the manager's informer (empty for an
        optional resource not served); called once, before the first reconcile."""
        ...

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None: ...

    def takes_over(self, job: MXJobView) -> bool: ...

    def waits(self, job: MXJobView, pods: JobPods) -> Wait | None: ...

    def notices(self, job: MXJobView, pods: JobPods) -> Sequence[Notice]: ...

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation: ...

    def decorate_pod(self, job: MXJobView, pod: Obj, *, replica: ReplicaView) -> None: ...

    def refresh(self, job: MXJobView) -> Sequence[Exception]: ...


class NoHooks:
    """Every point answered with "nothing to do": an integration overrides the points it uses."""

    name = "none"

    def declaration(self) -> Declaration:
        return NOTHING

    def bind(self, stores: Stores) -> None:
        return None

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        return None

    def takes_over(self, job: MXJobView) -> bool:
        return False

    def waits(self, job: MXJobView, pods: JobPods) -> Wait | None:
        return None

    def notices(self, job: MXJobView, pods: JobPods) -> Sequence[Notice]:
        return ()

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation:
        return READY

    def decorate_pod(self, job: MXJobView, pod: Obj, *, replica: ReplicaView) -> None:
        return None

    def refresh(self, job: MXJobView) -> Sequence[Exception]:
        return ()
