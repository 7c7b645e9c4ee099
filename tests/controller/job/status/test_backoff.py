"""Restart accounting: every restart counted once against backoffLimit, with status as its only
record, across controller restarts at any point of a restart."""

from __future__ import annotations

from tests.controller.job.status.status_samples import cond, step
from tests.controller.samples import job, later, pod, pods_all


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
    for number in (0, 1):  # each replacement is a new pod: a new uid
        failed = pod(stored, "worker-0", phase="Failed", exit_code=143, uid=f"worker-{number}")
        stored, outcome = step(stored, [pod(stored, "scheduler-0"), failed])
        assert outcome.recreate and outcome.status["restartCount"] == number + 1
    failed = pod(stored, "worker-0", phase="Failed", exit_code=137, uid="worker-2")
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


def test_a_slot_emptied_while_the_controller_was_down_keeps_the_persisted_restarts() -> None:
    """The controller died between deleting the failed pod and creating its replacement: the
    new controller reads restartCount back and makes the pod, counting nothing."""
    stored, _ = step(job(restart_scope="Replica"), [])
    failed = pod(stored, "worker-0", phase="Failed", exit_code=137)
    others = [pod(stored, "scheduler-0"), pod(stored, "server-0"), pod(stored, "worker-1")]
    stored, _ = step(stored, [*others, failed])
    stored, outcome = step(stored, others)
    assert outcome.status["restartCount"] == 1 and outcome.new_restarts == 0
    # The replacement fails too: a second restart, whatever the first pod's fate.
    replacement = pod(stored, "worker-0", phase="Failed", exit_code=137, uid="replacement")
    _, outcome = step(stored, [*others, replacement])
    assert outcome.status["restartCount"] == 2


def test_a_replacement_made_before_the_controller_died_counts_nothing_again() -> None:
    """Killed mid-creation: the replacement runs, the next controller counts nothing."""
    stored, _ = step(job(restart_scope="Replica"), [])
    others = [pod(stored, "scheduler-0"), pod(stored, "server-0"), pod(stored, "worker-1")]
    stored, _ = step(stored, [*others, pod(stored, "worker-0", phase="Failed", exit_code=137)])
    _, outcome = step(stored, [*others, pod(stored, "worker-0", uid="replacement")])
    assert outcome.status["restartCount"] == 1 and outcome.new_restarts == 0


def test_a_whole_job_restart_is_counted_once_at_each_point_the_controller_may_die() -> None:
    """Status written (attempt 1), then: the old pods still there, some gone, none left, some
    of the new attempt made. Each point, read by a fresh computation, counts one restart."""
    stored, _ = step(job(), [])
    killed = pod(stored, "server-0", phase="Failed", exit_code=137)
    old = [pod(stored, "scheduler-0"), killed, pod(stored, "worker-0"), pod(stored, "worker-1")]
    stored, outcome = step(stored, old)
    assert outcome.status["restartCount"] == 1 and outcome.status["attempt"] == 1
    new = [pod(stored, key, attempt=1, uid=f"new-{key}")
           for key in ("scheduler-0", "server-0", "worker-0", "worker-1")]  # fmt: skip
    for seen in (old, old[2:], [], new[:2], new):
        _, again = step(stored, seen)
        assert again.status["restartCount"] == 1 and again.new_restarts == 0, seen
        assert again.status["attempt"] == 1


def test_in_place_restarts_are_counted_once_through_the_record_in_status() -> None:
    stored, _ = step(job(restart_policy="OnFailure"), [])
    assert stored["status"]["inPlaceRestarts"] == {}
    running = [*pods_all(stored)[:3], pod(stored, "worker-1", restarts=2)]
    stored, outcome = step(stored, running)
    assert outcome.status["inPlaceRestarts"] == {"worker-1": {"podUID": "pod-worker-1",
                                                             "restarts": 2}}  # fmt: skip
    _, again = step(stored, running)  # a restarted controller sees the same pods
    assert again.status["restartCount"] == 2 and again.new_restarts == 0
    # The pod replaced (evicted, say): the new one's restarts count from zero.
    replaced = [*pods_all(stored)[:3], pod(stored, "worker-1", restarts=1, uid="new")]
    _, outcome = step(stored, replaced)
    assert outcome.status["restartCount"] == 3


def test_a_status_without_the_in_place_record_has_counted_the_restarts_it_saw() -> None:
    """Written by an operator that kept no record (it counted every restart of the live pods)."""
    stored, _ = step(job(restart_policy="OnFailure"), [])
    stored["status"].pop("inPlaceRestarts")
    stored["status"]["restartCount"] = 2
    running = [*pods_all(stored)[:3], pod(stored, "worker-1", restarts=2)]
    stored, outcome = step(stored, running)
    assert outcome.status["restartCount"] == 2
    _, outcome = step(stored, [*pods_all(stored)[:3], pod(stored, "worker-1", restarts=3)])
    assert outcome.status["restartCount"] == 3


def test_a_job_that_cannot_restart_in_place_keeps_no_record() -> None:
    stored, _ = step(job(), [])
    assert "inPlaceRestarts" not in stored["status"]


def test_restarts_of_replicas_scaled_away_still_count_when_others_restart() -> None:
    big = job(replicas={"Scheduler": 1, "Worker": 2}, restart_policy="OnFailure")
    stored, _ = step(big, [])
    stored, _ = step(
        stored,
        [pod(big, "scheduler-0"), pod(big, "worker-0"), pod(big, "worker-1", restarts=2)],
    )
    assert stored["status"]["restartCount"] == 2
    small = job(replicas={"Scheduler": 1, "Worker": 1}, status=stored["status"])
    failed = pod(small, "worker-0", phase="Failed", exit_code=137)
    _, outcome = step(small, [pod(small, "scheduler-0"), failed])
    assert outcome.status["restartCount"] == 3
