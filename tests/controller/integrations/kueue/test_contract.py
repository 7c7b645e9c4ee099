"""controller.integrations.kueue.contract: Kueue's job contract for MXJob as pure decisions
(Kueue v0.19.2's jobframework)."""

from __future__ import annotations

import copy
from typing import Any

from controller.integrations.kueue.contract import Step, decide
from controller.integrations.kueue.status_applies import unreserve_apply
from shared.queueing import PREBUILT_WORKLOAD_LABEL
from tests.controller.kueue_samples import (
    admitted,
    cond,
    evicted,
    job_condition,
    queued_job,
    replica_status,
    status_condition,
    workload,
)
from tests.controller.samples import NOW_TEXT, view_of

Obj = dict[str, Any]


def step(job_obj: Obj, wl: Obj | None = None, **kwargs: Any) -> Step:
    options: dict[str, Any] = {"owned": [wl] if wl else [], "prebuilt": None}
    options.update(wait_for_pods_ready=False, now=NOW_TEXT)
    options.update(kwargs)
    return decide(view_of(job_obj), **options)


# -- the Workload --------------------------------------------------------------------------------
def test_no_workload_creates_one() -> None:
    assert step(queued_job()).kind == "create"


def test_no_workload_while_pods_are_still_active_waits() -> None:
    busy = queued_job(status=replica_status(Worker={"active": 1}))
    assert step(busy).kind == "wait"


def test_a_running_job_without_its_workload_is_stopped() -> None:
    found = step(queued_job(suspend=False))
    assert (found.kind, found.message) == (
        "stop",
        "Missing Workload; unable to restore pod templates",
    )


def test_a_finished_job_finishes_its_workload_keeping_the_admission() -> None:
    job_obj = queued_job(suspend=False, status={"conditions": [job_condition("Succeeded", "done")]})
    wl = admitted(job_obj)
    found = step(job_obj, wl)
    assert found.kind == "finish"
    finished = status_condition(found.body, "Finished")
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True", "Succeeded", "done",
    )  # fmt: skip
    assert found.body is not None
    assert found.body["status"]["admission"] == wl["status"]["admission"]


def test_a_failed_job_finishes_its_workload_as_failed() -> None:
    job_obj = queued_job(suspend=False, status={"conditions": [job_condition("Failed", "oom")]})
    found = step(job_obj, admitted(job_obj))
    assert status_condition(found.body, "Finished")["reason"] == "Failed"


def test_a_finished_workload_is_let_go() -> None:
    job_obj = queued_job(status={"conditions": [job_condition("Succeeded")]})
    wl = admitted(job_obj, extra=[cond("Finished", True, "Succeeded")])
    assert step(job_obj, wl).kind == "let-go"


def test_an_evicted_running_job_is_stopped() -> None:
    job_obj = queued_job(suspend=False)
    found = step(job_obj, evicted(job_obj))
    assert (found.kind, found.message) == ("stop", "Evicted: Preempted")


def test_an_evicted_suspended_job_without_pods_unreserves_the_quota() -> None:
    job_obj = queued_job()
    found = step(job_obj, evicted(job_obj))
    assert found.kind == "unreserve" and found.body is not None
    assert "admission" not in found.body["status"]


def test_an_evicted_suspended_job_with_active_pods_waits() -> None:
    job_obj = queued_job(status=replica_status(Worker={"active": 2}))
    assert step(job_obj, evicted(job_obj)).kind == "wait"


def test_an_admitted_suspended_job_starts() -> None:
    job_obj = queued_job()
    assert step(job_obj, admitted(job_obj)).kind == "start"


def test_a_running_job_whose_workload_is_not_admitted_is_stopped() -> None:
    job_obj = queued_job(suspend=False)
    found = step(job_obj, workload(job_obj))
    assert (found.kind, found.message) == ("stop", "Not admitted by cluster queue")


def test_a_deleted_workload_stops_the_job_then_is_let_go() -> None:
    running = queued_job(suspend=False)
    wl = admitted(running)
    wl["metadata"]["deletionTimestamp"] = NOW_TEXT
    found = step(running, wl)
    assert (found.kind, found.message) == ("stop", "Workload is deleted")
    assert step(queued_job(), wl).kind == "let-go"


def test_a_workload_that_no_longer_matches_is_replaced() -> None:
    job_obj = queued_job(replicas={"Scheduler": 1, "Server": 1, "Worker": 3})
    old = workload(queued_job())
    found = step(job_obj, old)
    assert found.kind == "replace" and found.extra == (old,)
    running = queued_job(suspend=False, replicas={"Scheduler": 1, "Server": 1, "Worker": 3})
    stop = step(running, old)
    assert stop.kind == "stop" and stop.workload is old  # templates restored from it


