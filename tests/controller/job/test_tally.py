"""controller/job/tally.py: what a reconcile's written status adds to the job metrics."""

from __future__ import annotations

import dataclasses
from typing import Any

from controller.job.observed import observe
from controller.job.pods import JobPods
from controller.job.recovery import HISTORY_LIMIT, stall_entry
from controller.job.status import Outcome, compute_status
from controller.job.tally import (
    admission_wait_seconds,
    exceeded_progress_deadline,
    first_running,
    job_gauges,
    job_state,
    jobs_by_state,
    jobs_progress,
    restarts_by_exit_class,
    seconds_since,
    tally,
)
from controller.runtime.job_series import JOB_STATES, NEW, UNKNOWN_EXIT_CLASS, JobTally
from shared.apitime import format_time
from tests.controller.job.status.status_samples import step
from tests.controller.samples import NOW, NOW_TEXT, job, later, pod, pods_all, view_of


def _condition(ctype: str, status: str = "True") -> dict[str, str]:
    return {"type": ctype, "status": status, "lastTransitionTime": NOW_TEXT}


def _with_conditions(*conditions: dict[str, str], namespace: str = "ns") -> dict[str, object]:
    return job(namespace=namespace, status={"conditions": list(conditions)})


# -- jobs by state --------------------------------------------------------------------------------
def test_a_jobs_state_comes_from_its_conditions_and_is_new_before_any() -> None:
    assert job_state(view_of(job())) == NEW
    running = _with_conditions(_condition("Created"), _condition("Running"))
    assert job_state(view_of(running)) == "Running"
    finished = _with_conditions(_condition("Running", "False"), _condition("Failed"))
    assert job_state(view_of(finished)) == "Failed"


def test_jobs_are_counted_by_namespace_and_state_with_every_state_present() -> None:
    jobs = [
        _with_conditions(_condition("Running")),
        _with_conditions(_condition("Running")),
        _with_conditions(_condition("Succeeded"), namespace="team-b"),
    ]
    counts = jobs_by_state(jobs)
    assert counts[("ns", "Running")] == 2 and counts[("team-b", "Succeeded")] == 1
    assert set(counts) == {(ns, state) for ns in ("ns", "team-b") for state in JOB_STATES}
    assert sum(counts.values()) == 3
    assert jobs_by_state([]) == {}


# -- first Running -------------------------------------------------------------------------------
def test_only_the_first_running_condition_counts_as_a_start() -> None:
    created = {"conditions": [_condition("Created")]}
    running = {"conditions": [_condition("Created"), _condition("Running")]}
    restarting = {"conditions": [_condition("Running", "False"), _condition("Restarting")]}
    assert first_running(created, running)
    assert first_running(None, running)
    assert not first_running(running, running)  # already running: a second write counts nothing
    assert not first_running(restarting, running)  # back after a restart: not a start
    assert not first_running(created, created)


def test_seconds_since_an_api_time_never_negative_and_none_without_one() -> None:
    assert seconds_since(NOW_TEXT, later(90)) == 90
    assert seconds_since(NOW_TEXT, later(-5)) == 0
    assert seconds_since(None, NOW) is None and seconds_since("garbage", NOW) is None


# -- restarts by exit class ----------------------------------------------------------------------
def test_recreated_pods_count_by_their_exit_codes_class() -> None:
    j = job()
    evicted = observe(pod(j, "worker-0", phase="Failed", reason="Evicted"))
    killed = observe(pod(j, "worker-1", phase="Failed", exit_code=137))
    found = restarts_by_exit_class(new_restarts=2, recreated=[evicted, killed], views=[])
    assert found == {"Retryable": 2}


def test_in_place_restarts_take_the_class_the_restarted_pods_share_or_unknown() -> None:
    j = job(restart_policy="OnFailure")
    app_error = observe(pod(j, "worker-0", restarts=2, last_exit_code=1))
    oom = observe(pod(j, "worker-1", restarts=1, last_exit_code=137))
    untouched = observe(pod(j, "server-0"))
    assert restarts_by_exit_class(new_restarts=1, recreated=[], views=[app_error, untouched]) == {
        "Permanent": 1
    }
    assert restarts_by_exit_class(new_restarts=3, recreated=[], views=[app_error, oom]) == {
        UNKNOWN_EXIT_CLASS: 3
    }


