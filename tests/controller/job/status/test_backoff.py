"""Restart accounting: every restart counted once against backoffLimit, across controller
restarts."""

from __future__ import annotations

from controller.job.status import REMOVED_HISTORY
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
