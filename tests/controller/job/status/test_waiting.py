"""The ``Pending`` condition: what holds a job back, set while it does and gone after."""

from __future__ import annotations

import copy

from controller.job.pods import JobPods
from controller.job.status import Wait, compute_status
from tests.controller.job.status.status_samples import Obj, cond, step
from tests.controller.samples import NOW, job, later, pod, pods_all, view_of

NO_NODE = "0/3 nodes are available: 3 Insufficient cpu."


def unschedulable(pod_obj: Obj) -> Obj:
    """The pod as kube-scheduler leaves it when no node fits."""
    pod_obj["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": NO_NODE}
        ],
    }  # fmt: skip
    return pod_obj


def held(job_obj: Obj, wait: Wait | None, pods: list[Obj] | None = None) -> tuple[Obj, object]:
    outcome = compute_status(view_of(job_obj), JobPods.read(pods or []), now=NOW, held=wait)
    stored = copy.deepcopy(job_obj)
    stored["status"] = copy.deepcopy(outcome.status)
    return stored, outcome


def test_an_integrations_wait_becomes_the_pending_condition_with_an_event() -> None:
    quota = Wait("WaitingForQuota", "couldn't assign flavors to pod set worker: insufficient cpu")
    stored, outcome = held(job(run_policy={"suspend": True}), quota)
    pending = cond(stored["status"], "Pending")
    assert pending is not None
    assert (pending["status"], pending["reason"], pending["message"]) == (
        "True", "WaitingForQuota", quota.message,
    )  # fmt: skip
    assert [e.reason for e in outcome.events] == ["MXJobPending", "MXJobSuspended"]  # type: ignore[attr-defined]
    assert "WaitingForQuota" in outcome.events[0].message  # type: ignore[attr-defined]
    assert stored["status"]["state"] == "Suspended"


def test_the_same_wait_again_writes_no_new_event_and_a_new_reason_does() -> None:
    quota = Wait("WaitingForQuota", "no quota")
    stored, _ = held(job(run_policy={"suspend": True}), quota)
    stored, outcome = held(stored, quota)
    assert [e.reason for e in outcome.events] == []  # type: ignore[attr-defined]
    placement = Wait("TopologyPlacementFailed", "no rack fits 5 pods")
    stored, outcome = held(stored, placement)
    assert [e.reason for e in outcome.events] == ["MXJobPending"]  # type: ignore[attr-defined]
    assert cond(stored["status"], "Pending")["reason"] == "TopologyPlacementFailed"  # type: ignore[index]


def test_unschedulable_pods_make_the_job_pending_until_they_run() -> None:
    stored, _ = step(job(), [])
    stuck = [unschedulable(p) for p in pods_all(stored, phase="Pending")]
    stored, _ = step(stored, stuck, now=later(1))
    pending = cond(stored["status"], "Pending")
    assert pending is not None and pending["reason"] == "Unschedulable"
    assert pending["message"].startswith(f"{len(stuck)} pod(s) unschedulable; ")
    assert pending["message"].endswith(NO_NODE)
    stored, outcome = step(stored, pods_all(stored), now=later(5))
    assert cond(stored["status"], "Pending") is None
    assert stored["status"]["state"] == "Running"
    assert "MXJobPending" not in [e.reason for e in outcome.events]


def test_an_integrations_wait_wins_over_the_pods_echo_of_it() -> None:
    stored, _ = step(job(), [])
    stuck = [unschedulable(p) for p in pods_all(stored, phase="Pending")]
    gang = Wait("GangWaiting", "Waiting for the gang: 0 of 3 pods placed")
    stored, _ = held(stored, gang, stuck)
    assert cond(stored["status"], "Pending")["reason"] == "GangWaiting"  # type: ignore[index]


def test_a_finished_job_waits_for_nothing() -> None:
    stored, _ = held(job(run_policy={"suspend": True}), Wait("WaitingForQuota", "no quota"))
    stored["spec"]["runPolicy"]["suspend"] = False
    stored, _ = step(stored, [])
    stored, _ = step(stored, pods_all(stored, phase="Succeeded", exit_code=0), now=later(9))
    assert stored["status"]["state"] == "Succeeded"
    assert cond(stored["status"], "Pending") is None


def test_a_job_that_never_waited_has_no_pending_condition() -> None:
    stored, _ = step(job(), [])
    stored, _ = step(stored, [pod(stored, "worker-0", phase="Pending")], now=later(1))
    assert cond(stored["status"], "Pending") is None
