"""Where status is computed: one pure function, job + observed pods + now → status and decisions.

:func:`compute_status` is the whole policy of the operator: when a job is Running, Restarting,
Succeeded or Failed, which failed pods are recreated, how restarts count against
``backoffLimit``, when the deadline and the TTL fire. It does no I/O and reads no clock, so each
rule is a unit test, and reconcile only carries the decisions out. Inside, one small state
object (``_Sync``) goes through named phases in a fixed order (``_PHASES``: finished, invalid,
suspended, deadline, permanent failure, success, backoff limit, restarts, running); the first
phase that decides the outcome ends the computation, so the order of the phases is the policy.

Rules (README.md, "Exit codes" and "Status"):

- A finished job (Succeeded or Failed True) never changes its outcome again. Its pods still
  running get their ``terminationGracePeriodSeconds`` to end by themselves before cleanPodPolicy
  deletes them, and ``replicaStatuses`` follow them until every pod has ended; its TTL runs.
- MXTrain succeeds when the Scheduler's pod succeeds (``successPolicy: AllWorkers``: every
  Worker; single-node form: the Worker); MXTune when the Tuner's does.
- A permanent failure of any replica fails the job, and it is checked before success, so a
  failed worker never ends in Succeeded (the older mxnet-operator could). Under ``Never`` every
  failure is permanent. Under ``ExitCode`` a retryable exit or an eviction recreates the pod;
  under ``OnFailure``/``Always`` the kubelet restarts in place, and an evicted pod is recreated.
- ``restartCount`` counts every in-place restart and every recreation. Each pod carries the
  restart total of its replica before it (an annotation written when it is created), so the
  count is recomputed from the pods alone and is never lower than the persisted one: a
  controller restart loses none and counts none twice. Exceeding ``backoffLimit`` fails the job
  with BackoffLimitExceeded (training-operator retried forever).
- ``activeDeadlineSeconds`` runs from ``startTime`` (reset on resume) and fails the job with
  DeadlineExceeded; the next due time is returned so a real timer fires it without any event
  (training-operator waited for one).
- ``replicaStatuses`` describe the pods as they will be once reconcile has acted (pods about to
  be created or recreated count as active), so a reconcile's own actions do not cause a second
  status write.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from controller.job.desired import Slot, desired_slots, replica_selector
from controller.job.observed import PodView, observe
from controller.job.recovery import (
    consequences,
    first_ended,
    history_entry,
    persisted_attempt,
    persisted_disruptions,
    persisted_history,
    recorded_pods,
    scope_of,
    split_attempts,
    with_entries,
)
from controller.job.tracking import accounted, settle_views
from shared.apitime import format_time, parse_time
from shared.conditions import ConditionType, Reason, current_state, get_condition, set_condition
from shared.constants import (
    CleanPodPolicy,
    DisruptionPolicy,
    JobMode,
    ReplicaType,
    RestartPolicy,
    RestartScope,
    SuccessPolicy,
)
from shared.exitcodes import ExitClass, classify_exit, describe_exit
from shared.spec import (
    active_deadline_seconds,
    as_mapping,
    backoff_limit,
    clean_pod_policy,
    disruption_policy,
    is_int,
    is_single_node,
    is_suspended,
    job_mode,
    job_name,
    pod_start_timeout_override,
    replica_specs,
    restart_policy,
    restart_scope,
    success_policy,
    ttl_seconds_after_finished,
)

FAILED_VALIDATION_REASON: Final = "MXJobFailedValidation"
"""Failed reason of a job stored without passing the validating webhook and found invalid."""

EXITED_WITH_CODE: Final = "ExitedWithCode"
RUNTIME_LOST_REASONS: Final = frozenset({"Unknown", "ContainerStatusUnknown"})
"""A container's terminated reason when the runtime, not the program, decided its end: containerd
reports ``Unknown`` (exit code 255) for a task whose exit it missed while it was down, and the
kubelet ``ContainerStatusUnknown`` (137) for a container it can no longer find. Under
``ExitCode`` such an end is retried, whatever the code."""
POD_START_TIMEOUT: Final = "PodStartTimeout"
"""The Failed reason of a job whose pod could not start for its pod start timeout."""
DEFAULT_POD_START_TIMEOUT: Final = 600.0
"""Seconds a pod may be unable to start before its job fails (``--pod-start-timeout``)."""
REPLICAS_ENDED: Final = "ReplicasEnded"
"""Event reason: pods of a finished job that ended by themselves within their grace period."""
REMOVED_HISTORY: Final = "*removed"
"""Key in ``carries``: restarts of replicas the controller removed (scale-down, suspend), which
no live pod remembers any more but ``restartCount`` still includes."""
EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class EventSpec:
    """An Event to record on the MXJob."""

    type: EventType
    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    """The new status of a job and what reconcile must do about it."""

    status: dict[str, Any]
    """The complete new ``status`` (without ``lastReconcileTime``, which the writer sets)."""
    recreate: tuple[PodView, ...] = ()
    """Failed pods to delete so that their replica is created again."""
    restarts_before: dict[str, int] = field(default_factory=dict)
    """Per missing slot (``<type>-<index>``): the restart history its new pod carries."""
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


# -- helpers --------------------------------------------------------------------------------------
def _set(
    conditions: list[dict[str, Any]],
    ctype: ConditionType,
    *,
    status: bool,
    reason: str,
    message: str,
    now: str,
) -> list[dict[str, Any]]:
    """``set_condition`` only when something changes, so that an unchanged job writes nothing."""
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


def _is_true(conditions: Sequence[Mapping[str, Any]], ctype: ConditionType) -> bool:
    condition = get_condition(conditions, ctype)
    return condition is not None and condition.get("status") == "True"


def _describe(view: PodView) -> str:
    rtype = view.replica_type.value if view.replica_type else "replica"
    return f"{rtype} {view.index} (pod {view.name})"


def _exit_text(view: PodView) -> str:
    if view.exit_code is None:
        why = view.disruption or view.reason or "no exit code"
        return f"failed without an exit code ({why}, e.g. evicted or preempted)"
    # The kubelet's reason says what the code alone cannot: OOMKilled is a 137 the kernel sent.
    noted = f", {view.reason}" if view.reason and view.reason not in ("Error", "Completed") else ""
    noted += f", {view.disruption}" if view.disruption else ""
    return f"exited with code {view.exit_code} ({describe_exit(view.exit_code)}{noted})"


def _master_slot(job: Mapping[str, Any]) -> ReplicaType | None:
    mode = job_mode(job)
    if mode is JobMode.MXTUNE:
        return ReplicaType.TUNER
    if mode is JobMode.MXTRAIN:
        return ReplicaType.WORKER if is_single_node(job) else ReplicaType.SCHEDULER
    return None


def _failure_kind(job: Mapping[str, Any], view: PodView) -> Literal["none", "permanent", "retry"]:
    """How the failure of this pod counts under its replica's restart policy."""
    if not view.failed or view.replica_type is None:
        return "none"
    policy = restart_policy(job, view.replica_type)
    if policy is RestartPolicy.NEVER:
        return "permanent"
    if policy is RestartPolicy.EXIT_CODE:
        if view.reason in RUNTIME_LOST_REASONS:
            return "retry"  # the runtime lost the process's end: not the program's verdict
        return "retry" if classify_exit(view.exit_code) is ExitClass.RETRYABLE else "permanent"
    # OnFailure/Always: the kubelet restarts failed containers in place, so a Failed pod was
    # evicted (or hit a pod-level limit); only a new pod can run the replica again.
    return "retry"