def test_the_classes_always_sum_to_the_new_restarts() -> None:
    j = job()
    killed = observe(pod(j, "worker-1", phase="Failed", exit_code=143))
    in_place = observe(pod(j, "worker-0", restarts=1, last_exit_code=1))
    mixed = restarts_by_exit_class(new_restarts=3, recreated=[killed], views=[killed, in_place])
    assert mixed == {"Retryable": 1, "Permanent": 2}
    assert restarts_by_exit_class(new_restarts=0, recreated=[killed], views=[]) == {}


# -- the tally of one reconcile ------------------------------------------------------------------
def _created_at(obj: dict[str, object], text: str = NOW_TEXT) -> dict[str, object]:
    obj["metadata"]["creationTimestamp"] = text  # type: ignore[index]
    return obj


def test_a_job_that_starts_running_tallies_its_start_time_once() -> None:
    created = _created_at(job(status={"conditions": [_condition("Created")]}))
    pods = JobPods.read(pods_all(created))
    outcome = compute_status(view_of(created), pods, now=later(42))
    assert outcome.status["state"] == "Running"
    assert tally(view_of(created), outcome, pods, now=later(42)) == JobTally(
        namespace="ns", started_after=42.0
    )
    # The status written, the next reconcile reads it back: nothing new.
    written = {**created, "status": outcome.status}
    again = compute_status(view_of(written), pods, now=later(50))
    assert tally(view_of(written), again, pods, now=later(50)) == JobTally(namespace="ns")


def test_a_job_that_ends_tallies_its_end_and_how_long_it_took() -> None:
    conditions = [_condition("Created"), _condition("Running")]
    running = _created_at(job(status={"conditions": conditions}))
    pods = [pod(running, "scheduler-0", phase="Succeeded", exit_code=0)]
    pods += [pod(running, key) for key in ("server-0", "worker-0", "worker-1")]
    read = JobPods.read(pods)
    outcome = compute_status(view_of(running), read, now=later(3600))
    assert outcome.became == "Succeeded"
    found = tally(view_of(running), outcome, read, now=later(3600))
    assert (found.ended, found.ended_after, found.started_after) == ("Succeeded", 3600.0, None)


def test_a_first_reconcile_tallies_the_creation_and_a_restart_its_class() -> None:
    fresh = job()
    first = compute_status(view_of(fresh), JobPods(), now=NOW)
    assert tally(view_of(fresh), first, JobPods(), now=NOW) == JobTally(
        namespace="ns", created=True
    )
    outcome = dataclasses.replace(
        Outcome(status={}),
        new_restarts=1,
        recreate=(observe(pod(fresh, "worker-0", phase="Failed", exit_code=137)),),
    )
    assert tally(view_of(fresh), outcome, JobPods(), now=NOW).restarts == {"Retryable": 1}


# -- Kueue's admission wait ----------------------------------------------------------------------
def test_admission_wait_runs_from_the_workloads_creation_or_its_last_requeue() -> None:
    workload: dict[str, object] = {"metadata": {"creationTimestamp": NOW_TEXT}}
    assert admission_wait_seconds(workload, later(30)) == 30
    requeued_at = "2030-01-02T03:05:05Z"  # NOW + 60 s
    workload["status"] = {"conditions": [
        {"type": "Requeued", "status": "True", "lastTransitionTime": requeued_at}]}  # fmt: skip
    assert admission_wait_seconds(workload, later(100)) == 40
    assert admission_wait_seconds({}, NOW) is None


def test_jobs_are_counted_from_their_metadata_and_conditions_as_stored() -> None:
    """The spec is not read (it would need defaulting): a job stored without the webhook, even
    without a spec, is counted by its conditions."""
    bare = {"metadata": {"namespace": "ns"}, "status": {"conditions": [_condition("Running")]}}
    counts = jobs_by_state([bare, {"metadata": {"namespace": "ns"}}])
    assert counts[("ns", "Running")] == 1 and counts[("ns", NEW)] == 1


# -- progress ------------------------------------------------------------------------------------
def _reporting(percentage: int | None, *conditions: dict[str, str], name: str = "j") -> Any:
    return job(name=name, status={
        "conditions": list(conditions),
        "trainerStatus": {"progressPercentage": percentage, "lastUpdatedTime": NOW_TEXT},
    })  # fmt: skip


