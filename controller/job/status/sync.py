"""The state of one status computation: what it was given, the status it builds, what it found.

As kube's Job controller carries one ``syncJobCtx`` through its steps, :func:`compute_status
<controller.job.status.compute_status>` carries one :class:`Sync`. The data steps fill in what
they find (the slots and their pods, the restarts, the stall); the rules read it and decide; the
status is the typed :class:`~controller.job.status.value.JobStatus`, serialised once at the end.
This module builds the state from the persisted status (:func:`start`) and holds the few helpers
every step shares.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field

from controller.job.desired import Slot, desired_slots
from controller.job.observed import PodView
from controller.job.recovery import persisted_attempt, persisted_restart_count, split_attempts
from controller.job.status.in_place import count_in_place, persisted_record
from controller.job.status.outcome import EventSpec, Wait
from controller.job.status.value import JobStatus
from controller.job.view import MXJobView
from shared.apitime import format_time
from shared.conditions import ConditionType, Reason, get_condition
from shared.constants import RestartPolicy, RestartScope


@dataclass
class Sync:
    """One computation's state (see the module docstring)."""

    # -- given ------------------------------------------------------------------------------------
    job: MXJobView
    views: Sequence[PodView]
    """The pods of the running attempt (controller/job/recovery.py)."""
    now: datetime.datetime
    stamp: str
    """``now`` as the API writes a time."""
    pod_start_timeout: float
    """Seconds a pod may be unable to start before the job fails; 0: never."""
    held: Wait | None
    """What an integration says holds the job back (Kueue's Workload, the gang), if anything."""
    persisted_restarts: int
    """``restartCount`` as persisted: how much it grew is ``Outcome.new_restarts``."""
    restarts_so_far: int
    """``restartCount`` as persisted, with the in-place restarts found now
    (controller/job/status/in_place.py)."""
    created: bool
    """The job is seen for the first time: the Created condition is set now."""
    # -- built ------------------------------------------------------------------------------------
    status: JobStatus
    events: list[EventSpec] = field(default_factory=list)
    requeue_after: float | None = None
    """Seconds until the deadline (or a pod's start timeout) is due."""
    stale: list[PodView] = field(default_factory=list)
    """Pods of an earlier attempt (controller/job/recovery.py)."""
    # -- found by the data steps, in their order --------------------------------------------------
    deadline_left: float | None = None
    """Seconds ``activeDeadlineSeconds`` leaves (controller/job/status/deadline.py)."""
    slots: list[Slot] = field(default_factory=list)
    by_slot: dict[str, PodView | None] = field(default_factory=dict)
    """Each desired slot's pod, if it has one."""
    job_causes: list[PodView] = field(default_factory=list)
    """Retryable ends of ``Job``-scoped replicas in this attempt: the job restarts as a whole."""
    permanent: list[PodView] = field(default_factory=list)
    """Permanent failures that are the program's verdict, not a restart's consequence."""
    stalled: bool = False
    """The job reported no progress for its ``progressDeadlineSeconds``: it restarts as a
    whole (controller/job/status/progress_deadline.py)."""
    pending: list[PodView] = field(default_factory=list)
    """Failed pods to recreate."""
    found: list[PodView] = field(default_factory=list)
    """Ends that restart something now and were not counted before."""
    needed: int = 0
    """The new ``restartCount``, with the restarts found now."""

    def condition(self, ctype: ConditionType, *, status: bool, reason: str, message: str) -> bool:
        """Set a condition now, when something about it changes (JobStatus.update_condition)."""
        return self.status.update_condition(
            ctype, status=status, reason=reason, message=message, now=self.stamp
        )

    @property
    def scopes(self) -> dict[str, RestartScope]:
        """Each replica type's restart scope."""
        return {replica.type.value: replica.restart_scope for replica in self.job.replicas}


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
    status = JobStatus.read(old_status)
    current, stale = split_attempts(views, persisted_attempt(old_status))
    persisted = persisted_restart_count(old_status)
    in_place = count_in_place(current, persisted_record(old_status))
    if in_place.record or _restarts_in_place(job):
        status.in_place = in_place.record
    sync = Sync(
        job=job,
        views=current,
        now=now,
        stamp=format_time(now),
        pod_start_timeout=pod_start_timeout,
        held=held,
        persisted_restarts=persisted,
        restarts_so_far=persisted + in_place.new_restarts,
        created=not status.conditions,
        status=status,
        stale=stale,
    )
    if sync.created or get_condition(status.conditions, ConditionType.CREATED) is None:
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
    (:attr:`~controller.job.status.outcome.Outcome.slots`). A data step of the running job only,
    so a finished, invalid or suspended job, decided before it, never pays for them."""
    sync.slots = desired_slots(sync.job)
    views_by_name = {v.name: v for v in sync.views}
    for slot in sync.slots:
        view = views_by_name.get(slot.name)
        sync.by_slot[slot.key] = (
            view if view is not None and view.replica_type is slot.replica_type else None
        )


def sooner(first: float | None, second: float | None) -> float | None:
    """The earlier of two optional timers (None: no timer)."""
    found = [x for x in (first, second) if x is not None]
    return min(found) if found else None