def _why_final(job: Mapping[str, Any], view: PodView) -> str:
    """Why this failure ends the job: the replica's restart policy, or the exit code's class."""
    if view.replica_type is not None and restart_policy(job, view.replica_type) is (
        RestartPolicy.NEVER
    ):
        return "restartPolicy Never does not retry"
    return "a permanent failure, not retried"


def _succeeded(job: Mapping[str, Any], by_slot: Mapping[str, PodView | None]) -> bool:
    """Whether the replicas that decide success have succeeded."""
    if success_policy(job) is SuccessPolicy.ALL_WORKERS and not is_single_node(job):
        workers = [v for k, v in by_slot.items() if k.startswith("worker-")]
        return bool(workers) and all(v is not None and v.succeeded for v in workers)
    master = _master_slot(job)
    if master is None:
        return False
    view = by_slot.get(f"{master.value.lower()}-0")
    return view is not None and view.succeeded


def _replica_statuses(
    job: Mapping[str, Any], counts: Mapping[ReplicaType, dict[str, int]]
) -> dict[str, Any]:
    return {
        rtype.value: {
            **counts.get(rtype, {"active": 0, "succeeded": 0, "failed": 0}),
            "selector": replica_selector(job, rtype),
        }
        for rtype in (ReplicaType(t) for t in replica_specs(job))
    }


def _empty_counts(job: Mapping[str, Any]) -> dict[ReplicaType, dict[str, int]]:
    return {ReplicaType(t): {"active": 0, "succeeded": 0, "failed": 0} for t in replica_specs(job)}


@dataclass(frozen=True)
class _Aftermath:
    """The pods of a finished job: how each replica type ended so far, and what is still due."""

    counts: dict[ReplicaType, dict[str, int]]
    overdue: frozenset[str]
    settled: bool
    next_due: float | None
    """Seconds until the next still-running pod's grace period ends."""


