"""What a status computation hands back: the new status, the decisions, the Events (pure data).

Reconcile carries an :class:`Outcome` out and never decides anything itself, so every field says
what to do and why; the reasons of the Events status records are named here, beside the
condition reasons of :class:`shared.conditions.Reason`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from controller.job.desired import Slot
from controller.job.observed import PodView

FAILED_VALIDATION_REASON: Final = "MXJobFailedValidation"
"""Failed reason of a job stored without passing the validating webhook and found invalid."""
EXITED_WITH_CODE: Final = "ExitedWithCode"
"""Event reason: how a replica's pod ended, and what the controller does about it."""
POD_START_TIMEOUT: Final = "PodStartTimeout"
"""The Failed reason of a job whose pod could not start for its pod start timeout."""
REPLICAS_ENDED: Final = "ReplicasEnded"
"""Event reason: pods of a finished job that ended by themselves within their grace period."""

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class EventSpec:
    """An Event to record on the MXJob."""

    type: EventType
    reason: str
    message: str


@dataclass(frozen=True)
class Wait:
    """What holds a job back before it runs (controller/job/status/waiting.py): a reason in
    CamelCase (Kueue's own, ``Unschedulable``, ``GangWaiting``) and the message explaining it."""

    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """The new status of a job and what reconcile must do about it."""

    status: dict[str, Any] = field(default_factory=dict)
    """The complete new ``status`` (without ``lastReconcileTime``, which the writer sets):
    the typed status serialised once, by :func:`~controller.job.status.compute_status`."""
    recreate: tuple[PodView, ...] = ()
    """Failed pods to delete so that their replica is created again."""
    finished: bool = False
    """Succeeded or Failed: apply cleanPodPolicy, create nothing."""
    stop_active: bool = False
    """Delete every active pod whatever the cleanPodPolicy (the deadline passed)."""
    suspended: bool = False
    """Delete every pod and Service; create nothing."""
    became: str | None = None
    """``Succeeded`` or ``Failed`` when the job finished in this computation."""
    created: bool = False
    """The job was seen for the first time (the Created condition was set now)."""
    new_restarts: int = 0
    """How much ``restartCount`` grew."""
    events: tuple[EventSpec, ...] = ()
    requeue_after: float | None = None
    """Seconds until a deadline or TTL is due; reconcile arms a timer for it."""
    delete_job: bool = False
    """The TTL after finishing has passed: delete the MXJob."""
    overdue: frozenset[str] = frozenset()
    """Finished: pods still active whose grace period is over (or every active pod, once the
    deadline passed); cleanPodPolicy Running or All deletes them now."""
    settled: bool = True
    """Finished, and no pod is still within its grace period: cleanPodPolicy All may delete the
    Services too."""
    ends_counted: frozenset[str] = frozenset()
    """Tracked pods that have ended and that this status counts: once it is written, their
    tracking finalizer goes (controller/job/tracking.py)."""
    stale: tuple[PodView, ...] = ()
    """Pods of an earlier attempt of a job restarted as a whole: they go
    (controller/job/recovery.py)."""
    attempt: int = 0
    """The attempt the pods created now belong to (``status.attempt``)."""
    hold_creations: bool = False
    """A whole-job restart is under way: no pod is made until every pod of the ended attempt
    is gone (never two live pods for one slot)."""
    slots: tuple[Slot, ...] = ()
    """Every replica the spec asks for, as status matched the pods to them
    (:func:`~controller.job.status.sync.match_slots`). The plan creates and deletes against
    this same list instead of asking :func:`~controller.job.desired.desired_slots` again: the
    slots are computed once per reconcile, and status and plan cannot disagree about them. Every
    outcome of a job that goes on carries them; one decided before they were matched (a
    finished or suspended job) has none, and the plan makes nothing for it."""
