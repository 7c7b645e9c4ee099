"""queueing: Kueue's job contract for MXJob as pure decisions (Kueue v0.19.2's jobframework)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from controller.integrations.kueue.podsets import admitted_infos, started
from controller.integrations.kueue.workload import (
    FINALIZER,
    JOB_UID_LABEL,
    Priority,
    build_workload,
    equivalent,
    workload_name,
)
from tests.controller.kueue_samples import (
    FLAVORS,
    admitted,
    queued_job,
    workload,
)

Obj = dict[str, Any]


def kueue_name(kind: str, group: str, name: str, uid: str) -> str:
    """Kueue's GetWorkloadNameForOwnerWithGVK, written out from workload_names.go."""
    digest = hashlib.sha1(b"\n".join(x.encode() for x in (kind, group, name, uid))).hexdigest()
    return (kind.lower() + "-" + name)[: 253 - 1 - 5] + "-" + digest[:5]


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