def _aftermath(
    job: Mapping[str, Any],
    views: Sequence[PodView],
    *,
    completion: datetime.datetime,
    now: datetime.datetime,
    stop_active: bool,
    previous: Mapping[str, Any] | None = None,
) -> _Aftermath:
    """Follow the pods of a finished job until every one has ended.

    ps-lite's Scheduler exits together with the workers, so the job often succeeds while the
    Workers are still writing their last lines and exit codes. Each pod still active gets its
    own ``terminationGracePeriodSeconds`` from ``completionTime`` to end by itself; only then
    does cleanPodPolicy Running or All delete it (the deadline stops every pod at once). Pods
    that end meanwhile are counted, and counts only grow (``previous`` is the finished status
    written before): the final replicaStatuses keep how each replica ended even after
    cleanPodPolicy All deleted it.
    """
    counts = _empty_counts(job)
    deletes_active = stop_active or clean_pod_policy(job) is not CleanPodPolicy.NONE
    overdue: set[str] = set()
    waits: list[float] = []
    for view in views:
        bucket = counts.get(view.replica_type) if view.replica_type else None
        if bucket is None or view.gone:
            continue  # gone: deleted by the controller (or not ended yet), not a replica's end
        if view.ended:
            bucket["succeeded" if view.succeeded else "failed"] += 1
            if not (view.lingering and deletes_active):
                continue  # a lingering pod's sidecars get the same grace as an active pod
        elif not view.active:
            continue  # a phase no kubelet writes
        elif not deletes_active:
            bucket["active"] += 1
            continue
        grace_end = completion + datetime.timedelta(seconds=view.grace_seconds)
        remaining = 0.0 if stop_active else (grace_end - now).total_seconds()
        if remaining <= 0:
            overdue.add(view.name)
        else:
            if not view.lingering:
                bucket["active"] += 1
            waits.append(remaining)
    for rtype, bucket in counts.items():
        for key in ("succeeded", "failed"):
            bucket[key] = max(bucket[key], _recorded(as_mapping(previous), rtype, key))
    return _Aftermath(
        counts=counts,
        overdue=frozenset(overdue),
        settled=not waits,
        next_due=min(waits) if waits else None,
    )


def _recorded(counts: Mapping[str, Any], rtype: ReplicaType, key: str) -> int:
    """A count of an earlier replicaStatuses (0 when absent or malformed)."""
    value = as_mapping(counts.get(rtype.value)).get(key)
    return value if is_int(value) and value > 0 else 0


def _ended_after_finish_events(
    name: str, previous: Mapping[str, Any], counts: Mapping[ReplicaType, dict[str, int]]
) -> list[EventSpec]:
    """One event per replica type with pods that ended since the last status was written."""
    events: list[EventSpec] = []
    for rtype, bucket in counts.items():
        more_succeeded = bucket["succeeded"] - _recorded(previous, rtype, "succeeded")
        more_failed = bucket["failed"] - _recorded(previous, rtype, "failed")
        if more_succeeded + more_failed <= 0:
            continue
        events.append(
            EventSpec(
                "Warning" if more_failed > 0 else "Normal",
                REPLICAS_ENDED,
                f"{more_succeeded + more_failed} {rtype.value} replica(s) ended after MXJob "
                f"{name} finished: {bucket['succeeded']} succeeded, {bucket['failed']} failed, "
                f"{bucket['active']} still running.",
            )
        )
    return events


def _sooner(first: float | None, second: float | None) -> float | None:
    found = [x for x in (first, second) if x is not None]
    return min(found) if found else None


# -- the function ---------------------------------------------------------------------------------
def compute_status(
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    carries: Mapping[str, int] | None = None,
    violations: Sequence[str] = (),
    pod_start_timeout: float = DEFAULT_POD_START_TIMEOUT,
) -> Outcome:
    """The job's new status and the decisions that go with it.

    ``job`` is the defaulted MXJob with its persisted ``status``; ``pods`` are the pods it
    controls (by owner uid), from the cache. ``carries`` maps a slot (``<type>-<index>``) whose
    pod the controller deleted for recreation to the restart total its next pod must carry
    (known exactly in memory; after a controller restart it is recovered from
    ``status.restartCount``). ``violations`` are the reasons a job that never passed the
    validating webhook is invalid; such a job fails at once.

    A pod deleted by someone else and held by the tracking finalizer counts by how it ended,
    as if it had not been deleted (:attr:`PodView.gone`); one whose end is never reported
    counts as failed without an exit code after a while
    (:func:`controller.job.tracking.settle_views`).
    """
    views, unreported_due = settle_views([observe(p) for p in pods], now)
    timeout = pod_start_timeout_override(job)
    outcome = _decide(
        job, views, now=now, carries=carries, violations=violations,
        pod_start_timeout=float(timeout) if timeout is not None else pod_start_timeout,
    )  # fmt: skip
    return dataclasses.replace(
        outcome,
        requeue_after=_sooner(outcome.requeue_after, unreported_due),
        ends_counted=accounted(views),
    )


