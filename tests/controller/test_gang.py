"""controller.gang: a job → its Workload and PodGroup, what its pods carry, when it waits."""

from __future__ import annotations

import copy

import pytest

from controller.desired import build_pod, desired_slots
from controller.gang import (
    build_pod_group,
    build_workload,
    gang_waiting,
    min_available,
    pod_group_matches,
    workload_matches,
)
from tests.controller.samples import job, pods_all

LABELS = {"training.kubeflow.org/job-name": "mnist"}


def test_min_available_defaults_to_every_replica_of_the_job() -> None:
    assert min_available(job()) == 4
    assert min_available(job(replicas={"Scheduler": 1, "Worker": 7})) == 8


@pytest.mark.parametrize(("given", "expected"), [(2, 2), (4, 4), (0, 4), (9, 4), ("2", 4)])
def test_min_available_is_taken_when_it_is_a_count_within_the_job(
    given: object, expected: int
) -> None:
    sample = job(run_policy={"schedulingPolicy": {"minAvailable": given}})
    assert min_available(sample) == expected


def test_workload_and_pod_group_are_owned_by_the_job_and_name_one_gang() -> None:
    sample = job(run_policy={"schedulingPolicy": {"minAvailable": 3}})
    workload = build_workload(sample, labels=LABELS)
    group = build_pod_group(sample, labels=LABELS)
    for obj in (workload, group):
        assert obj["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert obj["metadata"]["name"] == "mnist" and obj["metadata"]["namespace"] == "ns"
        assert obj["metadata"]["labels"] == LABELS
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner["uid"] == "job-uid" and owner["controller"] and owner["kind"] == "MXJob"
    assert workload["spec"]["controllerRef"] == {
        "apiGroup": "kubeflow.org",
        "kind": "MXJob",
        "name": "mnist",
    }
    (template,) = workload["spec"]["podGroupTemplates"]
    assert template["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert group["spec"]["podGroupTemplateRef"] == {
        "workload": {"workloadName": "mnist", "podGroupTemplateName": template["name"]}
    }


def test_existing_objects_match_only_the_same_job_and_minimum() -> None:
    sample = job()
    group, workload = build_pod_group(sample, labels=LABELS), build_workload(sample, labels=LABELS)
    assert pod_group_matches(group, sample) and workload_matches(workload, sample)
    resized = job(replicas={"Scheduler": 1, "Server": 1, "Worker": 4})
    assert not pod_group_matches(group, resized) and not workload_matches(workload, resized)
    successor = job(uid="another-uid")
    assert not pod_group_matches(group, successor) and not workload_matches(workload, successor)


def test_pods_join_the_gang_only_under_native() -> None:
    sample = job()
    slot = desired_slots(sample)[0]
    assert build_pod(sample, slot, gang="native")["spec"]["schedulingGroup"] == {
        "podGroupName": "mnist"
    }
    assert "schedulingGroup" not in build_pod(sample, slot)["spec"]


def test_a_job_waits_for_its_gang_while_fewer_than_min_available_are_placed() -> None:
    sample = job()
    unplaced = pods_all(sample)
    for pod in unplaced:
        pod["spec"].pop("nodeName", None)
    message = gang_waiting(sample, unplaced, "native")
    assert message is not None and "0 of 4 pods placed" in message
    assert gang_waiting(sample, unplaced, "none") is None
    assert gang_waiting(sample, unplaced[:3], "native") is None, "not every pod created yet"
    placed = copy.deepcopy(unplaced)
    for pod in placed:
        pod["spec"]["nodeName"] = "node-1"
    assert gang_waiting(sample, placed, "native") is None