def test_the_progress_of_unfinished_jobs_that_report_a_percentage_is_read() -> None:
    running = _reporting(40, _condition("Running"), name="running")
    restarting = _reporting(10, _condition("Restarting"), name="restarting")
    finished = _reporting(100, _condition("Running", "False"), _condition("Succeeded"), name="done")
    heartbeat = _reporting(None, _condition("Running"), name="heartbeat")
    found = jobs_progress([running, restarting, finished, heartbeat, job(name="silent")])
    assert found == {("ns", "running"): 40, ("ns", "restarting"): 10}


def test_one_scrape_reads_the_states_and_the_progress_from_one_pass_over_the_cache() -> None:
    running = _reporting(40, _condition("Running"), name="running")
    values = job_gauges(iter([running, job(name="new")]))  # the cache, read once
    assert values.progress == {("ns", "running"): 40}
    assert values.by_state[("ns", "Running")] == 1 and values.by_state[("ns", NEW)] == 1


# -- an exceeded progress deadline ---------------------------------------------------------------
def _stalling(*, backoff: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A Running job with ``progressDeadlineSeconds`` 60 that reported 30 s after ``NOW``,
    and its pods."""
    policy = {"backoffLimit": backoff, "progressDeadlineSeconds": 60}
    stored, _ = step(job(run_policy=policy), [])
    stored, _ = step(stored, pods_all(stored))
    stored["status"]["trainerStatus"] = {"lastUpdatedTime": format_time(later(30))}
    return stored, pods_all(stored)


def _tallied(stored: dict[str, Any], pods: list[dict[str, Any]], seconds: float) -> Any:
    """One reconcile ``seconds`` after ``NOW``: the job as written, and its tally."""
    read = JobPods.read(pods)
    outcome = compute_status(view_of(stored), read, now=later(seconds))
    written = {**stored, "status": outcome.status}
    return written, tally(view_of(stored), outcome, read, now=later(seconds))


def test_each_deadline_restart_is_tallied_once_even_while_progressing_stays_false() -> None:
    stored, pods = _stalling(backoff=6)
    stored, found = _tallied(stored, pods, 91)
    assert found.progress_deadline == "Restarting"
    # The restart is also a retryable restart, as any whole-job restart is.
    assert found.restarts == {"Retryable": 1}
    # Read back (the next reconcile, or a restarted controller): counted already.
    stored, found = _tallied(stored, pods, 92)
    assert found.progress_deadline is None
    # The next attempt runs and never reports: it stalls again, and that stall counts too.
    new = pods_all(stored, attempt=1, uid=None)
    for index, pod_obj in enumerate(new):
        pod_obj["metadata"]["uid"] = f"attempt-1-{index}"
    stored, found = _tallied(stored, new, 100)
    assert stored["status"]["state"] == "Running" and found.progress_deadline is None
    stored, found = _tallied(stored, new, 152)
    assert found.progress_deadline == "Restarting"
    assert stored["status"]["attempt"] == 2


def test_a_deadline_that_spends_the_backoff_limit_is_tallied_as_failed() -> None:
    stored, pods = _stalling(backoff=0)
    stored, found = _tallied(stored, pods, 91)
    assert (found.progress_deadline, found.ended) == ("Failed", "Failed")
    _, found = _tallied(stored, pods, 200)
    assert found.progress_deadline is None and found.ended is None


def test_a_new_deadline_entry_counts_though_the_history_limit_drops_an_old_one() -> None:
    full = [stall_entry(attempt=n, counted=True, stamp=NOW_TEXT) for n in range(HISTORY_LIMIT)]
    newest = stall_entry(attempt=HISTORY_LIMIT, counted=True, stamp=format_time(later(1)))
    assert exceeded_progress_deadline({"restarts": full}, {"restarts": [*full[1:], newest]})
    assert not exceeded_progress_deadline({"restarts": full}, {"restarts": full})
    # A replica's end whose pod reason reads the same is not a deadline.
    ended = {**newest, "pod": "mnist-worker-0", "podUID": "u"}
    assert not exceeded_progress_deadline({}, {"restarts": [ended]})
