"""controller.integrations.kueue.workload: the Kueue Workload built for a job, and whether one
still stands for it."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from controller.integrations.kueue.podsets import admitted_infos, started
from controller.integrations.kueue.workload import (
    FINALIZER,
    JOB_UID_LABEL,
    Priority,
    build_kueue_workload,
    equivalent,
    held_back,
    priority_class,
    workload_name,
)
from controller.job.view import read_job
from tests.controller.kueue_samples import (
    FLAVORS,
    admitted,
    queued_job,
    workload,
)
from tests.controller.samples import view_of

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
    made = build_kueue_workload(view_of(queued_job()), priority=Priority())
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
    spec = build_kueue_workload(view_of(job_obj), priority=Priority())["spec"]
    assert [(p["name"], p["count"]) for p in spec["podSets"]] == [
        ("scheduler", 1), ("server", 2), ("worker", 3),
    ]  # fmt: skip
    worker = job_obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    assert spec["podSets"][2]["template"] == worker
    assert spec["queueName"] == "team-a"


def test_priority_is_zero_without_a_class_and_set_with_its_reference() -> None:
    plain = build_kueue_workload(view_of(queued_job()), priority=Priority())["spec"]
    assert plain["priority"] == 0 and "priorityClassRef" not in plain
    ref = Priority(1000, "kueue.x-k8s.io", "WorkloadPriorityClass", "high")
    spec = build_kueue_workload(view_of(queued_job()), priority=ref)["spec"]
    assert spec["priority"] == 1000  # Kueue's CEL: priority is required with priorityClassRef
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high",
    }  # fmt: skip


def test_the_max_exec_time_label_becomes_the_maximum_execution_time() -> None:
    labelled = queued_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "600"})
    spec = build_kueue_workload(view_of(labelled), priority=Priority())["spec"]
    assert spec["maximumExecutionTimeSeconds"] == 600
    bad = queued_job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "-1"})
    spec = build_kueue_workload(view_of(bad), priority=Priority())["spec"]
    assert "maximumExecutionTimeSeconds" not in spec
    assert not equivalent(view_of(labelled), workload(queued_job()))


# -- equivalence ---------------------------------------------------------------------------------


def test_a_replica_count_change_is_not_equivalent() -> None:
    wl = workload(queued_job())
    assert equivalent(view_of(queued_job()), wl)
    grown = queued_job(replicas={"Scheduler": 1, "Server": 1, "Worker": 3})
    assert not equivalent(view_of(grown), wl)


def test_a_resources_change_is_not_equivalent() -> None:
    wl = workload(queued_job())
    changed = queued_job()
    container = changed["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "2"}}
    assert not equivalent(view_of(changed), wl)


def test_what_admission_added_to_a_running_job_keeps_it_equivalent() -> None:
    job_obj = queued_job()
    wl = admitted(job_obj)
    running = started(view_of(job_obj), admitted_infos(wl, FLAVORS))
    assert running["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"]
    assert equivalent(view_of(running), wl)


# -- what the Workload reads of the job ----------------------------------------------------------
def test_the_priority_class_comes_from_the_scheduling_policy_even_under_the_legacy_place() -> None:
    nested = queued_job()
    nested["spec"]["runPolicy"]["schedulingPolicy"] = {"priorityClass": "p1"}
    assert priority_class(view_of(nested)) == "p1"
    legacy = queued_job()
    legacy["spec"].pop("runPolicy")
    legacy["spec"]["schedulingPolicy"] = {"priorityClass": "p2"}  # training-operator's old place
    assert priority_class(read_job(legacy)) == "p2"


def test_without_a_scheduling_policy_class_the_first_template_naming_one_gives_it() -> None:
    job_obj = queued_job()
    specs = job_obj["spec"]["mxReplicaSpecs"]
    specs["Worker"]["template"]["spec"]["priorityClassName"] = "workers"
    specs["Server"]["template"]["spec"]["priorityClassName"] = "servers"
    assert priority_class(view_of(job_obj)) == "servers"  # Server comes before Worker
    assert priority_class(view_of(queued_job())) == ""


def test_podsets_are_built_from_the_defaulted_templates() -> None:
    raw = queued_job()
    raw["spec"]["mxReplicaSpecs"]["Worker"].pop("replicas")  # defaulting makes it 1
    spec = build_kueue_workload(view_of(raw), priority=Priority())["spec"]
    assert [(p["name"], p["count"]) for p in spec["podSets"]][-1] == ("worker", 1)


# -- topology ------------------------------------------------------------------------------------


def with_annotations(job_obj: Obj, rtype: str, **annotations: str) -> Obj:
    meta = job_obj["spec"]["mxReplicaSpecs"][rtype]["template"].setdefault("metadata", {})
    meta.setdefault("annotations", {}).update(annotations)
    return job_obj


def test_every_podset_carries_the_pod_index_and_the_topology_its_template_asks_for() -> None:
    job_obj = with_annotations(
        queued_job(), "Worker", **{"kueue.x-k8s.io/podset-required-topology": "rack"}
    )
    sets = build_kueue_workload(view_of(job_obj), priority=Priority())["spec"]["podSets"]
    requests = {p["name"]: p["topologyRequest"] for p in sets}
    index = "training.kubeflow.org/replica-index"
    assert requests["worker"] == {"required": "rack", "podIndexLabel": index}
    assert requests["scheduler"] == {"podIndexLabel": index}


def test_a_topology_change_is_not_equivalent_but_a_workload_without_the_pod_index_is() -> None:
    plain = workload(queued_job())
    for podset in plain["spec"]["podSets"]:
        podset.pop("topologyRequest", None)  # written before topology requests were
    assert equivalent(view_of(queued_job()), plain)
    racked = with_annotations(
        queued_job(), "Worker", **{"kueue.x-k8s.io/podset-preferred-topology": "rack"}
    )
    assert not equivalent(view_of(racked), plain)
    assert equivalent(view_of(racked), workload(racked))


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([], None),
        ([{"type": "QuotaReserved", "status": "False", "reason": "WaitingForQuota",
           "message": "insufficient cpu"}], ("WaitingForQuota", "insufficient cpu")),
        ([{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
          {"type": "Admitted", "status": "False", "reason": "NoChecks", "message": "checks"}],
         ("NoChecks", "checks")),
        ([{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
          {"type": "Admitted", "status": "True", "reason": "Admitted"}], None),
    ],
)  # fmt: skip
def test_what_holds_a_workload_back_is_its_first_false_admission_condition(
    conditions: list[Obj], expected: tuple[str, str] | None
) -> None:
    assert held_back({"status": {"conditions": conditions}}) == expected


def test_a_job_started_on_a_topology_assignment_still_matches_its_workload() -> None:
    job_obj = with_annotations(
        queued_job(), "Worker", **{"kueue.x-k8s.io/podset-required-topology": "rack"}
    )
    wl = admitted(job_obj)
    for assignment in wl["status"]["admission"]["podSetAssignments"]:
        assignment["topologyAssignment"] = {"levels": ["kubernetes.io/hostname"], "slices": []}
    running = started(view_of(job_obj), admitted_infos(wl, FLAVORS))
    scheduler = running["spec"]["mxReplicaSpecs"]["Scheduler"]["template"]["metadata"]
    assert scheduler["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
    assert equivalent(view_of(running), wl)
