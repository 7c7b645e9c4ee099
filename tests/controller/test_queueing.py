"""queueing: Kueue's job contract for MXJob as pure decisions (Kueue v0.19.2's jobframework)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from controller.podsets import PodSetConflictError, admitted_infos, started, stopped
from controller.queueing import Step, decide
from controller.workload_objects import (
    FINALIZER,
    JOB_UID_LABEL,
    Priority,
    build_workload,
    condition,
    equivalent,
    workload_name,
)
from controller.workload_status import ADMISSION_CONDITIONS, admission_apply, release_apply
from shared.queueing import PREBUILT_WORKLOAD_LABEL
from tests.controller.kueue_samples import (
    admitted,
    cond,
    evicted,
    flavor,
    job_condition,
    queued_job,
    replica_status,
    workload,
)
from tests.controller.samples import NOW_TEXT

Obj = dict[str, Any]
FLAVORS = {"default": flavor("default", {"pool": "a"}, [{"key": "spot", "operator": "Exists"}])}


def kueue_name(kind: str, group: str, name: str, uid: str) -> str:
    """Kueue's GetWorkloadNameForOwnerWithGVK, written out from workload_names.go."""
    digest = hashlib.sha1(b"\n".join(x.encode() for x in (kind, group, name, uid))).hexdigest()
    return (kind.lower() + "-" + name)[: 253 - 1 - 5] + "-" + digest[:5]


def step(job_obj: Obj, wl: Obj | None = None, **kwargs: Any) -> Step:
    options: dict[str, Any] = {"owned": [wl] if wl else [], "prebuilt": None}
    options.update(wait_for_pods_ready=False, now=NOW_TEXT)
    options.update(kwargs)
    return decide(job_obj, **options)


def status_condition(body: Obj | None, kind: str) -> Obj:
    assert body is not None
    found = condition(body, kind)
    assert found is not None, kind
    return found


# -- the Workload --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mnist", "a" * 250])
def test_the_workload_name_is_kueues_own(name: str) -> None:
    expected = kueue_name("MXJob", "kubeflow.org", name, "8f0c-uid")
    assert workload_name(name, "8f0c-uid") == expected
    assert len(expected) <= 253 and expected.startswith("mxjob-")


def test_a_workload_is_controlled_by_its_job_and_holds_kueues_finalizer() -> None:
    made = build_workload(queued_job(), priority=Priority())
    meta = made["metadata"]
    assert made["apiVersion"] == "kueue.x-k8s.io/v1beta2" and made["kind"] == "Workload"
    assert meta["name"] == workload_name("mnist", "job-uid") and meta["namespace"] == "ns"
    assert meta["finalizers"] == [FINALIZER]
    assert meta["labels"] == {JOB_UID_LABEL: "job-uid"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "mnist", "uid": "job-uid",
         "controller": True, "blockOwnerDeletion": True},
    ]  # fmt: skip


def test_podsets_follow_the_replica_order_with_lowercase_names_and_counts() -> None:
    job_obj = queued_job(replicas={"Worker": 3, "Server": 2, "Scheduler": 1})
    spec = build_workload(job_obj, priority=Priority())["spec"]
    assert [(p["name"], p["count"]) for p in spec["podSets"]] == [
        ("scheduler", 1), ("server", 2), ("worker", 3),
    ]  # fmt: skip
    worker = job_obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    assert spec["podSets"][2]["template"] == worker
    assert spec["queueName"] == "team-a"


def test_priority_is_zero_without_a_class_and_set_with_its_reference() -> None:
    plain = build_workload(queued_job(), priority=Priority())["spec"]
    assert plain["priority"] == 0 and "priorityClassRef" not in plain
    ref = Priority(1000, "kueue.x-k8s.io", "WorkloadPriorityClass", "high")
    spec = build_workload(queued_job(), priority=ref)["spec"]
    assert spec["priority"] == 1000  # Kueue's CEL: priority is required with priorityClassRef
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high",
    }  # fmt: skip