# -- the phases -----------------------------------------------------------------------------------
@dataclass
class _Sync:
    """One computation's state, carried through the phases of :func:`_decide` in their order.

    Each phase reads what the earlier ones found and either ends the computation with an
    :class:`Outcome` or adds to this state and lets the next one run, so every rule reads at a
    glance and the order of the phases is the policy (as kube's Job controller carries one
    sync through its steps).
    """

    job: Mapping[str, Any]
    views: Sequence[PodView]
    now: datetime.datetime
    carries: Mapping[str, int] | None
    violations: Sequence[str]
    name: str
    stamp: str
    old_status: Mapping[str, Any]
    status: dict[str, Any]
    """The new status being built (the old one without ``lastReconcileTime``)."""
    conditions: list[dict[str, Any]]
    restarts_so_far: int
    """``restartCount`` as persisted."""
    created: bool
    events: list[EventSpec] = field(default_factory=list)
    requeue_after: float | None = None
    """Seconds until the deadline is due."""
    slots: list[Slot] = field(default_factory=list)
    by_slot: dict[str, PodView | None] = field(default_factory=dict)
    """Each desired slot's pod, if it has one."""
    pending: list[PodView] = field(default_factory=list)
    """Failed pods to recreate."""
    restarts_before: dict[str, int] = field(default_factory=dict)
    """Per missing slot: the restart history its new pod carries (``Outcome.restarts_before``)."""
    needed: int = 0
    """The new ``restartCount``."""
    limit: int = 0
    """``backoffLimit``."""
    pod_start_timeout: float = DEFAULT_POD_START_TIMEOUT
    """Seconds a pod may be unable to start before the job fails; 0: never."""
    attempt: int = 0
    """``status.attempt`` as persisted: the attempt whose pods count."""
    stale: list[PodView] = field(default_factory=list)
    """Pods of an earlier attempt (controller/job/recovery.py)."""
    scopes: dict[str, RestartScope] = field(default_factory=dict)
    """Each replica type's restart scope."""
    job_causes: list[PodView] = field(default_factory=list)
    """Retryable ends of ``Job``-scoped replicas in this attempt: the job restarts as a whole."""
    disruptions: int = 0
    """``status.disruptionRestarts``, with the restarts found now."""
    history: list[dict[str, Any]] = field(default_factory=list)
    """``status.restarts``, with the restarts found now."""

    def condition(self, ctype: ConditionType, *, status: bool, reason: str, message: str) -> None:
        """Set a condition now (only when something changes, see :func:`_set`)."""
        self.conditions = _set(
            self.conditions, ctype, status=status, reason=reason, message=message, now=self.stamp
        )

    def restarts_performed(self) -> int:
        """Restarts the pods explain, never fewer than the persisted count."""
        performed = _restart_sum(self.slots, self.by_slot, self.carries, attempt=self.attempt)[0]
        return max(self.restarts_so_far, performed)


_Phase = Callable[[_Sync], Outcome | None]


def _decide(
    job: Mapping[str, Any],
    views: Sequence[PodView],
    *,
    now: datetime.datetime,
    carries: Mapping[str, int] | None,
    violations: Sequence[str],
    pod_start_timeout: float,
) -> Outcome:
    """Run the phases in order; the first that decides the outcome ends the computation."""
    sync = _start(job, views, now=now, carries=carries, violations=violations)
    sync.pod_start_timeout = pod_start_timeout
    for phase in _PHASES:
        outcome = phase(sync)
        if outcome is not None:
            return outcome
    return _progress(sync)


def _start(
    job: Mapping[str, Any],
    views: Sequence[PodView],
    *,
    now: datetime.datetime,
    carries: Mapping[str, int] | None,
    violations: Sequence[str],
) -> _Sync:
    """The persisted status read back, and the Created condition set on a job seen first."""
    old_status = as_mapping(job.get("status"))
    raw_conditions = old_status.get("conditions")
    conditions: list[dict[str, Any]] = (
        [dict(c) for c in raw_conditions if isinstance(c, Mapping)]
        if isinstance(raw_conditions, list)
        else []
    )
    persisted_restarts = old_status.get("restartCount")
    attempt = persisted_attempt(old_status)
    current, stale = split_attempts(views, attempt)
    sync = _Sync(
        job=job,
        views=current,
        now=now,
        carries=carries,
        violations=violations,
        name=job_name(job),
        stamp=format_time(now),
        old_status=old_status,
        status={k: v for k, v in old_status.items() if k != "lastReconcileTime"},
        conditions=conditions,
        restarts_so_far=persisted_restarts if is_int(persisted_restarts) else 0,
        created=not conditions,
        attempt=attempt,
        stale=stale,
        scopes={t: restart_scope(job, t) for t in replica_specs(job)},
        disruptions=persisted_disruptions(old_status),
        history=persisted_history(old_status),
    )
    if sync.created or get_condition(conditions, ConditionType.CREATED) is None:
        sync.condition(
            ConditionType.CREATED,
            status=True,
            reason=Reason.CREATED,
            message=f"MXJob {sync.name} is created.",
        )
    return sync


