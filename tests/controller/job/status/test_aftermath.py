"""A finished job: its outcome frozen, its pods followed through their grace period, its TTL."""

from __future__ import annotations

from shared.apitime import format_time
from tests.controller.job.status.status_samples import Obj, step, untracked
from tests.controller.samples import job, later, pod, pods_all


def test_pods_that_end_within_their_grace_period_after_success_are_counted() -> None:
    """ps-lite's Scheduler exits with the workers: their own exits come a moment later."""
    stored, _ = step(job(), [])
    scheduler = pod(stored, "scheduler-0", phase="Succeeded", exit_code=0)
    stored, _ = step(stored, [scheduler, *pods_all(stored)[1:]], now=later(10))
    ended = [
        scheduler,
        pod(stored, "server-0", phase="Succeeded", exit_code=0),
        pod(stored, "worker-0", phase="Succeeded", exit_code=0),
        pod(stored, "worker-1", phase="Running"),
    ]
    stored, outcome = step(stored, ended, now=later(12))
    assert outcome.status["state"] == "Succeeded" and outcome.became is None
    assert outcome.status["completionTime"] == format_time(later(10))
    workers = outcome.status["replicaStatuses"]["Worker"]
    assert (workers["active"], workers["succeeded"]) == (1, 1)
    assert outcome.requeue_after == 28 and not outcome.overdue
    assert sorted(e.message for e in outcome.events) == [
        "1 Server replica(s) ended after MXJob mnist finished: 1 succeeded, 0 failed, "
        "0 still running.",
        "1 Worker replica(s) ended after MXJob mnist finished: 1 succeeded, 0 failed, "
        "1 still running.",
    ]
    assert {e.reason for e in outcome.events} == {"ReplicasEnded"}
    # worker-1 is still running when its grace period ends: cleanPodPolicy Running stops it.
    stored, outcome = step(stored, ended, now=later(41))
    assert outcome.overdue == {"mnist-worker-1"} and outcome.settled
    assert outcome.status["replicaStatuses"]["Worker"]["active"] == 0
    assert not outcome.events
    # Deleted by cleanPodPolicy All later, or by anyone: the counts keep how replicas ended.
    _, outcome = step(stored, [], now=later(60))
    assert outcome.status["replicaStatuses"]["Worker"]["succeeded"] == 1
    assert outcome.status["replicaStatuses"]["Server"]["succeeded"] == 1


def test_the_grace_period_is_the_pods_own_termination_grace_period() -> None:
    stored, _ = step(job(), [])
    running = pods_all(stored)
    for built in running:
        built["spec"]["terminationGracePeriodSeconds"] = 5
    running[3]["spec"]["terminationGracePeriodSeconds"] = 0
    done = [pod(stored, "scheduler-0", phase="Succeeded", exit_code=0), *running[1:]]
    _, outcome = step(stored, done, now=later(10))
    assert outcome.overdue == {"mnist-worker-1"}
    assert outcome.requeue_after == 5


def test_with_clean_pod_policy_none_running_pods_stay_counted_active_after_their_grace() -> None:
    stored, _ = step(job(run_policy={"cleanPodPolicy": "None"}), [])
    done = [pod(stored, "scheduler-0", phase="Succeeded", exit_code=0), *pods_all(stored)[1:]]
    stored, outcome = step(stored, done)
    assert outcome.requeue_after is None  # nothing to do when a grace period ends
    _, outcome = step(stored, done, now=later(600))
    assert not outcome.overdue
    assert outcome.status["replicaStatuses"]["Worker"]["active"] == 2


def test_a_finished_job_never_changes_its_outcome_again() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, [pod(stored, "worker-0", phase="Failed", exit_code=2)])
    _, outcome = step(
        stored, [pod(stored, "scheduler-0", phase="Succeeded", exit_code=0)], now=later(100)
    )
    unchanged = ("conditions", "state", "completionTime", "startTime", "restartCount")
    assert {k: outcome.status[k] for k in unchanged} == {k: stored["status"][k] for k in unchanged}
    assert outcome.finished and outcome.became is None
    # Only the replica counts follow the pods: the gone worker's failure stays counted.
    assert outcome.status["replicaStatuses"]["Worker"]["failed"] == 1
    assert outcome.status["replicaStatuses"]["Scheduler"]["succeeded"] == 1
    assert [e.reason for e in outcome.events] == ["ReplicasEnded"]
    _, again = step({**stored, "status": outcome.status}, [], now=later(200))
    assert again.status == outcome.status and not again.events


