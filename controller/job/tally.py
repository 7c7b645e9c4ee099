"""What the per-job metrics count, computed from objects: pure, so each rule is a unit test.

The registry lives in ``controller.runtime.metrics``; this module only decides what to add to it,
from what a reconcile decided and has written. Counting where status is written is what keeps a
controller restart from counting twice: a reconcile counts only what its own status write
changed (a job's first Running condition, its end, the growth of ``restartCount``), and the next
process reads that written status back and finds nothing new to count. A process killed between
the write and the count loses that one observation; none is ever counted twice.

Labels are low-cardinality by design: the job's namespace (``job_namespace``, as
training-operator's counters have it, so it does not clash with the ``namespace`` target label
Prometheus gives the operator's own pod), a state, an exit-code class. Never a job's name, except
in the progress of the jobs still going (:func:`jobs_progress`): a gauge read from the cache at
each scrape, whose series go with their job's end, so there are no more than unfinished jobs.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from controller.job.observed import PodView
from controller.job.pods import JobPods
from controller.job.recovery import PROGRESS_DEADLINE_EXCEEDED, persisted_history
from controller.job.status import Outcome
from controller.job.view import MXJobView
from controller.runtime.job_series import (
    DEADLINE_STATES,
    JOB_STATES,
    NEW,
    UNKNOWN_EXIT_CLASS,
    JobGaugeValues,
    JobTally,
)
from shared.apitime import parse_time
from shared.conditions import ConditionType, current_state, get_condition
from shared.exitcodes import classify_exit
from shared.spec import as_mapping, is_int

REQUEUED: Final = "Requeued"
"""Kueue's Workload condition set when an evicted Workload is queued again."""
FINISHED: Final = ("Succeeded", "Failed")
"""The states a job never leaves (``shared.conditions.current_state``)."""


def _conditions(status: object) -> list[Mapping[str, Any]]:
    found = as_mapping(status).get("conditions")
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def job_state(job: MXJobView) -> str:
    """The job's state from its conditions (not ``status.state``, which an older writer may
    have left out), :data:`NEW` before its first status."""
    return current_state(job.conditions) or NEW