def test_a_suspended_job_moved_to_another_queue_moves_its_pending_workload() -> None:
    wl = workload(queued_job())
    found = step(queued_job(queue="team-b"), wl)
    assert (found.kind, found.queue_name) == ("queue-name", "team-b")


def test_pods_ready_goes_from_wait_for_start_to_started_to_recovery() -> None:
    job_obj = queued_job(suspend=False)
    wl = admitted(job_obj)
    first = step(job_obj, wl, wait_for_pods_ready=True)
    assert first.kind == "pods-ready"
    ready = status_condition(first.body, "PodsReady")
    assert (ready["status"], ready["reason"]) == ("False", "WaitForStart")

    running = queued_job(suspend=False, status={"conditions": [job_condition("Running")]})
    wl["status"]["conditions"].append(ready)
    started_step = step(running, wl, wait_for_pods_ready=True)
    ready = status_condition(started_step.body, "PodsReady")
    assert (ready["status"], ready["reason"]) == ("True", "Started")

    wl["status"]["conditions"][-1] = ready
    lost = step(job_obj, wl, wait_for_pods_ready=True)
    ready = status_condition(lost.body, "PodsReady")
    assert (ready["status"], ready["reason"]) == ("False", "WaitForRecovery")

    wl["status"]["conditions"][-1] = ready
    recovered = step(running, wl, wait_for_pods_ready=True)
    ready = status_condition(recovered.body, "PodsReady")
    assert (ready["status"], ready["reason"]) == ("True", "Recovered")
    wl["status"]["conditions"][-1] = ready
    assert step(running, wl, wait_for_pods_ready=True).kind == "wait"  # nothing new to say
    assert started_step.body is not None and set(started_step.body["status"]) == {"conditions"}


def test_succeeded_replicas_give_their_quota_back() -> None:
    job_obj = queued_job(suspend=False, status=replica_status(Worker={"succeeded": 1, "active": 1}))
    found = step(job_obj, admitted(job_obj))
    assert found.kind == "reclaim" and found.body is not None
    assert found.body["status"] == {"reclaimablePods": [{"name": "worker", "count": 1}]}


def test_reclaimable_counts_never_go_down_while_quota_is_reserved() -> None:
    job_obj = queued_job(suspend=False, status=replica_status(Worker={"succeeded": 0}))
    wl = admitted(job_obj, reclaimablePods=[{"name": "worker", "count": 1}])
    assert step(job_obj, wl).kind != "reclaim"  # Kueue's webhook refuses a smaller count


# -- decide: MultiKueue's prebuilt Workloads -----------------------------------------------------
def prebuilt_job(**kwargs: Any) -> Obj:
    return queued_job(labels={PREBUILT_WORKLOAD_LABEL: "wl-1"}, **kwargs)


def test_a_running_copy_without_its_prebuilt_workload_is_stopped() -> None:
    found = step(prebuilt_job(suspend=False))
    assert (found.kind, found.message) == ("stop", "missing workload")
    assert step(prebuilt_job()).kind == "wait"


def test_a_prebuilt_workload_without_a_controller_is_adopted() -> None:
    wl = workload(prebuilt_job())
    wl["metadata"]["ownerReferences"] = []
    assert step(prebuilt_job(), prebuilt=wl).kind == "adopt"


def test_a_prebuilt_workload_controlled_by_another_object_is_not_used() -> None:
    wl = workload(prebuilt_job())
    wl["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    assert step(prebuilt_job(suspend=False), prebuilt=wl).kind == "stop"
    assert step(prebuilt_job(), prebuilt=wl).kind == "wait"


def test_a_prebuilt_workload_out_of_sync_is_finished_then_the_copy_stops() -> None:
    job_obj = prebuilt_job(suspend=False, replicas={"Scheduler": 1, "Server": 1, "Worker": 5})
    wl = admitted(prebuilt_job())
    found = step(job_obj, prebuilt=wl)
    assert (found.kind, found.message) == (
        "out-of-sync", "The prebuilt workload is out of sync with its user job",
    )  # fmt: skip
    wl["status"]["conditions"].append(cond("Finished", True, "OutOfSync"))
    assert step(job_obj, prebuilt=wl).kind == "stop"


def test_decide_never_changes_its_inputs() -> None:
    job_obj = queued_job(suspend=False, status=replica_status(Worker={"succeeded": 1}))
    wl = evicted(job_obj)
    before = copy.deepcopy((job_obj, wl))
    step(job_obj, wl)
    unreserve_apply(wl, now=NOW_TEXT)
    assert (job_obj, wl) == before