def _finish(
    sync: _Sync,
    ctype: ConditionType,
    reason: str,
    message: str,
    *,
    stop_active: bool = False,
    restart_count: int | None = None,
) -> Outcome:
    """The job finishes now: its outcome, its pods' aftermath, its TTL."""
    sync.condition(ctype, status=True, reason=reason, message=message)
    status = sync.status
    status["conditions"] = sync.conditions
    status["state"] = current_state(sync.conditions)
    status["completionTime"] = sync.stamp
    status.setdefault("startTime", sync.stamp)
    status["restartCount"] = restart_count if restart_count is not None else sync.restarts_so_far
    _record_restarts(sync, status)
    after = _aftermath(
        sync.job, sync.views, completion=sync.now, now=sync.now, stop_active=stop_active
    )
    status["replicaStatuses"] = _replica_statuses(sync.job, after.counts)
    event_type: EventType = "Normal" if ctype is ConditionType.SUCCEEDED else "Warning"
    sync.events.append(EventSpec(event_type, reason, message))
    ttl = ttl_seconds_after_finished(sync.job)
    return Outcome(
        status=status,
        finished=True,
        stop_active=stop_active,
        became=ctype.value,
        created=sync.created,
        new_restarts=max(0, status["restartCount"] - sync.restarts_so_far),
        events=tuple(sync.events),
        requeue_after=_sooner(float(ttl) if ttl is not None and ttl > 0 else None, after.next_due),
        delete_job=ttl == 0,
        overdue=after.overdue,
        settled=after.settled,
        stale=tuple(sync.stale),
    )


def _follow_finished(sync: _Sync) -> Outcome | None:
    """A finished job's outcome is frozen; its pods are followed until they ended, its TTL runs."""
    conditions = sync.conditions
    if not (
        _is_true(conditions, ConditionType.SUCCEEDED) or _is_true(conditions, ConditionType.FAILED)
    ):
        return None
    status = sync.status
    status["conditions"] = conditions
    status["state"] = current_state(conditions)
    status.setdefault("completionTime", sync.stamp)
    failed = get_condition(conditions, ConditionType.FAILED)
    stop_active = (
        failed is not None
        and failed.get("status") == "True"
        and failed.get("reason") == Reason.DEADLINE_EXCEEDED
    )
    completion = parse_time(status.get("completionTime")) or sync.now
    previous = as_mapping(sync.old_status.get("replicaStatuses"))
    after = _aftermath(
        sync.job,
        sync.views,
        completion=completion,
        now=sync.now,
        stop_active=stop_active,
        previous=previous,
    )
    status["replicaStatuses"] = _replica_statuses(sync.job, after.counts)
    ttl = ttl_seconds_after_finished(sync.job)
    requeue_after: float | None = None
    delete_job = False
    if ttl is not None:
        remaining = (completion + datetime.timedelta(seconds=ttl) - sync.now).total_seconds()
        delete_job = remaining <= 0
        requeue_after = None if delete_job else remaining
    return Outcome(
        status=status,
        finished=True,
        stop_active=stop_active,
        created=sync.created,
        events=tuple(_ended_after_finish_events(sync.name, previous, after.counts)),
        requeue_after=_sooner(requeue_after, after.next_due),
        delete_job=delete_job,
        overdue=after.overdue,
        settled=after.settled,
        stale=tuple(sync.stale),
    )


def _fail_invalid(sync: _Sync) -> Outcome | None:
    """A job stored without passing the validating webhook, and invalid, fails at once."""
    if not sync.violations:
        return None
    message = f"MXJob {sync.name} is invalid: " + "; ".join(sync.violations)
    return _finish(sync, ConditionType.FAILED, FAILED_VALIDATION_REASON, message)


def _suspend(sync: _Sync) -> Outcome | None:
    """Suspended: no pods, no deadline; Running and Restarting become False."""
    if not is_suspended(sync.job):
        return None
    message = f"MXJob {sync.name} is suspended."
    if not _is_true(sync.conditions, ConditionType.SUSPENDED):
        sync.events.append(EventSpec("Normal", Reason.SUSPENDED, message))
    sync.condition(ConditionType.SUSPENDED, status=True, reason=Reason.SUSPENDED, message=message)
    for ctype in (ConditionType.RUNNING, ConditionType.RESTARTING):
        if _is_true(sync.conditions, ctype):
            sync.condition(ctype, status=False, reason=Reason.SUSPENDED, message=message)
    status = sync.status
    status["conditions"] = sync.conditions
    status["state"] = current_state(sync.conditions)
    status["restartCount"] = sync.restarts_so_far
    status["replicaStatuses"] = _replica_statuses(sync.job, _empty_counts(sync.job))
    return Outcome(status=status, suspended=True, created=sync.created, events=tuple(sync.events))


def _resume(sync: _Sync) -> None:
    """Resuming resets ``startTime``, so the deadline counts from the resume."""
    if _is_true(sync.conditions, ConditionType.SUSPENDED):
        message = f"MXJob {sync.name} is resumed."
        sync.condition(
            ConditionType.SUSPENDED, status=False, reason=Reason.RESUMED, message=message
        )
        sync.events.append(EventSpec("Normal", Reason.RESUMED, message))
        sync.status["startTime"] = sync.stamp
    sync.status.setdefault("startTime", sync.stamp)


