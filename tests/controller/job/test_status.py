"""compute_status: the operator's policy, one behaviour per test (no I/O, fixed clock)."""

from __future__ import annotations

import copy
import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.job.desired import desired_slots
from controller.job.status import (
    FAILED_VALIDATION_REASON,
    REMOVED_HISTORY,
    Outcome,
    compute_status,
)
from shared.apitime import format_time
from tests.controller.samples import NOW, NOW_TEXT, job, later, pod, pods_all

Obj = dict[str, Any]


def step(
    job_obj: Obj,
    pods: list[Obj],
    *,
    now: datetime.datetime = NOW,
    carries: dict[str, int] | None = None,
) -> tuple[Obj, Outcome]:
    """Compute, and return the job with the new status stored (as reconcile would)."""
    outcome = compute_status(job_obj, pods, now=now, carries=carries)
    stored = copy.deepcopy(job_obj)
    stored["status"] = copy.deepcopy(outcome.status)
    return stored, outcome


def cond(status: Obj, ctype: str) -> Obj | None:
    return next((c for c in status.get("conditions", []) if c["type"] == ctype), None)


def true_exclusive(status: Obj) -> list[str]:
    return [
        c["type"]
        for c in status.get("conditions", [])
        if c["type"] in ("Running", "Restarting", "Succeeded", "Failed") and c["status"] == "True"
    ]


# -- creation and running ---------------------------------------------------------------------
def test_a_new_job_is_created_with_start_time_and_every_replica_counted_active() -> None:
    _, outcome = step(job(), [])
    status = outcome.status
    assert outcome.created
    assert status["state"] == "Created"
    assert cond(status, "Created")["reason"] == "MXJobCreated"  # type: ignore[index]
    assert status["startTime"] == NOW_TEXT
    assert status["restartCount"] == 0
    assert status["replicaStatuses"]["Worker"] == {
        "active": 2,
        "succeeded": 0,
        "failed": 0,
        "selector": (
            "training.kubeflow.org/job-name=mnist,training.kubeflow.org/replica-type=worker"
        ),
    }


def test_recomputing_with_nothing_new_changes_nothing() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    _, outcome = step(stored, pods_all(stored), now=later(30))
    assert outcome.status == stored["status"]
    assert not outcome.events and not outcome.recreate


def test_the_job_runs_once_every_replica_runs() -> None:
    stored, _ = step(job(), [])
    pending = [*pods_all(stored)[:-1], pod(stored, "worker-1", phase="Pending")]
    stored, outcome = step(stored, pending)
    assert outcome.status["state"] == "Created"
    _, outcome = step(stored, pods_all(stored))
    assert outcome.status["state"] == "Running"
    assert cond(outcome.status, "Running")["message"] == "MXJob mnist is running."  # type: ignore[index]


# -- success ----------------------------------------------------------------------------------
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


# -- failure ----------------------------------------------------------------------------------
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


def test_never_policy_fails_the_job_on_a_retryable_exit() -> None:
    stored, _ = step(job(restart_policy="Never"), [])
    _, outcome = step(
        stored, [*pods_all(stored)[:3], pod(stored, "worker-1", phase="Failed", exit_code=137)]
    )
    assert outcome.became == "Failed" and not outcome.recreate
    exited = next(e for e in outcome.events if e.reason == "ExitedWithCode")
    assert "restartPolicy Never" in exited.message


def test_a_job_stored_without_validation_fails_with_the_violations_as_reason() -> None:
    outcome = compute_status(job(), [], now=NOW, violations=["spec.jobMode: is required"])
    failed = cond(outcome.status, "Failed")
    assert failed is not None and failed["reason"] == FAILED_VALIDATION_REASON
    assert "spec.jobMode: is required" in failed["message"]
    assert outcome.status["state"] == "Failed"


