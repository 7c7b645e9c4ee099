"""The verdicts: what success means per mode, a permanent failure beats it, an invalid job fails."""

from __future__ import annotations

from controller.job.pods import JobPods
from controller.job.status import FAILED_VALIDATION_REASON, compute_status
from shared.apitime import format_time
from tests.controller.job.status.status_samples import cond, step, true_exclusive
from tests.controller.samples import NOW, job, later, pod, pods_all, view_of


def test_mxtrain_succeeds_when_the_scheduler_exits_0() -> None:
    stored, _ = step(job(), [])
    running = pods_all(stored)
    done = [pod(stored, "scheduler-0", phase="Succeeded", exit_code=0), *running[1:]]
    _, outcome = step(stored, done, now=later(10))
    assert outcome.became == "Succeeded" and outcome.finished
    assert outcome.status["state"] == "Succeeded"
    assert outcome.status["completionTime"] == format_time(later(10))
    assert true_exclusive(outcome.status) == ["Succeeded"]
    assert [e.reason for e in outcome.events] == ["MXJobSucceeded"]
    # The still-running pods get their grace period (30 s by default) to end by themselves.
    assert outcome.status["replicaStatuses"]["Worker"]["active"] == 2
    assert outcome.status["replicaStatuses"]["Scheduler"]["succeeded"] == 1
    assert not outcome.overdue and not outcome.settled
    assert outcome.requeue_after == 30


def test_all_workers_policy_waits_for_every_worker_not_the_scheduler() -> None:
    stored, _ = step(job(success_policy="AllWorkers"), [])
    scheduler_done = [
        pod(stored, "scheduler-0", phase="Succeeded", exit_code=0),
        pod(stored, "server-0"),
        pod(stored, "worker-0"),
        pod(stored, "worker-1"),
    ]
    stored, outcome = step(stored, scheduler_done)
    assert not outcome.finished
    workers_done = [
        pod(stored, "scheduler-0"),
        pod(stored, "server-0"),
        pod(stored, "worker-0", phase="Succeeded", exit_code=0),
        pod(stored, "worker-1", phase="Succeeded", exit_code=0),
    ]
    _, outcome = step(stored, workers_done)
    assert outcome.became == "Succeeded"


def test_single_node_job_succeeds_when_its_worker_exits_0() -> None:
    stored, _ = step(job(replicas={"Worker": 1}), [])
    _, outcome = step(stored, [pod(stored, "worker-0", phase="Succeeded", exit_code=0)])
    assert outcome.became == "Succeeded"


def test_mxtune_succeeds_when_the_tuner_exits_0() -> None:
    tune = job(mode="MXTune", replicas={"TunerTracker": 1, "TunerServer": 1, "Tuner": 1})
    stored, _ = step(tune, [])
    tracker_done = [
        pod(stored, "tunertracker-0", phase="Succeeded", exit_code=0),
        pod(stored, "tunerserver-0"),
        pod(stored, "tuner-0"),
    ]
    stored, outcome = step(stored, tracker_done)
    assert not outcome.finished
    tuner_done = [
        pod(stored, "tunertracker-0"),
        pod(stored, "tunerserver-0"),
        pod(stored, "tuner-0", phase="Succeeded", exit_code=0),
    ]
    _, outcome = step(stored, tuner_done)
    assert outcome.became == "Succeeded"


def test_a_worker_exiting_1_fails_the_job_even_when_the_scheduler_exits_0() -> None:
    stored, _ = step(job(), [])
    both = [
        pod(stored, "scheduler-0", phase="Succeeded", exit_code=0),
        pod(stored, "server-0"),
        pod(stored, "worker-0", phase="Failed", exit_code=1),
        pod(stored, "worker-1"),
    ]
    _, outcome = step(stored, both)
    assert outcome.became == "Failed"
    failed = cond(outcome.status, "Failed")
    assert failed is not None and failed["reason"] == "MXJobFailed"
    assert "mnist-worker-0" in failed["message"] and "code 1 (general error)" in failed["message"]
    assert cond(outcome.status, "Succeeded") is None
    assert {e.reason for e in outcome.events} == {"ExitedWithCode", "MXJobFailed"}


def test_never_policy_fails_the_job_on_a_retryable_exit() -> None:
    stored, _ = step(job(restart_policy="Never"), [])
    _, outcome = step(
        stored, [*pods_all(stored)[:3], pod(stored, "worker-1", phase="Failed", exit_code=137)]
    )
    assert outcome.became == "Failed" and not outcome.recreate
    exited = next(e for e in outcome.events if e.reason == "ExitedWithCode")
    assert "restartPolicy Never" in exited.message


def test_a_job_stored_without_validation_fails_with_the_violations_as_reason() -> None:
    invalid = view_of(job(), violations=("spec.jobMode: is required",))
    outcome = compute_status(invalid, JobPods(), now=NOW)
    failed = cond(outcome.status, "Failed")
    assert failed is not None and failed["reason"] == FAILED_VALIDATION_REASON
    assert "spec.jobMode: is required" in failed["message"]
    assert outcome.status["state"] == "Failed"