def _check_deadline(sync: _Sync) -> Outcome | None:
    """``activeDeadlineSeconds`` from ``startTime``: fail when passed, else time the timer."""
    deadline_seconds = active_deadline_seconds(sync.job)
    if deadline_seconds is None:
        return None
    start = parse_time(sync.status.get("startTime")) or sync.now
    remaining = (start + datetime.timedelta(seconds=deadline_seconds) - sync.now).total_seconds()
    if remaining > 0:
        sync.requeue_after = remaining
        return None
    message = (
        f"MXJob {sync.name} has failed because it was active longer than its "
        f"activeDeadlineSeconds ({deadline_seconds} s)."
    )
    return _finish(sync, ConditionType.FAILED, Reason.DEADLINE_EXCEEDED, message, stop_active=True)


def _match_slots(sync: _Sync) -> None:
    """Each desired slot's pod: the pod of its name, if it runs that slot's replica type."""
    sync.slots = desired_slots(sync.job)
    views_by_name = {v.name: v for v in sync.views}
    for slot in sync.slots:
        view = views_by_name.get(slot.name)
        sync.by_slot[slot.key] = (
            view if view is not None and view.replica_type is slot.replica_type else None
        )


def _fail_permanent(sync: _Sync) -> Outcome | None:
    """A permanent failure of any replica fails the job (checked before success), unless it
    followed a retryable end that restarts the whole job (controller/job/recovery.py)."""
    live = [v for v in sync.by_slot.values() if v and not v.gone]
    sync.job_causes = [
        v
        for v in live
        if _failure_kind(sync.job, v) == "retry" and scope_of(sync.scopes, v) is RestartScope.JOB
    ]
    permanent = [v for v in live if _failure_kind(sync.job, v) == "permanent"]
    followed = consequences(permanent, sync.job_causes)
    permanent = [v for v in permanent if v not in followed]
    if not permanent:
        return None
    for view in permanent:
        sync.events.append(
            EventSpec(
                "Warning",
                EXITED_WITH_CODE,
                f"{_describe(view)} {_exit_text(view)}: {_why_final(sync.job, view)}.",
            )
        )
    first = permanent[0]
    message = f"MXJob {sync.name} has failed because {_describe(first)} {_exit_text(first)}."
    return _finish(
        sync, ConditionType.FAILED, Reason.FAILED, message, restart_count=sync.restarts_performed()
    )


def _succeed(sync: _Sync) -> Outcome | None:
    """The replicas that decide success have succeeded."""
    if not _succeeded(sync.job, sync.by_slot):
        return None
    return _finish(
        sync,
        ConditionType.SUCCEEDED,
        Reason.SUCCEEDED,
        f"MXJob {sync.name} is successfully completed.",
        restart_count=sync.restarts_performed(),
    )


def _fail_backoff(sync: _Sync) -> Outcome | None:
    """Restarts (whole-job ones, recreations of failed pods, in-place ones) beyond
    ``backoffLimit`` fail it; restarts caused by a disruption count only under
    ``disruptionPolicy: Count``."""
    performed, sync.restarts_before = _restart_sum(
        sync.slots, sync.by_slot, sync.carries, total=sync.restarts_so_far, attempt=sync.attempt
    )
    ignore = disruption_policy(sync.job) is DisruptionPolicy.IGNORE
    if sync.job_causes:
        cause = first_ended(sync.job_causes)
        sync.needed = max(sync.restarts_so_far, performed + 1)
        found = [(cause, RestartScope.JOB, sync.attempt + 1)]
    else:
        sync.pending = [
            v
            for v in sync.by_slot.values()
            if v and not v.gone and _failure_kind(sync.job, v) == "retry"
        ]
        sync.needed = max(sync.restarts_so_far, performed + len(sync.pending))
        recorded = recorded_pods(sync.history)
        found = [(v, RestartScope.REPLICA, sync.attempt) for v in sync.pending]
        found = [item for item in found if item[0].uid not in recorded]
    sync.disruptions += sum(1 for view, _, _ in found if view.disruption)
    sync.history = with_entries(sync.history, [
        history_entry(view, scope=scope, attempt=attempt, stamp=sync.stamp,
                      counted=not (ignore and view.disruption))
        for view, scope, attempt in found
    ])  # fmt: skip
    sync.limit = limit = backoff_limit(sync.job)
    if sync.needed - (sync.disruptions if ignore else 0) <= limit:
        return None
    ended = sync.pending or [view for view, _, _ in found]
    for view in ended:
        sync.events.append(
            EventSpec("Warning", EXITED_WITH_CODE, f"{_describe(view)} {_exit_text(view)}.")
        )
    last = f"; the last: {_describe(ended[-1])} {_exit_text(ended[-1])}" if ended else ""
    message = (
        f"MXJob {sync.name} has failed because it has reached the specified backoff limit "
        f"({limit} restart{'s' if limit != 1 else ''}){last}."
    )
    return _finish(
        sync,
        ConditionType.FAILED,
        Reason.BACKOFF_LIMIT_EXCEEDED,
        message,
        restart_count=max(sync.restarts_so_far, performed),
    )