# -- restarts ---------------------------------------------------------------------------------
def test_exit_code_137_recreates_the_pod_and_shows_restarting() -> None:
    stored, _ = step(job(restart_scope="Replica"), [])
    stored, _ = step(stored, pods_all(stored))
    failed = pod(stored, "worker-1", phase="Failed", exit_code=137)
    _, outcome = step(stored, [*pods_all(stored)[:3], failed])
    assert [v.name for v in outcome.recreate] == ["mnist-worker-1"]
    assert outcome.restarts_before == {"worker-1": 1}
    assert outcome.status["restartCount"] == 1 and outcome.new_restarts == 1
    assert outcome.status["state"] == "Restarting"
    assert true_exclusive(outcome.status) == ["Restarting"]
    assert "137 (SIGKILL)" in cond(outcome.status, "Restarting")["message"]  # type: ignore[index]
    assert {e.reason for e in outcome.events} == {"ExitedWithCode", "MXJobRestarting"}
    # The pod about to be recreated counts as active: the next status needs no new write.
    assert outcome.status["replicaStatuses"]["Worker"]["active"] == 2


def test_an_evicted_pod_is_recreated_under_exit_code() -> None:
    stored, _ = step(job(restart_scope="Replica"), [])
    evicted = pod(stored, "server-0", phase="Failed", reason="Evicted")
    _, outcome = step(
        stored,
        [pod(stored, "scheduler-0"), evicted, pod(stored, "worker-0"), pod(stored, "worker-1")],
    )
    assert [v.name for v in outcome.recreate] == ["mnist-server-0"]
    assert "Evicted" in cond(outcome.status, "Restarting")["message"]  # type: ignore[index]