def jobs_by_state(jobs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """(namespace, state) → jobs, every state of :data:`JOB_STATES` present for each namespace
    that has a job, so a state that empties reads 0 instead of vanishing.

    Read from each cached job's namespace and conditions alone, as stored: this runs over every
    job at each scrape, and the spec (read defaulted, controller/job/view.py) decides no state."""
    counts: dict[tuple[str, str], int] = {}
    for cached in jobs:
        namespace = str(as_mapping(cached.get("metadata")).get("namespace") or "")
        if (namespace, NEW) not in counts:
            counts.update({(namespace, state): 0 for state in JOB_STATES})
        key = (namespace, current_state(_conditions(cached.get("status"))) or NEW)
        counts[key] = counts.get(key, 0) + 1
    return counts


def jobs_progress(jobs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """(namespace, name) → ``status.trainerStatus.progressPercentage`` of each cached job that
    reported one and has not finished.

    A finished job keeps its last report in status, but its progress says nothing more: leaving
    it out keeps the series (labelled by the job's name) to the jobs still going, however many
    finished ones wait for their TTL. A report without a percentage (a heartbeat) has no value
    to show. Read as stored, like :func:`jobs_by_state`."""
    found: dict[tuple[str, str], int] = {}
    for cached in jobs:
        status = as_mapping(cached.get("status"))
        percentage = as_mapping(status.get("trainerStatus")).get("progressPercentage")
        if not is_int(percentage) or current_state(_conditions(status)) in FINISHED:
            continue
        metadata = as_mapping(cached.get("metadata"))
        found[(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))] = percentage
    return found


def job_gauges(jobs: Iterable[Mapping[str, Any]]) -> JobGaugeValues:
    """What the leader's job gauges show of the cached jobs at one scrape
    (``controller.runtime.metrics.Metrics.track_jobs``)."""
    cached = list(jobs)
    return JobGaugeValues(by_state=jobs_by_state(cached), progress=jobs_progress(cached))


def _deadline_entries(status: object) -> set[tuple[object, object]]:
    """The (attempt, time) of each ``status.restarts`` entry of an exceeded progress deadline
    (controller/job/recovery.py's ``stall_entry``: it names no pod)."""
    return {
        (entry.get("attempt"), entry.get("time"))
        for entry in persisted_history(as_mapping(status))
        if entry.get("reason") == PROGRESS_DEADLINE_EXCEEDED and "pod" not in entry
    }


def exceeded_progress_deadline(old_status: object, new_status: object) -> bool:
    """The new status records a progress deadline exceeded now: an entry of its restart history
    the old one lacks.

    The history, not the ``Progressing`` condition: an attempt that never reports stalls again
    with the condition still False from the stall before, and every stall writes its own entry,
    restarting the job or failing it (controller/job/status/backoff.py). Each entry has its own
    attempt and time, so a status read back (the next reconcile, a restarted controller) holds
    it already and counts nothing again; the newest entry is never the one the history's limit
    drops."""
    return bool(_deadline_entries(new_status) - _deadline_entries(old_status))


def first_running(old_status: object, new_status: object) -> bool:
    """The job runs for the first time: Running is True now and there was no Running condition
    before (after a restart or a resume the condition exists, False)."""
    new = get_condition(_conditions(new_status), ConditionType.RUNNING)
    before = get_condition(_conditions(old_status), ConditionType.RUNNING)
    return before is None and new is not None and new.get("status") == "True"


def seconds_since(value: object, now: datetime.datetime) -> float | None:
    """Seconds from an API time to ``now`` (never negative: clocks differ), None without one."""
    moment = parse_time(value)
    return None if moment is None else max(0.0, (now - moment).total_seconds())


def restarts_by_exit_class(
    *, new_restarts: int, recreated: Sequence[PodView], views: Sequence[PodView]
) -> dict[str, int]:
    """``new_restarts`` split by the exit-code class of the run that ended; the values sum to it.

    A recreated pod's class is its exit code's (no exit code: evicted or preempted, which
    ``shared.exitcodes`` calls retryable). The rest are in-place restarts by the kubelet; the pods
    tell only their last run's exit code, and not which of them restarted since the last count,
    so they get the class the in-place restarted pods share, or :data:`UNKNOWN_EXIT_CLASS` when
    they differ.
    """
    found: dict[str, int] = {}
    left = max(0, new_restarts)
    for view in recreated[:left]:
        name = classify_exit(view.exit_code).value
        found[name] = found.get(name, 0) + 1
    left -= min(left, len(recreated))
    if left:
        ids = {v.uid for v in recreated}
        classes = {
            classify_exit(v.last_exit_code).value
            if v.last_exit_code is not None
            else UNKNOWN_EXIT_CLASS
            for v in views
            if v.in_place_restarts > 0 and v.uid not in ids
        }
        name = classes.pop() if len(classes) == 1 else UNKNOWN_EXIT_CLASS
        found[name] = found.get(name, 0) + left
    return found


def tally(
    job: MXJobView,
    outcome: Outcome,
    pods: JobPods,
    *,
    now: datetime.datetime,
) -> JobTally:
    """The metrics of one reconcile of ``job`` (its status before the write) that wrote
    ``outcome.status``; ``pods`` are the job's own pods from the cache."""
    created_at = job.created_at or None
    started = first_running(job.status, outcome.status)
    restarts: dict[str, int] = {}
    if outcome.new_restarts > 0:
        in_place = outcome.new_restarts > len(outcome.recreate)
        restarts = restarts_by_exit_class(
            new_restarts=outcome.new_restarts,
            recreated=outcome.recreate,
            views=pods.views if in_place else (),
        )
    deadline = None
    if exceeded_progress_deadline(job.status, outcome.status):
        restarting, failed = DEADLINE_STATES
        deadline = failed if outcome.became == failed else restarting
    return JobTally(
        namespace=job.namespace,
        created=outcome.created,
        ended=outcome.became,
        started_after=seconds_since(created_at, now) if started else None,
        ended_after=seconds_since(created_at, now) if outcome.became else None,
        restarts=restarts,
        progress_deadline=deadline,
    )


def admission_wait_seconds(workload: Mapping[str, Any], now: datetime.datetime) -> float | None:
    """Seconds a job's Workload waited for admission, as Kueue measures its own wait time: from
    the Workload's creation, or from its last ``Requeued`` transition after an eviction."""
    requeued = get_condition(_conditions(workload.get("status")), REQUEUED)
    if requeued is not None and parse_time(requeued.get("lastTransitionTime")) is not None:
        return seconds_since(requeued.get("lastTransitionTime"), now)
    return seconds_since(as_mapping(workload.get("metadata")).get("creationTimestamp"), now)