def test_the_max_exec_time_label_becomes_the_maximum_execution_time() -> None:
    labelled = queued_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "600"})
    assert (
        build_workload(labelled, priority=Priority())["spec"]["maximumExecutionTimeSeconds"] == 600
    )
    bad = queued_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "-1"})
    assert "maximumExecutionTimeSeconds" not in build_workload(bad, priority=Priority())["spec"]
    assert not equivalent(labelled, workload(queued_job()))


# -- equivalence ---------------------------------------------------------------------------------
def test_a_replica_count_change_is_not_equivalent() -> None:
    wl = workload(queued_job())
    assert equivalent(queued_job(), wl)
    assert not equivalent(queued_job(replicas={"Scheduler": 1, "Server": 1, "Worker": 3}), wl)


def test_a_resources_change_is_not_equivalent() -> None:
    wl = workload(queued_job())
    changed = queued_job()
    container = changed["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "2"}}
    assert not equivalent(changed, wl)


def test_what_admission_added_to_a_running_job_keeps_it_equivalent() -> None:
    job_obj = queued_job()
    wl = admitted(job_obj)
    running = started(job_obj, admitted_infos(wl, FLAVORS))
    assert running["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"]
    assert equivalent(running, wl)


# -- what admission asks of the pods -------------------------------------------------------------
def test_admitted_infos_carry_flavor_labels_tolerations_and_kueue_labels() -> None:
    wl = admitted(queued_job())
    infos = {i.name: i for i in admitted_infos(wl, FLAVORS)}
    assert list(infos) == ["scheduler", "server", "worker"]
    worker = infos["worker"]
    assert worker.count == 2
    assert worker.node_selector == {"pool": "a"}
    assert worker.tolerations == [{"key": "spot", "operator": "Exists"}]
    assert worker.labels == {
        "kueue.x-k8s.io/podset": "worker",
        "kueue.x-k8s.io/local-queue-name": "team-a",
        "kueue.x-k8s.io/cluster-queue-name": "cq",
    }
    assert worker.annotations == {"kueue.x-k8s.io/workload": wl["metadata"]["name"]}


def test_admission_check_podset_updates_are_merged() -> None:
    update = {
        "name": "worker", "nodeSelector": {"zone": "z1"}, "labels": {"x": "1"},
        "annotations": {"y": "2"}, "tolerations": [{"key": "gpu", "operator": "Exists"}],
    }  # fmt: skip
    check = {"name": "prov", "state": "Ready", "podSetUpdates": [update]}
    wl = admitted(queued_job(), admissionChecks=[check])
    worker = {i.name: i for i in admitted_infos(wl, FLAVORS)}["worker"]
    assert worker.node_selector == {"pool": "a", "zone": "z1"}
    assert worker.labels["x"] == "1" and worker.annotations["y"] == "2"
    assert {"key": "gpu", "operator": "Exists"} in worker.tolerations


def test_a_podset_update_contradicting_the_flavor_raises_a_conflict() -> None:
    check = {"name": "prov", "state": "Ready",
             "podSetUpdates": [{"name": "worker", "nodeSelector": {"pool": "b"}}]}  # fmt: skip
    wl = admitted(queued_job(), admissionChecks=[check])
    with pytest.raises(PodSetConflictError, match="admission check prov"):
        admitted_infos(wl, FLAVORS)


def test_a_topology_assignment_gates_the_pods_for_kueues_tas() -> None:
    wl = admitted(queued_job())
    wl["status"]["admission"]["podSetAssignments"][2]["topologyAssignment"] = {"levels": ["h"]}
    worker = {i.name: i for i in admitted_infos(wl, FLAVORS)}["worker"]
    assert worker.scheduling_gates == [{"name": "kueue.x-k8s.io/topology"}]
    assert worker.annotations["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"


def test_starting_against_the_jobs_own_node_selector_raises_a_conflict() -> None:
    job_obj = queued_job()
    job_obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {"pool": "z"}
    with pytest.raises(PodSetConflictError):
        started(job_obj, admitted_infos(admitted(job_obj), FLAVORS))


def test_start_then_stop_restores_the_original_templates_exactly() -> None:
    job_obj = queued_job()
    job_obj["spec"]["mxReplicaSpecs"]["Server"]["template"]["metadata"] = {"labels": {"own": "1"}}
    wl = admitted(job_obj)
    running = started(job_obj, admitted_infos(wl, FLAVORS))
    assert running["spec"]["runPolicy"]["suspend"] is False
    server = running["spec"]["mxReplicaSpecs"]["Server"]["template"]
    assert server["metadata"]["labels"]["own"] == "1"
    assert server["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "server"
    back = stopped(running, wl)
    assert back["spec"]["runPolicy"]["suspend"] is True
    assert back == job_obj


def test_stopping_without_a_workload_only_suspends() -> None:
    running = started(queued_job(), admitted_infos(admitted(queued_job()), FLAVORS))
    back = stopped(running, None)
    assert back["spec"]["runPolicy"]["suspend"] is True
    assert back["spec"]["mxReplicaSpecs"] == running["spec"]["mxReplicaSpecs"]


# -- status applies ------------------------------------------------------------------------------
def test_admission_apply_keeps_every_field_kueue_admission_owns() -> None:
    owned: dict[str, Any] = {
        "requeueState": {"count": 1}, "accumulatedPastExecutionTimeSeconds": 30,
        "clusterName": "worker-1", "unhealthyNodes": [{"name": "n1"}],
        "preemptionGates": [{"name": "g"}],
        "admissionChecks": [{"name": "mk", "state": "Ready", "message": "ok"}],
        "schedulingStats": {
            "evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
        },
    }  # fmt: skip
    wl = admitted(queued_job(), **owned)
    wl["status"]["conditions"].append(cond("SomethingElse", True, "X"))
    new = cond("Finished", True, "Succeeded", when=NOW_TEXT)
    body = admission_apply(wl, conditions=[new])
    status = body["status"]
    for key, value in owned.items():
        assert status[key] == value, key
    assert status["admission"] == wl["status"]["admission"]
    assert [c["type"] for c in status["conditions"]] == ["QuotaReserved", "Admitted", "Finished"]
    assert all(c["type"] in ADMISSION_CONDITIONS for c in status["conditions"])
    assert body["metadata"]["resourceVersion"] == "50" and body["metadata"]["uid"] == "wl-uid"


def test_release_clears_the_admission_and_requeues_after_preemption() -> None:
    body = release_apply(evicted(queued_job(), "Preempted"), now=NOW_TEXT)
    assert "admission" not in body["status"]
    quota = status_condition(body, "QuotaReserved")
    assert (quota["status"], quota["reason"]) == ("False", "Pending")
    requeued = status_condition(body, "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")
    admitted_cond = status_condition(body, "Admitted")
    assert (admitted_cond["status"], admitted_cond["reason"]) == ("False", "NoReservation")
    assert body["status"]["accumulatedPastExecutionTimeSeconds"] == 240


@pytest.mark.parametrize("reason", ["InactiveWorkload", "PodsReadyTimeout", "AdmissionCheck"])
def test_release_after_other_evictions_is_not_requeued(reason: str) -> None:
    body = release_apply(evicted(queued_job(), reason), now=NOW_TEXT)
    requeued = status_condition(body, "Requeued")
    assert (requeued["status"], requeued["reason"]) == ("False", reason)


# -- decide: Kueue's ReconcileGenericJob ---------------------------------------------------------
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


def test_an_evicted_suspended_job_without_pods_releases_the_quota() -> None:
    job_obj = queued_job()
    found = step(job_obj, evicted(job_obj))
    assert found.kind == "release" and found.body is not None
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
    assert (found.kind, found.message) == ("queue-name", "team-b")


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
    release_apply(wl, now=NOW_TEXT)
    assert (job_obj, wl) == before