def test_in_place_restarts_under_on_failure_count_toward_the_backoff_limit() -> None:
    stored, _ = step(job(restart_policy="OnFailure", run_policy={"backoffLimit": 3}), [])
    stored, outcome = step(
        stored, [*pods_all(stored)[:3], pod(stored, "worker-1", restarts=2, last_exit_code=1)]
    )
    assert outcome.status["restartCount"] == 2 and not outcome.finished
    assert not outcome.recreate
    _, outcome = step(stored, [*pods_all(stored)[:3], pod(stored, "worker-1", restarts=4)])
    assert outcome.became == "Failed"
    assert cond(outcome.status, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert outcome.status["restartCount"] == 4


def test_the_third_retryable_failure_with_backoff_limit_2_fails_the_job() -> None:
    stored, _ = step(
        job(
            replicas={"Scheduler": 1, "Worker": 1},
            run_policy={"backoffLimit": 2},
            restart_scope="Replica",
        ),
        [],
    )
    for restarts_before in (0, 1):
        failed = pod(
            stored, "worker-0", phase="Failed", exit_code=143, restarts_before=restarts_before
        )
        stored, outcome = step(stored, [pod(stored, "scheduler-0"), failed])
        assert outcome.recreate and outcome.status["restartCount"] == restarts_before + 1
    failed = pod(stored, "worker-0", phase="Failed", exit_code=137, restarts_before=2)
    _, outcome = step(stored, [pod(stored, "scheduler-0"), failed])
    assert outcome.became == "Failed" and not outcome.recreate
    assert cond(outcome.status, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert outcome.status["restartCount"] == 2
    # The running scheduler has its grace period to end, then cleanPodPolicy stops it.
    assert outcome.status["replicaStatuses"]["Scheduler"]["active"] == 1
    stored["status"] = outcome.status
    _, outcome = step(stored, [pod(stored, "scheduler-0"), failed], now=later(30))
    assert outcome.overdue == {"mnist-scheduler-0"}
    assert outcome.status["replicaStatuses"]["Scheduler"]["active"] == 0


def test_a_restart_persisted_before_its_pod_was_deleted_is_not_counted_twice() -> None:
    """The controller died after writing restartCount 1 but before deleting the failed pod."""
    stored, _ = step(job(restart_scope="Replica"), [])
    failed = pod(stored, "worker-0", phase="Failed", exit_code=137)
    stored, outcome = step(
        stored,
        [pod(stored, "scheduler-0"), pod(stored, "server-0"), failed, pod(stored, "worker-1")],
    )
    assert outcome.status["restartCount"] == 1
    _, again = step(
        stored,
        [pod(stored, "scheduler-0"), pod(stored, "server-0"), failed, pod(stored, "worker-1")],
    )
    assert again.status["restartCount"] == 1 and again.new_restarts == 0
    assert [v.name for v in again.recreate] == ["mnist-worker-0"]


def test_a_slot_emptied_while_the_controller_was_down_inherits_the_persisted_restarts() -> None:
    """The controller died between deleting the failed pod and creating its replacement."""
    stored, _ = step(job(restart_scope="Replica"), [])
    failed = pod(stored, "worker-0", phase="Failed", exit_code=137)
    others = [pod(stored, "scheduler-0"), pod(stored, "server-0"), pod(stored, "worker-1")]
    stored, _ = step(stored, [*others, failed])
    _, outcome = step(stored, others)  # no carries: a fresh controller
    assert outcome.restarts_before == {"worker-0": 1}
    assert outcome.status["restartCount"] == 1
    # The replacement carries the history, so the next failure makes it 2, not 1.
    replacement = pod(stored, "worker-0", phase="Failed", exit_code=137, restarts_before=1)
    _, outcome = step(stored, [*others, replacement])
    assert outcome.status["restartCount"] == 2


def test_the_remembered_carry_of_a_recreated_slot_wins_over_the_estimate() -> None:
    stored, _ = step(job(), [])
    others = [pod(stored, "scheduler-0"), pod(stored, "server-0"), pod(stored, "worker-1")]
    stored["status"]["restartCount"] = 5  # history of replicas scaled away long ago
    _, outcome = step(stored, others, carries={"worker-0": 3})
    assert outcome.restarts_before == {"worker-0": 3}
    assert outcome.status["restartCount"] == 5


# -- deadline and TTL -------------------------------------------------------------------------
def test_the_deadline_arms_a_timer_then_fails_the_job_and_stops_its_pods() -> None:
    stored, outcome = step(job(run_policy={"activeDeadlineSeconds": 5}), [])
    assert outcome.requeue_after == 5
    stored, outcome = step(stored, pods_all(stored), now=later(3))
    assert outcome.requeue_after == 2
    _, outcome = step(stored, pods_all(stored), now=later(5))
    assert outcome.became == "Failed" and outcome.stop_active
    failed = cond(outcome.status, "Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"
    assert [e.reason for e in outcome.events] == ["DeadlineExceeded"]


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


# -- suspend ----------------------------------------------------------------------------------
def test_suspend_stops_running_and_resume_resets_the_start_time() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    stored["spec"]["runPolicy"]["suspend"] = True
    stored, outcome = step(stored, pods_all(stored), now=later(5))
    assert outcome.suspended
    assert [e.reason for e in outcome.events] == ["MXJobSuspended"]
    assert outcome.status["state"] == "Suspended"
    assert cond(outcome.status, "Running")["status"] == "False"  # type: ignore[index]
    assert outcome.status["replicaStatuses"]["Worker"]["active"] == 0
    stored["spec"]["runPolicy"]["suspend"] = False
    _, outcome = step(stored, [], now=later(60))
    suspended = cond(outcome.status, "Suspended")
    assert suspended is not None and suspended["status"] == "False"
    assert suspended["reason"] == "MXJobResumed"
    assert [e.reason for e in outcome.events] == ["MXJobResumed"]
    assert outcome.status["startTime"] == format_time(later(60))
    assert outcome.status["state"] == "Created"


def test_a_suspended_job_has_no_deadline() -> None:
    stored, _ = step(job(run_policy={"activeDeadlineSeconds": 5, "suspend": True}), [])
    _, outcome = step(stored, [], now=later(3600))
    assert not outcome.finished and outcome.requeue_after is None


# -- invariants over random histories ----------------------------------------------------------
POD_STATES = st.sampled_from(
    [
        ("Pending", None),
        ("Running", None),
        ("Succeeded", 0),
        ("Failed", 1),
        ("Failed", 137),
        ("Failed", None),
        None,
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    history=st.lists(st.lists(POD_STATES, min_size=4, max_size=4), min_size=1, max_size=8),
    policy=st.sampled_from(["ExitCode", "Never", "OnFailure"]),
)
def test_status_invariants_hold_over_any_history(
    history: list[list[tuple[str, int | None] | None]], policy: str
) -> None:
    stored, _ = step(job(restart_policy=policy, run_policy={"backoffLimit": 3}), [])
    slots = [s.key for s in desired_slots(stored)]
    restarts = 0
    finished_as: str | None = None
    for moment, states in enumerate(history):
        pods = [
            pod(stored, key, phase=state[0], exit_code=state[1])
            for key, state in zip(slots, states, strict=True)
            if state is not None
        ]
        stored, outcome = step(stored, pods, now=later(moment))
        status = outcome.status
        assert len(true_exclusive(status)) <= 1
        assert status["restartCount"] >= restarts
        restarts = status["restartCount"]
        if finished_as is not None:
            assert status["state"] == finished_as
        elif outcome.finished:
            finished_as = status["state"]
            assert finished_as in ("Succeeded", "Failed")


def test_restarts_of_replicas_scaled_away_still_count_when_others_restart() -> None:
    big = job(replicas={"Scheduler": 1, "Worker": 2})
    stored, _ = step(
        big,
        [pod(big, "scheduler-0"), pod(big, "worker-0"), pod(big, "worker-1", restarts_before=2)],
    )
    assert stored["status"]["restartCount"] == 2
    small = job(replicas={"Scheduler": 1, "Worker": 1}, status=stored["status"])
    failed = pod(small, "worker-0", phase="Failed", exit_code=137)
    _, outcome = step(small, [pod(small, "scheduler-0"), failed], carries={REMOVED_HISTORY: 2})
    assert outcome.status["restartCount"] == 3


# -- pods deleted by someone else: the tracking finalizer keeps their end ----------------------
def untracked(p: Obj) -> Obj:
    p["metadata"].pop("finalizers", None)
    return p


def test_a_worker_deleted_by_someone_else_that_ended_143_counts_as_a_restart() -> None:
    stored, _ = step(job(restart_scope="Replica"), [])
    stored, _ = step(stored, pods_all(stored))
    held = pod(stored, "worker-1", phase="Failed", exit_code=143, terminating=True)
    stored, outcome = step(stored, [*pods_all(stored)[:3], held])
    assert outcome.status["restartCount"] == 1 and outcome.new_restarts == 1
    assert [v.name for v in outcome.recreate] == ["mnist-worker-1"]
    assert outcome.restarts_before == {"worker-1": 1}
    assert outcome.ends_counted == {"mnist-worker-1"}
    # Seen again (the finalizer not yet gone, or a crash before removing it): counted once.
    _, again = step(stored, [*pods_all(stored)[:3], held])
    assert again.status["restartCount"] == 1 and again.new_restarts == 0


def test_a_terminating_pod_the_controller_let_go_is_gone_not_a_restart() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    let_go = untracked(pod(stored, "worker-1", phase="Failed", exit_code=143, terminating=True))
    _, outcome = step(stored, [*pods_all(stored)[:3], let_go])
    assert outcome.status["restartCount"] == 0 and not outcome.recreate
    assert not outcome.ends_counted


def test_a_deleted_pod_still_running_is_not_counted_until_it_ends() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    ending = pod(stored, "worker-1", terminating=True)
    _, outcome = step(stored, [*pods_all(stored)[:3], ending])
    assert outcome.status["restartCount"] == 0 and not outcome.recreate
    assert not outcome.ends_counted
    # Its deletionTimestamp (NOW) plus the slack is when it would count without a report.
    assert outcome.requeue_after == 60


def test_a_deleted_pod_that_failed_permanently_fails_the_job() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    held = pod(stored, "worker-0", phase="Failed", exit_code=1, terminating=True)
    _, outcome = step(stored, [*pods_all(stored)[:2], held, pods_all(stored)[3]])
    assert outcome.became == "Failed"
    assert outcome.status["replicaStatuses"]["Worker"]["failed"] == 1
    assert "mnist-worker-0" in outcome.ends_counted


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


# -- pods that cannot start -----------------------------------------------------------------------
def stuck(job_obj: Obj, key: str, reason: str, message: str, *, created: str = NOW_TEXT) -> Obj:
    """A Pending pod whose container the kubelet cannot start."""
    built = pod(job_obj, key, phase="Pending")
    built["metadata"]["creationTimestamp"] = created
    waiting = {"reason": reason, "message": message}
    built["status"]["containerStatuses"][0]["state"] = {"waiting": waiting}
    return built


def with_one_stuck(job_obj: Obj, reason: str, message: str) -> list[Obj]:
    """Every replica running but the last, which cannot start."""
    last = desired_slots(job_obj)[-1].key
    return [*pods_all(job_obj)[:-1], stuck(job_obj, last, reason, message)]


def test_a_pod_that_cannot_pull_its_image_is_named_at_once_with_the_kubelets_message() -> None:
    train = job()
    pods = with_one_stuck(train, "ImagePullBackOff", 'Back-off pulling image "nope:1"')
    stored, outcome = step(train, pods, now=later(5))
    running = cond(stored["status"], "Running")
    assert running is not None and running["status"] == "False"
    assert running["reason"] == "ImagePullBackOff"
    name = pods[-1]["metadata"]["name"]
    assert f"pod {name} cannot start its container mxnet" in running["message"]
    assert 'Back-off pulling image "nope:1"' in running["message"]
    assert [(e.type, e.reason) for e in outcome.events] == [("Warning", "ImagePullBackOff")]
    assert stored["status"]["state"] == "Created"
    assert outcome.requeue_after == 595  # the pod start timeout's timer
    assert not outcome.finished and outcome.new_restarts == 0
    _, again = step(stored, pods, now=later(6))
    assert again.events == ()  # said once, not on every reconcile


def test_the_job_fails_when_a_pod_could_not_start_for_the_pod_start_timeout() -> None:
    train = job()
    pods = with_one_stuck(train, "CreateContainerConfigError", 'secret "creds" not found')
    stored, outcome = step(train, pods, now=later(600))
    failed = cond(stored["status"], "Failed")
    assert failed is not None and failed["reason"] == "PodStartTimeout"
    assert 'secret "creds" not found' in failed["message"]
    assert "600 s" in failed["message"]
    assert outcome.finished and stored["status"]["restartCount"] == 0


def test_a_jobs_annotation_sets_its_own_pod_start_timeout_and_zero_never_fails_it() -> None:
    train = job()
    train["metadata"]["annotations"] = {
        "mxjob-operator.kubeflow.org/pod-start-timeout-seconds": "30"
    }
    pods = with_one_stuck(train, "ErrImagePull", "connection refused")
    assert step(train, pods, now=later(29))[1].requeue_after == 1
    assert step(train, pods, now=later(30))[1].finished
    train["metadata"]["annotations"]["mxjob-operator.kubeflow.org/pod-start-timeout-seconds"] = "0"
    never = step(train, pods, now=later(86400))[1]
    assert not never.finished and never.requeue_after is None


def test_a_job_whose_cause_is_fixed_in_time_goes_on_to_running() -> None:
    train = job()
    stored, _ = step(train, with_one_stuck(train, "CreateContainerConfigError", "missing"))
    running, _ = step(stored, pods_all(train), now=later(20))
    condition = cond(running["status"], "Running")
    assert condition is not None and condition["status"] == "True"
    assert running["status"]["state"] == "Running"


def test_an_oom_kill_is_retried_under_exit_code_and_named_in_the_final_backoff_failure() -> None:
    train = job(restart_policy="ExitCode", restart_scope="Replica", run_policy={"backoffLimit": 1})
    oom = pods_all(train)
    oom[-1] = pod(train, desired_slots(train)[-1].key, phase="Failed", exit_code=137,
                  reason="OOMKilled")  # fmt: skip
    oom[-1]["status"].pop("reason")  # the kubelet writes OOMKilled on the container only
    oom[-1]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    stored, first = step(train, oom)
    assert [v.name for v in first.recreate] == [oom[-1]["metadata"]["name"]]
    assert any("OOMKilled" in e.message for e in first.events)
    again = [*oom[:-1], pod(train, desired_slots(train)[-1].key, phase="Failed", exit_code=137,
                            restarts_before=1, uid="second")]  # fmt: skip
    again[-1]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    final, _ = step(stored, again, now=later(30))
    failed = cond(final["status"], "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert "exited with code 137" in failed["message"] and "OOMKilled" in failed["message"]


def test_an_end_the_runtime_lost_is_retried_under_exit_code_whatever_the_code() -> None:
    train = job(restart_policy="ExitCode", restart_scope="Replica")
    lost = pods_all(train)
    lost[-1] = pod(train, desired_slots(train)[-1].key, phase="Failed", exit_code=255)
    lost[-1]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "Unknown"
    stored, outcome = step(train, lost)
    assert [v.name for v in outcome.recreate] == [lost[-1]["metadata"]["name"]]
    assert stored["status"]["state"] == "Restarting"
    restarting = cond(stored["status"], "Restarting")
    assert restarting is not None and "exited with code 255" in restarting["message"]
    assert "Unknown" in restarting["message"]