def _fail_unstartable(sync: _Sync) -> Outcome | None:
    """Pods that cannot start: said at once (the Running condition's reason and an Event);
    the job fails once one of them has been trying for the pod start timeout. Nothing ran, so
    nothing counts against ``backoffLimit``; a fixed cause (the Secret created) lets it go on."""
    stuck = [v for v in sync.by_slot.values() if v and v.active and v.start_problem]
    if not stuck:
        return None
    first = min(stuck, key=lambda v: v.created_at or sync.stamp)
    problem = first.start_problem
    assert problem is not None
    what = f"pod {first.name} cannot start its container {problem.container}: {problem.reason}" + (
        f": {problem.message}" if problem.message else ""
    )
    others = f" ({len(stuck) - 1} more pod(s) cannot start)" if len(stuck) > 1 else ""
    trying = (sync.now - (parse_time(first.created_at) or sync.now)).total_seconds()
    timeout = sync.pod_start_timeout
    if timeout > 0 and trying >= timeout:
        message = (
            f"MXJob {sync.name} has failed because {what}{others}; it has tried for "
            f"{trying:.0f} s, the pod start timeout is {timeout:g} s."
        )
        sync.events.append(EventSpec("Warning", problem.reason, what))
        return _finish(
            sync, ConditionType.FAILED, POD_START_TIMEOUT, message,
            restart_count=sync.restarts_performed(),
        )  # fmt: skip
    before = sync.conditions
    running = get_condition(before, ConditionType.RUNNING)
    message = f"MXJob {sync.name} is not running: {what}{others}."
    sync.conditions = set_condition(
        before, type=ConditionType.RUNNING, status=False, reason=problem.reason, message=message,
        now=sync.stamp,
    ) if running is None or running.get("message") != message else before  # fmt: skip
    if sync.conditions is not before:
        sync.events.append(EventSpec("Warning", problem.reason, what))
    if timeout > 0:
        sync.requeue_after = _sooner(sync.requeue_after, timeout - trying)
    return None


def _limit_text(sync: _Sync, view: PodView | None) -> str:
    """Where the restart stands against ``backoffLimit``."""
    if (
        view is not None
        and view.disruption
        and (disruption_policy(sync.job) is DisruptionPolicy.IGNORE)
    ):
        return (
            f"restart {sync.needed}, caused by a disruption ({view.disruption}): not counted "
            f"against the backoff limit of {sync.limit} (disruptionPolicy Ignore)."
        )
    counted = sync.needed - (
        sync.disruptions if disruption_policy(sync.job) is DisruptionPolicy.IGNORE else 0
    )
    return f"restart {counted} of at most {sync.limit}."


def _announce(sync: _Sync, *, condition: str, event: str) -> None:
    """The Restarting condition's message, and the Warning Event that says what restarts."""
    sync.condition(
        ConditionType.RESTARTING, status=True, reason=Reason.RESTARTING, message=condition
    )
    sync.events.append(EventSpec("Warning", Reason.RESTARTING, event))


def _restart_job(sync: _Sync) -> None:
    """A ``Job``-scoped retryable end: the whole job restarts as the next attempt."""
    cause = first_ended(sync.job_causes)
    attempt = sync.attempt + 1
    why = f"{_describe(cause)} {_exit_text(cause)}"
    sync.events.append(
        EventSpec("Warning", EXITED_WITH_CODE, f"{why}: retryable, restarting the whole job.")
    )
    _announce(
        sync,
        condition=f"MXJob {sync.name} is restarting as a whole (attempt {attempt}) because {why}.",
        event=f"Restarting the whole job as attempt {attempt}: every pod ends, then all are made "
        f"again; {_limit_text(sync, cause)}",
    )
    # Every pod of the ended attempt goes; each slot's own history goes on with its new pod.
    sync.pending = [v for v in sync.views if v.replica_type is not None]
    for view in sync.pending:
        if view.slot_restarts > 0:
            sync.restarts_before[view.slot] = view.slot_restarts
    sync.stale = [*sync.stale, *sync.views]
    sync.attempt = attempt


def _restart(sync: _Sync) -> None:
    """Retryable failures are recreated (Restarting), or the whole job restarts; in-place
    restarts are reported."""
    if sync.job_causes:
        _restart_job(sync)
        return
    for view in sync.pending:
        sync.restarts_before[view.slot] = view.slot_restarts + 1
        sync.events.append(
            EventSpec(
                "Warning",
                EXITED_WITH_CODE,
                f"{_describe(view)} {_exit_text(view)}: retryable, recreating it.",
            )
        )
    limit_text = _limit_text(sync, sync.pending[0] if len(sync.pending) == 1 else None)
    if sync.pending:
        what = ", ".join(f"{_describe(v)} {_exit_text(v)}" for v in sync.pending)
        _announce(
            sync,
            condition=f"MXJob {sync.name} is restarting because {what}.",
            event=f"Restarting {len(sync.pending)} replica(s); {limit_text}",
        )
    elif (new_restarts := sync.needed - sync.restarts_so_far) > 0:
        sync.events.append(
            EventSpec(
                "Warning",
                Reason.RESTARTING,
                f"{new_restarts} container restart(s) in place; {limit_text}",
            )
        )


