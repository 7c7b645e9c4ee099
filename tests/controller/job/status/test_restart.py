"""Retryable ends: the pod recreated, Restarting said, with what the exit means."""

from __future__ import annotations

from tests.controller.job.status.status_samples import cond, last_slot, step, true_exclusive
from tests.controller.samples import job, later, pod, pods_all


def test_exit_code_137_recreates_the_pod_and_shows_restarting() -> None:
    stored, _ = step(job(restart_scope="Replica"), [])
    stored, _ = step(stored, pods_all(stored))
    failed = pod(stored, "worker-1", phase="Failed", exit_code=137)
    _, outcome = step(stored, [*pods_all(stored)[:3], failed])
    assert [v.name for v in outcome.recreate] == ["mnist-worker-1"]
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


def test_an_oom_kill_is_retried_under_exit_code_and_named_in_the_final_backoff_failure() -> None:
    train = job(restart_policy="ExitCode", restart_scope="Replica", run_policy={"backoffLimit": 1})
    oom = pods_all(train)
    oom[-1] = pod(train, last_slot(train), phase="Failed", exit_code=137,
                  reason="OOMKilled")  # fmt: skip
    oom[-1]["status"].pop("reason")  # the kubelet writes OOMKilled on the container only
    oom[-1]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    stored, first = step(train, oom)
    assert [v.name for v in first.recreate] == [oom[-1]["metadata"]["name"]]
    assert any("OOMKilled" in e.message for e in first.events)
    again = [*oom[:-1], pod(train, last_slot(train), phase="Failed", exit_code=137,
                            uid="second")]  # fmt: skip
    again[-1]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    final, _ = step(stored, again, now=later(30))
    failed = cond(final["status"], "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert "exited with code 137" in failed["message"] and "OOMKilled" in failed["message"]


def test_an_end_the_runtime_lost_is_retried_under_exit_code_whatever_the_code() -> None:
    train = job(restart_policy="ExitCode", restart_scope="Replica")
    lost = pods_all(train)
    lost[-1] = pod(train, last_slot(train), phase="Failed", exit_code=255)
    lost[-1]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "Unknown"
    stored, outcome = step(train, lost)
    assert [v.name for v in outcome.recreate] == [lost[-1]["metadata"]["name"]]
    assert stored["status"]["state"] == "Restarting"
    restarting = cond(stored["status"], "Restarting")
    assert restarting is not None and "exited with code 255" in restarting["message"]
    assert "Unknown" in restarting["message"]