def test_final_replica_statuses_record_how_replicas_ended_even_when_cleanup_deletes_them() -> None:
    stored, _ = step(job(run_policy={"cleanPodPolicy": "All", "backoffLimit": 6}), [])
    pods = [
        pod(stored, "scheduler-0"),
        pod(stored, "server-0"),
        pod(stored, "worker-0", phase="Failed", exit_code=1),
        pod(stored, "worker-1", phase="Succeeded", exit_code=0),
    ]
    stored, outcome = step(stored, pods)
    assert outcome.became == "Failed"

    def counts(status: Obj) -> Obj:
        return {
            t: {k: v for k, v in c.items() if k != "selector"}
            for t, c in status["replicaStatuses"].items()
        }

    assert counts(outcome.status) == {
        "Scheduler": {"active": 1, "succeeded": 0, "failed": 0},
        "Server": {"active": 1, "succeeded": 0, "failed": 0},
        "Worker": {"active": 0, "succeeded": 1, "failed": 1},
    }
    # The grace period is over; cleanup stops the scheduler and server and deletes every pod.
    stored, outcome = step(stored, pods, now=later(31))
    assert outcome.overdue == {"mnist-scheduler-0", "mnist-server-0"}
    _, outcome = step(stored, [], now=later(32))
    assert counts(outcome.status) == {
        "Scheduler": {"active": 0, "succeeded": 0, "failed": 0},
        "Server": {"active": 0, "succeeded": 0, "failed": 0},
        "Worker": {"active": 0, "succeeded": 1, "failed": 1},
    }


def test_ttl_after_finished_arms_a_timer_then_asks_for_deletion() -> None:
    stored, _ = step(job(run_policy={"ttlSecondsAfterFinished": 3}), [])
    stored, outcome = step(
        stored, [pod(stored, "scheduler-0", phase="Succeeded", exit_code=0)], now=later(10)
    )
    assert outcome.requeue_after == 3 and not outcome.delete_job
    _, outcome = step(stored, [], now=later(12))
    assert outcome.requeue_after == 1 and not outcome.delete_job
    _, outcome = step(stored, [], now=later(13))
    assert outcome.delete_job


def test_after_success_a_deleted_worker_that_ended_0_counts_as_succeeded() -> None:
    stored, _ = step(job(), [])
    scheduler = pod(stored, "scheduler-0", phase="Succeeded", exit_code=0)
    stored, _ = step(stored, [scheduler, *pods_all(stored)[1:]], now=later(10))
    held = pod(stored, "worker-0", phase="Succeeded", exit_code=0, terminating=True)
    let_go = untracked(pod(stored, "worker-1", phase="Failed", exit_code=143, terminating=True))
    _, outcome = step(stored, [scheduler, pods_all(stored)[1], held, let_go], now=later(12))
    workers = outcome.status["replicaStatuses"]["Worker"]
    assert (workers["succeeded"], workers["failed"]) == (1, 0)
    assert outcome.ends_counted == {"mnist-scheduler-0", "mnist-worker-0"}


def test_an_mxtune_job_gives_its_tuner_servers_their_grace_period_after_the_tuner_succeeds() -> (
    None
):
    tune = job(mode="MXTune", replicas={"TunerTracker": 1, "TunerServer": 2, "Tuner": 1})
    stored, _ = step(tune, [])
    running = [
        pod(stored, "tunertracker-0"),
        pod(stored, "tunerserver-0"),
        pod(stored, "tunerserver-1"),
    ]
    tuner_done = pod(stored, "tuner-0", phase="Succeeded", exit_code=0)
    stored, outcome = step(stored, [*running, tuner_done])
    assert outcome.became == "Succeeded" and not outcome.overdue
    assert outcome.status["replicaStatuses"]["TunerServer"]["active"] == 2
    ended = [pod(stored, "tunerserver-0", phase="Failed", exit_code=143), running[0], running[2]]
    stored, outcome = step(stored, [*ended, tuner_done], now=later(5))
    assert outcome.status["state"] == "Succeeded"  # a server's end after success changes nothing
    servers = outcome.status["replicaStatuses"]["TunerServer"]
    assert (servers["active"], servers["failed"]) == (1, 1)
    assert [e.type for e in outcome.events] == ["Warning"]
    _, outcome = step(stored, [*ended, tuner_done], now=later(30))
    assert outcome.overdue == {"mnist-tunertracker-0", "mnist-tunerserver-1"}
