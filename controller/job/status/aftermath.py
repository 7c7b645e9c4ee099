"""A job that finishes, and a finished job: its outcome is frozen, its pods are followed, its
TTL runs.

A finished job (Succeeded or Failed True) never changes its outcome again. Its pods still
running get their ``terminationGracePeriodSeconds`` to end by themselves before cleanPodPolicy
deletes them, and ``replicaStatuses`` follow them until every pod has ended; then
``ttlSecondsAfterFinished`` deletes the job (docs/how-to/survive-failures.md).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.job.observed import PodView
from controller.job.status.counts import Counts, empty_counts, recorded
from controller.job.status.outcome import REPLICAS_ENDED, EventSpec, EventType, Outcome
from controller.job.status.sync import Sync, sooner
from controller.job.view import MXJobView
from shared.apitime import parse_time
from shared.conditions import ConditionType, Reason, get_condition
from shared.constants import CleanPodPolicy, ReplicaType
from shared.spec import as_mapping


@dataclass(frozen=True)
class Aftermath:
    """The pods of a finished job: how each replica type ended so far, and what is still due."""

    counts: Counts
    overdue: frozenset[str]
    settled: bool
    next_due: float | None
    """Seconds until the next still-running pod's grace period ends."""


def aftermath(
    job: MXJobView,
    views: Sequence[PodView],
    *,
    completion: datetime.datetime,
    now: datetime.datetime,
    stop_active: bool,
    previous: Mapping[str, Any] | None = None,
) -> Aftermath:
    """Follow the pods of a finished job until every one has ended.

    ps-lite's Scheduler exits together with the workers, so the job often succeeds while the
    Workers are still writing their last lines and exit codes. Each pod still active gets its
    own ``terminationGracePeriodSeconds`` from ``completionTime`` to end by itself; only then
    does cleanPodPolicy Running or All delete it (the deadline stops every pod at once). Pods
    that end meanwhile are counted, and counts only grow (``previous`` is the finished status
    written before): the final replicaStatuses keep how each replica ended even after
    cleanPodPolicy All deleted it.
    """
    counts = empty_counts(job)
    deletes_active = stop_active or job.run_policy.clean_pod_policy is not CleanPodPolicy.NONE
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
            bucket[key] = max(bucket[key], recorded(as_mapping(previous), rtype, key))
    return Aftermath(
        counts=counts,
        overdue=frozenset(overdue),
        settled=not waits,
        next_due=min(waits) if waits else None,
    )


def ended_after_finish_events(
    name: str, previous: Mapping[str, Any], counts: Mapping[ReplicaType, dict[str, int]]
) -> list[EventSpec]:
    """One event per replica type with pods that ended since the last status was written."""
    events: list[EventSpec] = []
    for rtype, bucket in counts.items():
        more_succeeded = bucket["succeeded"] - recorded(previous, rtype, "succeeded")
        more_failed = bucket["failed"] - recorded(previous, rtype, "failed")
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


def finish(
    sync: Sync,
    ctype: ConditionType,
    reason: str,
    message: str,
    *,
    stop_active: bool = False,
) -> Outcome:
    """The job finishes now: its outcome, its pods' aftermath, its TTL."""
    sync.condition(ctype, status=True, reason=reason, message=message)
    status = sync.status
    status.completion_time = sync.stamp
    status.start_time = status.start_time or sync.stamp
    status.restart_count = sync.restarts_so_far
    after = aftermath(
        sync.job, sync.views, completion=sync.now, now=sync.now, stop_active=stop_active
    )
    status.replica_counts = after.counts
    event_type: EventType = "Normal" if ctype is ConditionType.SUCCEEDED else "Warning"
    sync.events.append(EventSpec(event_type, reason, message))
    ttl = sync.job.run_policy.ttl_seconds_after_finished
    return Outcome(
        finished=True,
        stop_active=stop_active,
        became=ctype.value,
        created=sync.created,
        new_restarts=sync.restarts_so_far - sync.persisted_restarts,
        events=tuple(sync.events),
        requeue_after=sooner(float(ttl) if ttl is not None and ttl > 0 else None, after.next_due),
        delete_job=ttl == 0,
        overdue=after.overdue,
        settled=after.settled,
        stale=tuple(sync.stale),
    )


def _ttl_due(sync: Sync, completion: datetime.datetime) -> tuple[float | None, bool]:
    """Seconds until ``ttlSecondsAfterFinished`` deletes the job, and whether it is due now."""
    ttl = sync.job.run_policy.ttl_seconds_after_finished
    if ttl is None:
        return None, False
    remaining = (completion + datetime.timedelta(seconds=ttl) - sync.now).total_seconds()
    return (None, True) if remaining <= 0 else (remaining, False)


def follow_finished(sync: Sync) -> Outcome:
    """A finished job's outcome is frozen; its pods are followed until they ended, its TTL runs."""
    status = sync.status
    status.completion_time = status.completion_time or sync.stamp
    failed = get_condition(status.conditions, ConditionType.FAILED) or {}
    stop_active = (
        failed.get("status") == "True" and failed.get("reason") == Reason.DEADLINE_EXCEEDED
    )
    completion = parse_time(status.completion_time) or sync.now
    previous = as_mapping(sync.job.status.get("replicaStatuses"))
    after = aftermath(
        sync.job,
        sync.views,
        completion=completion,
        now=sync.now,
        stop_active=stop_active,
        previous=previous,
    )
    status.replica_counts = after.counts
    requeue_after, delete_job = _ttl_due(sync, completion)
    return Outcome(
        finished=True,
        stop_active=stop_active,
        created=sync.created,
        events=tuple(ended_after_finish_events(sync.job.name, previous, after.counts)),
        requeue_after=sooner(requeue_after, after.next_due),
        delete_job=delete_job,
        overdue=after.overdue,
        settled=after.settled,
        stale=tuple(sync.stale),
    )
