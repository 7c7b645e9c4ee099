"""Recovery: what a retryable end restarts, counted once, and the history status keeps."""

from __future__ import annotations

from typing import Any

from controller.job.desired import build_service, desired_slots
from controller.job.observed import ATTEMPT_ANNOTATION, observe
from controller.job.plan import plan_actions
from controller.job.pods import JobPods
from controller.job.recovery import HISTORY_LIMIT, consequences, with_entries
from tests.controller.job.status.status_samples import step
from tests.controller.samples import job, later, pod, pods_all, view_of

Obj = dict[str, Any]
T0, T2 = "2030-01-02T03:04:00Z", "2030-01-02T03:04:02Z"


def cond(status: Obj, ctype: str) -> Obj:
    return next(c for c in status.get("conditions", []) if c["type"] == ctype)


def service_all(job_obj: Obj) -> list[Obj]:
    view = view_of(job_obj)
    return [build_service(view, slot) for slot in desired_slots(view)]


def names(objects: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def oom_of_worker_1(stored: Obj, **extra: Any) -> list[Obj]:
    others = [pod(stored, k) for k in ("scheduler-0", "server-0", "worker-0")]
    failed = pod(stored, "worker-1", phase="Failed", exit_code=137, finished_at=T0, **extra)
    failed["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    return [*others, failed]


def test_a_workers_retryable_end_restarts_the_whole_training_job_as_one_attempt() -> None:
    stored, _ = step(job(), [])
    _, outcome = step(stored, oom_of_worker_1(stored))
    status = outcome.status
    assert status["restartCount"] == 1 and status["attempt"] == 1
    assert status["state"] == "Restarting"
    assert (
        "restarting as a whole (attempt 1) because Worker 1"
        in cond(status, "Restarting")["message"]
    )
    assert sorted(v.name for v in outcome.stale) == [
        "mnist-scheduler-0", "mnist-server-0", "mnist-worker-0", "mnist-worker-1"
    ]  # fmt: skip
    assert outcome.hold_creations and outcome.attempt == 1
    [entry] = status["restarts"]
    assert entry == {
        "time": "2030-01-02T03:04:05Z", "scope": "Job", "attempt": 1, "replicaType": "Worker",
        "index": 1, "pod": "mnist-worker-1", "podUID": "pod-worker-1",
        "countedAgainstBackoff": True, "exitCode": 137, "reason": "OOMKilled",
    }  # fmt: skip
    messages = [e.message for e in outcome.events]
    assert any("restarting the whole job" in m and "OOMKilled" in m for m in messages)
    assert any(m.startswith("Restarting the whole job as attempt 1") for m in messages)


def test_the_plan_deletes_every_pod_of_the_attempt_and_makes_none_until_they_are_gone() -> None:
    stored, _ = step(job(), [])
    pods = oom_of_worker_1(stored)
    stored, outcome = step(stored, pods)
    plan = plan_actions(view_of(stored), outcome, JobPods.read(pods), service_all(stored))
    assert names(plan.delete_pods) == [p["metadata"]["name"] for p in pods] and not (
        plan.create_pods
    )
    # One old pod still terminating: nothing is made yet, and the count stays.
    going = pod(stored, "server-0", terminating=True)
    stored, outcome = step(stored, [going])
    plan = plan_actions(view_of(stored), outcome, JobPods.read([going]), service_all(stored))
    assert outcome.hold_creations and not plan.create_pods and not plan.delete_pods
    assert outcome.status["restartCount"] == 1 and len(outcome.status["restarts"]) == 1
    # All gone: every slot is made again, in the new attempt.
    stored, outcome = step(stored, [])
    plan = plan_actions(view_of(stored), outcome, JobPods(), service_all(stored))
    assert not outcome.hold_creations and outcome.attempt == 1
    assert sorted(slot.key for slot in plan.create_pods) == [
        "scheduler-0", "server-0", "worker-0", "worker-1"
    ]  # fmt: skip


def test_a_restart_written_before_the_old_pods_went_is_not_counted_again() -> None:
    """The controller died after writing the restart and before deleting any pod."""
    stored, _ = step(job(), [])
    pods = oom_of_worker_1(stored)
    stored, _ = step(stored, pods)
    again, outcome = step(stored, pods)
    assert again["status"]["restartCount"] == 1 and again["status"]["attempt"] == 1
    assert len(again["status"]["restarts"]) == 1
    assert len(outcome.stale) == 4 and outcome.hold_creations


def test_the_new_attempts_pods_run_the_job_and_count_from_the_restart() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, oom_of_worker_1(stored))
    new = pods_all(stored, attempt=1)
    assert all(p["metadata"]["annotations"][ATTEMPT_ANNOTATION] == "1" for p in new)
    stored, outcome = step(stored, new)
    assert outcome.status["state"] == "Running" and outcome.status["restartCount"] == 1
    assert not outcome.stale and not outcome.hold_creations
    done = [pod(stored, "scheduler-0", phase="Succeeded", exit_code=0, attempt=1), *new[1:]]
    _, outcome = step(stored, done)
    assert outcome.status["state"] == "Succeeded" and outcome.status["restartCount"] == 1


def test_a_stale_pods_end_is_never_the_jobs_outcome() -> None:
    """The old attempt's scheduler exiting 0 (or a worker 1) while it goes decides nothing."""
    stored, _ = step(job(), [])
    stored, _ = step(stored, oom_of_worker_1(stored))
    ended = [
        pod(stored, "scheduler-0", phase="Succeeded", exit_code=0, terminating=True),
        pod(stored, "worker-0", phase="Failed", exit_code=1, terminating=True),
    ]
    _, outcome = step(stored, ended)
    assert outcome.status["state"] == "Restarting" and not outcome.finished


def test_a_permanent_exit_that_followed_the_restarts_cause_goes_with_it() -> None:
    """The scheduler killed, then a worker exits 1 for lack of it: the job restarts."""
    stored, _ = step(job(), [])
    killed = pod(stored, "scheduler-0", phase="Failed", exit_code=137, finished_at=T0)
    orphaned = pod(stored, "worker-0", phase="Failed", exit_code=1, finished_at=T2)
    others = [pod(stored, k) for k in ("server-0", "worker-1")]
    _, outcome = step(stored, [killed, orphaned, *others])
    assert not outcome.finished and outcome.status["attempt"] == 1
    assert outcome.status["restarts"][0]["replicaType"] == "Scheduler"


def test_a_permanent_exit_before_the_retryable_one_fails_the_job() -> None:
    stored, _ = step(job(), [])
    bug = pod(stored, "worker-0", phase="Failed", exit_code=1, finished_at=T0)
    killed = pod(stored, "server-0", phase="Failed", exit_code=143, finished_at=T2)
    _, outcome = step(stored, [pod(stored, "scheduler-0"), bug, killed])
    assert outcome.finished and outcome.status["state"] == "Failed"
    assert "Worker 0" in cond(outcome.status, "Failed")["message"]


def test_consequences_need_both_times() -> None:
    stored = job()
    cause = observe(pod(stored, "server-0", phase="Failed", exit_code=137, finished_at=T2))
    same_second = observe(pod(stored, "worker-0", phase="Failed", exit_code=1, finished_at=T2))
    unknown = observe(pod(stored, "worker-1", phase="Failed", exit_code=1))
    assert consequences([same_second, unknown], [cause]) == [same_second]
    assert consequences([same_second], []) == []


def test_each_whole_job_restart_counts_once_against_the_backoff_limit() -> None:
    stored, _ = step(job(run_policy={"backoffLimit": 1}), [])
    stored, first = step(stored, oom_of_worker_1(stored))
    assert not first.finished and stored["status"]["restartCount"] == 1
    again = [pod(stored, k, attempt=1) for k in ("scheduler-0", "server-0", "worker-0")]
    failed = pod(stored, "worker-1", phase="Failed", exit_code=137, attempt=1, uid="second")
    _, outcome = step(stored, [*again, failed], now=later(60))
    assert outcome.finished
    assert cond(outcome.status, "Failed")["reason"] == "BackoffLimitExceeded"
    assert outcome.status["restartCount"] == 1
    assert "Worker 1" in cond(outcome.status, "Failed")["message"]


def test_a_disruption_restarts_the_job_without_counting_against_the_backoff_limit() -> None:
    stored, _ = step(job(run_policy={"backoffLimit": 0}), [])
    pods = oom_of_worker_1(stored, disruption="EvictionByEvictionAPI")
    stored, outcome = step(stored, pods)
    assert not outcome.finished and outcome.status["attempt"] == 1
    assert outcome.status["restartCount"] == 1 and outcome.status["disruptionRestarts"] == 1
    [entry] = outcome.status["restarts"]
    assert entry["disruption"] == "EvictionByEvictionAPI" and not entry["countedAgainstBackoff"]
    assert any("not counted against the backoff limit" in e.message for e in outcome.events)


def test_a_disruption_counts_under_disruption_policy_count() -> None:
    policy = {"backoffLimit": 0, "disruptionPolicy": "Count"}
    stored, _ = step(job(run_policy=policy), [])
    _, outcome = step(stored, oom_of_worker_1(stored, disruption="PreemptionByScheduler"))
    assert outcome.finished and outcome.status["state"] == "Failed"
    assert outcome.status["restarts"][0]["countedAgainstBackoff"] is True


def test_a_lone_replacements_disruption_is_recorded_once() -> None:
    tune = {"TunerTracker": 1, "TunerServer": 2, "Tuner": 1}
    stored, _ = step(job(mode="MXTune", replicas=tune, run_policy={"backoffLimit": 0}), [])
    evicted = pod(stored, "tunerserver-1", phase="Failed", reason="Evicted",
                  disruption="DeletionByTaintManager")  # fmt: skip
    running = [pod(stored, k) for k in ("tunertracker-0", "tunerserver-0", "tuner-0")]
    stored, outcome = step(stored, [*running, evicted])
    assert [v.name for v in outcome.recreate] == ["mnist-tunerserver-1"] and not outcome.stale
    assert not outcome.finished and outcome.status.get("attempt") is None
    again, outcome = step(stored, [*running, evicted])  # written, pod not yet deleted
    assert again["status"]["disruptionRestarts"] == 1 and len(again["status"]["restarts"]) == 1
    assert again["status"]["restarts"][0]["scope"] == "Replica"


def test_a_tune_jobs_replicas_are_replaced_alone_by_default() -> None:
    tune = {"TunerTracker": 1, "TunerServer": 2, "Tuner": 1}
    stored, _ = step(job(mode="MXTune", replicas=tune), [])
    killed = pod(stored, "tunertracker-0", phase="Failed", exit_code=137)
    others = [pod(stored, k) for k in ("tunerserver-0", "tunerserver-1", "tuner-0")]
    _, outcome = step(stored, [killed, *others])
    assert [v.name for v in outcome.recreate] == ["mnist-tunertracker-0"]
    assert not outcome.hold_creations and outcome.status["restartCount"] == 1


def test_restart_scope_job_on_a_tune_replica_restarts_the_whole_tune_job() -> None:
    tune = {"TunerTracker": 1, "TunerServer": 1, "Tuner": 1}
    stored, _ = step(job(mode="MXTune", replicas=tune, restart_scope="Job"), [])
    killed = pod(stored, "tunerserver-0", phase="Failed", exit_code=143)
    others = [pod(stored, k) for k in ("tunertracker-0", "tuner-0")]
    _, outcome = step(stored, [killed, *others])
    assert len(outcome.stale) == 3 and outcome.status["attempt"] == 1


def test_the_history_keeps_the_newest_entries_and_every_new_one() -> None:
    old = [{"pod": f"old-{i}"} for i in range(HISTORY_LIMIT)]
    assert [e["pod"] for e in with_entries(old, [{"pod": "new"}])][-2:] == ["old-9", "new"]
    assert len(with_entries(old, [{"pod": "new"}])) == HISTORY_LIMIT
    many = [{"pod": f"new-{i}"} for i in range(HISTORY_LIMIT + 2)]
    assert with_entries(old, many) == many
