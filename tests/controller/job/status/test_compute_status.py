"""compute_status as a whole: its invariants over any history, and pods the tracking finalizer
holds after someone else deleted them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.job.desired import desired_slots
from tests.controller.job.status.status_samples import step, true_exclusive, untracked
from tests.controller.samples import job, later, pod, pods_all, view_of


def test_recomputing_with_nothing_new_changes_nothing() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, pods_all(stored))
    _, outcome = step(stored, pods_all(stored), now=later(30))
    assert outcome.status == stored["status"]
    assert not outcome.events and not outcome.recreate


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
    slots = [s.key for s in desired_slots(view_of(stored))]
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
        if not (outcome.finished or outcome.suspended):  # the plan creates against these
            assert [s.key for s in outcome.slots] == slots
        restarts = status["restartCount"]
        if finished_as is not None:
            assert status["state"] == finished_as
        elif outcome.finished:
            finished_as = status["state"]
            assert finished_as in ("Succeeded", "Failed")


def test_a_worker_deleted_by_someone_else_that_ended_143_counts_as_a_restart() -> None:
    stored, _ = step(job(restart_scope="Replica"), [])
    stored, _ = step(stored, pods_all(stored))
    held = pod(stored, "worker-1", phase="Failed", exit_code=143, terminating=True)
    stored, outcome = step(stored, [*pods_all(stored)[:3], held])
    assert outcome.status["restartCount"] == 1 and outcome.new_restarts == 1
    assert [v.name for v in outcome.recreate] == ["mnist-worker-1"]
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