def _mark_running(sync: _Sync) -> None:
    """Running once every replica is up (or done) and the deciding one runs."""
    everyone_up = all(
        v is not None and not v.gone and (v.running or v.succeeded) for v in sync.by_slot.values()
    )
    master = _master_slot(sync.job)
    master_view = sync.by_slot.get(f"{master.value.lower()}-0") if master else None
    if (
        not sync.pending
        and everyone_up
        and master_view is not None
        and master_view.running
        and not _is_true(sync.conditions, ConditionType.RUNNING)
    ):
        sync.condition(
            ConditionType.RUNNING,
            status=True,
            reason=Reason.RUNNING,
            message=f"MXJob {sync.name} is running.",
        )


def _progress(sync: _Sync) -> Outcome:
    """Not finished: ``replicaStatuses`` as the pods will be once reconcile has acted."""
    counts = _empty_counts(sync.job)
    for slot in sync.slots:
        view = sync.by_slot[slot.key]
        bucket = counts[slot.replica_type]
        if view is None or view.gone or view.active or view in sync.pending:
            bucket["active"] += 1
        elif view.succeeded:
            bucket["succeeded"] += 1
        else:
            bucket["failed"] += 1
    status = sync.status
    status["conditions"] = sync.conditions
    status["state"] = current_state(sync.conditions)
    status["restartCount"] = sync.needed
    status["replicaStatuses"] = _replica_statuses(sync.job, counts)
    _record_restarts(sync, status)
    return Outcome(
        status=status,
        recreate=tuple(sync.pending),
        restarts_before=sync.restarts_before,
        created=sync.created,
        new_restarts=sync.needed - sync.restarts_so_far,
        events=tuple(sync.events),
        requeue_after=sync.requeue_after,
        stale=tuple(sync.stale),
        attempt=sync.attempt,
        hold_creations=bool(sync.stale),
    )


def _record_restarts(sync: _Sync, status: dict[str, Any]) -> None:
    """The attempt, the disruptions and the history, once there is anything to say."""
    if sync.attempt > 0:
        status["attempt"] = sync.attempt
    if sync.disruptions > 0:
        status["disruptionRestarts"] = sync.disruptions
    if sync.history:
        status["restarts"] = sync.history


def _only(step: Callable[[_Sync], None]) -> _Phase:
    """A phase that only adds to the state and never decides the outcome."""

    def phase(sync: _Sync) -> Outcome | None:
        step(sync)
        return None

    phase.__name__ = step.__name__
    return phase


_PHASES: Final[tuple[_Phase, ...]] = (
    _follow_finished,
    _fail_invalid,
    _suspend,
    _only(_resume),
    _check_deadline,
    _only(_match_slots),
    _fail_permanent,
    _succeed,
    _fail_backoff,
    _fail_unstartable,
    _only(_restart),
    _only(_mark_running),
)
"""The order is the policy: a finished job stays finished; invalid fails before anything runs;
a suspended job has no deadline; a permanent failure beats success; success beats the backoff
limit."""


def _restart_sum(
    slots: Sequence[Slot],
    by_slot: Mapping[str, PodView | None],
    carries: Mapping[str, int] | None,
    *,
    total: int = 0,
    attempt: int = 0,
) -> tuple[int, dict[str, int]]:
    """Restarts performed so far, and the history each missing slot's new pod must carry.

    A live pod knows its slot's history (annotation + in-place restarts). A slot without a live
    pod takes the carry reconcile remembered when it deleted the pod (and replicas removed by
    scaling down or suspending are remembered under :data:`REMOVED_HISTORY`); failing that (the
    controller restarted meanwhile, or someone else deleted the pod), the persisted ``total``
    minus what the live pods explain is given to the first such slot, so the sum, which is all
    that backoffLimit needs, stays exact. Each whole-job restart (``attempt``) counts once,
    beside the slots' own histories.
    """
    known = carries or {}
    performed = known.get(REMOVED_HISTORY, 0) + attempt
    unknown: list[str] = []
    restarts_before: dict[str, int] = {}
    for slot in slots:
        view = by_slot.get(slot.key)
        if view is not None and not view.gone:
            performed += view.slot_restarts
        elif slot.key in known:
            performed += known[slot.key]
            restarts_before[slot.key] = known[slot.key]
        elif view is not None:
            performed += view.slot_restarts
            restarts_before[slot.key] = view.slot_restarts
        else:
            unknown.append(slot.key)
    if unknown:
        remainder = max(0, total - performed)
        for position, key in enumerate(unknown):
            restarts_before[key] = remainder if position == 0 else 0
        performed += remainder
    return performed, {k: v for k, v in restarts_before.items() if v > 0}
