"""The state of one status computation, carried through the phases in their order.

As kube's Job controller carries one ``syncJobCtx`` through its steps, :func:`compute_status
<controller.job.status.compute_status>` carries one :class:`Sync`: each phase reads what the
earlier ones found and either ends the computation with an :class:`Outcome` or adds to the state
and lets the next one run. This module builds the state from the persisted status
(:func:`start`) and holds the few helpers every phase shares.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.job.desired import Slot, desired_slots
from controller.job.observed import PodView
from controller.job.recovery import (
    persisted_attempt,
    persisted_disruptions,
    persisted_history,
    persisted_restart_count,
    split_attempts,
)
from controller.job.status.in_place import IN_PLACE_RESTARTS, count_in_place, persisted_record
from controller.job.status.outcome import EventSpec, Outcome, Wait
from controller.job.view import MXJobView
from shared.apitime import format_time
from shared.conditions import ConditionType, Reason, get_condition, set_condition
from shared.constants import RestartPolicy, RestartScope


@dataclass
class Sync:
    """One computation's state (see the module docstring)."""

    job: MXJobView
    views: Sequence[PodView]
    """The pods of the running attempt (controller/job/recovery.py)."""
    now: datetime.datetime
    pod_start_timeout: float
    """Seconds a pod may be unable to start before the job fails; 0: never."""
    stamp: str
    """``now`` as the API writes a time."""
    status: dict[str, Any]
    """The new status being built (the old one without ``lastReconcileTime``)."""
    conditions: list[dict[str, Any]]
    restarts_so_far: int
    """``restartCount`` as persisted, with the in-place restarts found now
    (controller/job/status/in_place.py)."""
    persisted_restarts: int
    """``restartCount`` as persisted: how much it grew is ``Outcome.new_restarts``."""
    created: bool
    events: list[EventSpec] = field(default_factory=list)
    requeue_after: float | None = None
    """Seconds until the deadline (or a pod's start timeout) is due."""
    slots: list[Slot] = field(default_factory=list)
    by_slot: dict[str, PodView | None] = field(default_factory=dict)
    """Each desired slot's pod, if it has one."""
    pending: list[PodView] = field(default_factory=list)
    """Failed pods to recreate."""
    needed: int = 0
    """The new ``restartCount``."""
    limit: int = 0
    """``backoffLimit``."""
    attempt: int = 0
    """``status.attempt`` as persisted: the attempt whose pods count."""
    stale: list[PodView] = field(default_factory=list)
    """Pods of an earlier attempt (controller/job/recovery.py)."""
    scopes: dict[str, RestartScope] = field(default_factory=dict)
    """Each replica type's restart scope."""
    stalled: bool = False
    """The job reported no progress for its ``progressDeadlineSeconds``: it restarts as a
    whole (controller/job/status/progress_deadline.py)."""
    job_causes: list[PodView] = field(default_factory=list)
    """Retryable ends of ``Job``-scoped replicas in this attempt: the job restarts as a whole."""
    disruptions: int = 0
    """``status.disruptionRestarts``, with the restarts found now."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """``status.restarts``, with the restarts found now."""
    held: Wait | None = None
    """What an integration says holds the job back (Kueue's Workload, the gang), if anything."""

    def condition(self, ctype: ConditionType, *, status: bool, reason: str, message: str) -> None:
        """Set a condition now (only when something changes, see :func:`set_if_changed`)."""
        self.conditions = set_if_changed(
            self.conditions, ctype, status=status, reason=reason, message=message, now=self.stamp
        )

    def record_restarts(self) -> None:
        """Write the attempt, the disruptions and the history, once there is anything to say
        (a job that never restarted keeps a status without them)."""
        if self.attempt > 0:
            self.status["attempt"] = self.attempt
        if self.disruptions > 0:
            self.status["disruptionRestarts"] = self.disruptions
        if self.history:
            self.status["restarts"] = self.history


Phase = Callable[[Sync], Outcome | None]
"""One step of the computation: an :class:`Outcome` ends it, None lets the next step run."""


def only(step: Callable[[Sync], None]) -> Phase:
    """A phase that only adds to the state and never decides the outcome."""

    def phase(sync: Sync) -> Outcome | None:
        step(sync)
        return None

    phase.__name__ = step.__name__
    return phase


def start(
    job: MXJobView,
    views: Sequence[PodView],
    *,
    now: datetime.datetime,
    pod_start_timeout: float,
    held: Wait | None = None,
) -> Sync:
    """The persisted status read back, the in-place restarts found since counted, and the
    Created condition set on a job seen first."""
    old_status = job.status
    conditions = [dict(c) for c in job.conditions]
    attempt = persisted_attempt(old_status)
    current, stale = split_attempts(views, attempt)
    persisted = persisted_restart_count(old_status)
    in_place = count_in_place(current, persisted_record(old_status))
    status = {k: v for k, v in old_status.items() if k != "lastReconcileTime"}
    status.pop(IN_PLACE_RESTARTS, None)
    if in_place.record or _restarts_in_place(job):
        status[IN_PLACE_RESTARTS] = in_place.record
    sync = Sync(
        job=job,
        views=current,
        now=now,
        pod_start_timeout=pod_start_timeout,
        stamp=format_time(now),
        status=status,
        conditions=conditions,
        restarts_so_far=persisted + in_place.new_restarts,
        persisted_restarts=persisted,
        created=not conditions,
        attempt=attempt,
        stale=stale,
        scopes={replica.type.value: replica.restart_scope for replica in job.replicas},
        disruptions=persisted_disruptions(old_status),
        history=persisted_history(old_status),
        held=held,
    )
    if sync.created or get_condition(conditions, ConditionType.CREATED) is None:
        sync.condition(
            ConditionType.CREATED,
            status=True,
            reason=Reason.CREATED,
            message=f"MXJob {job.name} is created.",
        )
    return sync


def _restarts_in_place(job: MXJobView) -> bool:
    """Whether a replica type's pods restart their container in place (the kubelet's
    ``OnFailure`` or ``Always``), so the job keeps its in-place record even empty."""
    return any(
        replica.restart_policy in (RestartPolicy.ON_FAILURE, RestartPolicy.ALWAYS)
        for replica in job.replicas
    )


def match_slots(sync: Sync) -> None:
    """Each desired slot's pod: the pod of its name, if it runs that slot's replica type.

    The only place a reconcile computes the slots: the outcome hands them on to the plan
    (:attr:`~controller.job.status.outcome.Outcome.slots`). Computed here rather than when the
    state is built, so a finished, invalid or suspended job, decided before this phase, never
    pays for them."""
    sync.slots = desired_slots(sync.job)
    views_by_name = {v.name: v for v in sync.views}
    for slot in sync.slots:
        view = views_by_name.get(slot.name)
        sync.by_slot[slot.key] = (
            view if view is not None and view.replica_type is slot.replica_type else None
        )


def set_if_changed(
    conditions: list[dict[str, Any]],
    ctype: ConditionType,
    *,
    status: bool,
    reason: str,
    message: str,
    now: str,
) -> list[dict[str, Any]]:
    """``set_condition`` only when something changes, so that an unchanged job writes nothing
    (a condition never set is not written False either)."""
    existing = get_condition(conditions, ctype)
    wanted = "True" if status else "False"
    if (
        existing is not None
        and existing.get("status") == wanted
        and existing.get("reason") == reason
        and existing.get("message") == message
    ):
        return conditions
    if existing is None and not status:
        return conditions
    return set_condition(
        conditions, type=ctype, status=status, reason=reason, message=message, now=now
    )


def sooner(first: float | None, second: float | None) -> float | None:
    """The earlier of two optional timers (None: no timer)."""
    found = [x for x in (first, second) if x is not None]
    return min(found) if found else None
