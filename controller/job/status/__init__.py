"""Where status is computed: one pure function, job + observed pods + now → status and decisions.

:func:`compute_status` is the whole policy of the operator: when a job is Running, Restarting,
Succeeded or Failed, which failed pods are recreated, how restarts count against
``backoffLimit``, when the deadline and the TTL fire. It does no I/O and reads no clock, so each
rule is a unit test, and reconcile only carries the decisions out.

Inside, as kube's Job controller's ``syncJob``, one state object
(:class:`~controller.job.status.sync.Sync`) goes through named steps, and :func:`_decide` reads
top to bottom as the policy: the data steps find what the rules need (the slots and their pods,
the ends that decide, the restarts, the pods that cannot start), each rule is one ``if`` whose
consequence ends the computation, so the first rule that holds wins, and a job no rule ends goes
on. The status is one typed value (:class:`~controller.job.status.value.JobStatus`) the steps
change and that is serialised once, here. Each rule lives in the module of its concern
(docs/reference/job-contract.md, docs/how-to/survive-failures.md):

- :mod:`.aftermath`: a finished job never changes its outcome again; its pods get their grace
  period, ``replicaStatuses`` follow them, its TTL runs;
- :mod:`.verdicts`: an invalid job fails at once; a permanent failure beats success; what
  success means per mode and ``successPolicy``;
- :mod:`.suspension` and :mod:`.deadline`: a suspended job has no pods and no deadline;
  ``activeDeadlineSeconds`` runs from ``startTime`` and arms a timer;
- :mod:`.backoff` and :mod:`.restart`: how restarts are counted against ``backoffLimit``, and
  what a retryable end restarts (controller/job/recovery.py for whole-job restarts);
- :mod:`.progress_deadline`: a Running job without progress reports restarts as a whole;
- :mod:`.unstartable`: pods that cannot start fail the job after the pod start timeout;
- :mod:`.progress`: Running, and ``replicaStatuses`` as the pods will be once reconcile acted;
- :mod:`.waiting`: ``Pending`` says what holds a job back (Kueue, its gang, the scheduler).
"""

from __future__ import annotations

import dataclasses
import datetime

from controller.job.pods import JobPods
from controller.job.status.aftermath import follow_finished
from controller.job.status.backoff import count_restarts, fail_backoff, over_backoff_limit
from controller.job.status.deadline import deadline_passed, fail_deadline, time_deadline
from controller.job.status.failures import RUNTIME_LOST_REASONS
from controller.job.status.outcome import (
    EXITED_WITH_CODE,
    FAILED_VALIDATION_REASON,
    POD_START_TIMEOUT,
    REPLICAS_ENDED,
    EventSpec,
    EventType,
    Outcome,
    Wait,
)
from controller.job.status.progress import mark_running, progress
from controller.job.status.progress_deadline import check_progress
from controller.job.status.restart import restart
from controller.job.status.suspension import resume, suspend
from controller.job.status.sync import Sync, match_slots, sooner, start
from controller.job.status.unstartable import (
    DEFAULT_POD_START_TIMEOUT,
    fail_unstartable,
    find_unstartable,
    say_unstartable,
    timed_out,
)
from controller.job.status.verdicts import (
    fail_invalid,
    fail_permanent,
    find_causes,
    succeed,
    succeeded,
)
from controller.job.status.waiting import explain_wait
from controller.job.tracking import accounted, settle_views
from controller.job.view import MXJobView

__all__ = [
    "DEFAULT_POD_START_TIMEOUT",
    "EXITED_WITH_CODE",
    "FAILED_VALIDATION_REASON",
    "POD_START_TIMEOUT",
    "REPLICAS_ENDED",
    "RUNTIME_LOST_REASONS",
    "EventSpec",
    "EventType",
    "Outcome",
    "Wait",
    "compute_status",
]


def compute_status(
    job: MXJobView,
    pods: JobPods,
    *,
    now: datetime.datetime,
    pod_start_timeout: float = DEFAULT_POD_START_TIMEOUT,
    held: Wait | None = None,
) -> Outcome:
    """The job's new status and the decisions that go with it.

    ``job`` is the view of the MXJob with its persisted ``status``; a job that never passed the
    validating webhook carries its ``violations`` and fails at once. ``pods`` are the pods it
    controls (by owner uid), from the cache, each observed once (controller/job/pods.py).
    Restarts are counted from the persisted status alone (controller/job/status/backoff.py).
    ``pod_start_timeout`` is the controller's; the job's own annotation
    (``job.pod_start_timeout``) wins. ``held``: what an integration says holds the job back
    (controller/job/status/waiting.py). The outcome carries the slots the spec asks for
    (:attr:`Outcome.slots`), so the plan does not compute them again.

    A pod deleted by someone else and held by the tracking finalizer counts by how it ended,
    as if it had not been deleted (:attr:`~controller.job.observed.PodView.gone`); one whose
    end is never reported counts as failed without an exit code after a while
    (:func:`controller.job.tracking.settle_views`).
    """
    views, unreported_due = settle_views(pods.views, now)
    timeout = job.pod_start_timeout
    sync = start(
        job, views, now=now,
        pod_start_timeout=float(timeout) if timeout is not None else pod_start_timeout,
        held=held,
    )  # fmt: skip
    outcome = _decide(sync)
    return dataclasses.replace(
        outcome,
        status=sync.status.to_json(job),
        requeue_after=sooner(outcome.requeue_after, unreported_due),
        ends_counted=accounted(views),
        slots=tuple(sync.slots),
    )


def _decide(sync: Sync) -> Outcome:
    """The policy, in its order (the module docstring says how to read it)."""
    explain_wait(sync)  # said first, whatever follows; cleared once the job finished
    if sync.job.finished:
        return follow_finished(sync)  # a finished job stays finished
    if sync.job.violations:
        return fail_invalid(sync)  # an invalid job fails before anything runs
    if sync.job.suspended:
        return suspend(sync)  # a suspended job has no pods and no deadline
    resume(sync)
    time_deadline(sync)
    if deadline_passed(sync):
        return fail_deadline(sync)
    match_slots(sync)
    find_causes(sync)
    if sync.permanent:
        return fail_permanent(sync)  # a permanent failure beats success
    if succeeded(sync):
        return succeed(sync)  # success beats the backoff limit
    check_progress(sync)
    count_restarts(sync)
    if over_backoff_limit(sync):
        return fail_backoff(sync)
    unstartable = find_unstartable(sync)
    if unstartable is not None and timed_out(sync, unstartable):
        return fail_unstartable(sync, unstartable)
    say_unstartable(sync, unstartable)
    restart(sync)
    mark_running(sync)
    return progress(sync)  # the job goes on
