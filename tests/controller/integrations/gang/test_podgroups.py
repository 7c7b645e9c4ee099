"""controller.integrations.gang.podgroups: a job → its gang Workload and PodGroup, what its pods
carry, when it waits."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.integrations.gang.podgroups import (
    GangScheduler,
    build_crd_pod_group,
    crd_pod_group_update,
    delays_pods,
    gang_waiting,
    join_pod,
    min_available,
    min_resources,
)
from controller.job.desired import build_pod, desired_slots
from controller.job.pods import JobPods
from controller.job.view import read_job
from tests.controller.samples import job, pods_all, view_of


def test_min_available_defaults_to_every_replica_of_the_job() -> None:
    assert min_available(view_of(job())) == 4
    assert min_available(view_of(job(replicas={"Scheduler": 1, "Worker": 7}))) == 8


@pytest.mark.parametrize(("given", "expected"), [(2, 2), (4, 4), (0, 4), (9, 4), ("2", 4)])
def test_min_available_is_taken_when_it_is_a_count_within_the_job(
    given: object, expected: int
) -> None:
    sample = job(run_policy={"schedulingPolicy": {"minAvailable": given}})
    assert min_available(view_of(sample)) == expected


def test_min_available_is_read_from_the_legacy_scheduling_policy_too() -> None:
    legacy = job()
    legacy["spec"].pop("runPolicy", None)
    legacy["spec"]["schedulingPolicy"] = {"minAvailable": 2}  # training-operator's old place
    assert min_available(read_job(legacy)) == 2
    assert build_crd_pod_group(read_job(legacy), "volcano")["spec"]["minMember"] == 2


def joined(sample: dict[str, Any], key: str, scheduler: GangScheduler) -> dict[str, Any]:
    """The pod of slot ``key`` as built, then joined to the gang of ``scheduler``."""
    view = view_of(sample)
    slot = next(s for s in desired_slots(view) if s.key == key)
    pod = build_pod(view, slot)
    join_pod(pod, view, scheduler, replica_type=slot.replica_type.value.lower())
    return pod


def test_pods_join_the_gang_by_its_group_name_only_under_native() -> None:
    sample = job()
    assert joined(sample, "scheduler-0", "native")["spec"]["schedulingGroup"] == {
        "podGroupName": "mnist"
    }
    for scheduler in ("none", "volcano", "scheduler-plugins"):
        assert "schedulingGroup" not in joined(sample, "scheduler-0", scheduler)["spec"]
    view = view_of(sample)
    assert joined(sample, "scheduler-0", "none") == build_pod(view, desired_slots(view)[0])


def test_a_job_waits_for_its_gang_while_fewer_than_min_available_are_placed() -> None:
    sample = view_of(job())
    unplaced = pods_all(job())
    for pod in unplaced:
        pod["spec"].pop("nodeName", None)
    message = gang_waiting(sample, JobPods.read(unplaced), "native")
    assert message is not None and "0 of 4 pods placed" in message
    assert gang_waiting(sample, JobPods.read(unplaced), "none") is None
    assert gang_waiting(sample, JobPods.read(unplaced[:3]), "native") is None, (
        "not every pod created yet"
    )
    placed = copy.deepcopy(unplaced)
    for pod in placed:
        pod["spec"]["nodeName"] = "node-1"
    assert gang_waiting(sample, JobPods.read(placed), "native") is None


# -- volcano and scheduler-plugins: what training-operator v1.8.1 writes ------------------------
# The expectations below are read off training-operator's module: common/job.go (the spec),
# common/scheduling.go (metadata), common/util.go (CalcPGMinResources), control/podgroup_control.go
# (what pods carry).


def gpu_job(**kwargs: Any) -> dict[str, Any]:
    """Scheduler (250m CPU, 64Mi), Server (requests absent: its limits count), 2 GPU Workers."""
    sample = job(**kwargs)
    specs = sample["spec"]["mxReplicaSpecs"]
    specs["Scheduler"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "250m", "memory": "64Mi"}
    }
    specs["Server"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "1", "memory": "1Gi"}
    }
    specs["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "memory": "512Mi"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    return sample


def test_volcano_pod_group_is_training_operators() -> None:
    sample = gpu_job()
    sample["metadata"]["annotations"] = {"team": "vision"}
    assert build_crd_pod_group(view_of(sample), "volcano") == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "mnist",
            "namespace": "ns",
            "annotations": {"team": "vision"},
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "MXJob",
                    "name": "mnist",
                    "uid": "job-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        # Requests of every pod, a container's limits when it has no requests (the Server's);
        # the Workers' GPU is only a limit, so it is not counted.
        "spec": {
            "minMember": 4,
            "queue": "default",
            "minResources": {"cpu": "3250m", "memory": "2112Mi"},
        },
    }


def test_scheduler_plugins_pod_group_is_training_operators() -> None:
    sample = view_of(gpu_job(run_policy={"schedulingPolicy": {"scheduleTimeoutSeconds": 60}}))
    group = build_crd_pod_group(sample, "scheduler-plugins")
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert "annotations" not in group["metadata"]
    assert group["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert group["spec"] == {
        "minMember": 4,
        "minResources": {"cpu": "3250m", "memory": "2112Mi"},
        "scheduleTimeoutSeconds": 60,
    }


def test_scheduling_policy_fields_go_where_training_operator_puts_them() -> None:
    policy = {
        "minAvailable": 2,
        "queue": "research",
        "priorityClass": "high",
        "minResources": {"cpu": "8", "nvidia.com/gpu": "2"},
        "scheduleTimeoutSeconds": 30,
    }
    sample = view_of(gpu_job(run_policy={"schedulingPolicy": policy}))
    assert build_crd_pod_group(sample, "volcano")["spec"] == {
        "minMember": 2,
        "queue": "research",
        "priorityClassName": "high",
        "minResources": {"cpu": "8", "nvidia.com/gpu": "2"},
    }
    assert build_crd_pod_group(sample, "scheduler-plugins")["spec"] == {
        "minMember": 2,
        "minResources": {"cpu": "8", "nvidia.com/gpu": "2"},
        "scheduleTimeoutSeconds": 30,
    }


def test_min_resources_counts_the_first_min_available_pods_by_priority() -> None:
    sample = gpu_job(run_policy={"schedulingPolicy": {"minAvailable": 2}})
    # Job order (no priorities): the Scheduler, then the Server.
    assert min_resources(view_of(sample)) == {"cpu": "1250m", "memory": "1088Mi"}
    specs = sample["spec"]["mxReplicaSpecs"]
    specs["Worker"]["template"]["spec"]["priorityClassName"] = "gpu-first"
    assert min_resources(view_of(sample), priorities={"gpu-first": 1000}) == {
        "cpu": "2",
        "memory": "1Gi",
    }


def test_a_job_without_requests_has_empty_min_resources() -> None:
    sample = view_of(job())
    assert build_crd_pod_group(sample, "volcano")["spec"]["minResources"] == {}
    assert "minResources" not in build_crd_pod_group(sample, "scheduler-plugins")["spec"]


def test_an_existing_volcano_group_keeps_its_queue_and_is_updated_to_the_job() -> None:
    sample = view_of(gpu_job())
    group = build_crd_pod_group(sample, "volcano")
    assert crd_pod_group_update(group, sample, "volcano") is None
    moved = copy.deepcopy(group)
    moved["spec"]["queue"] = "elsewhere"
    assert crd_pod_group_update(moved, sample, "volcano") is None
    resized = view_of(gpu_job(replicas={"Scheduler": 1, "Server": 1, "Worker": 4}))
    updated = crd_pod_group_update(moved, resized, "volcano")
    assert updated is not None
    assert updated["spec"]["minMember"] == 6 and updated["spec"]["queue"] == "elsewhere"
    assert updated["metadata"] == moved["metadata"]


def test_only_volcano_delays_pods_until_its_group_is_admitted() -> None:
    group = build_crd_pod_group(view_of(job()), "volcano")
    assert delays_pods(None, "volcano") and delays_pods(group, "volcano")
    assert delays_pods({**group, "status": {"phase": "Pending"}}, "volcano")
    for phase in ("Inqueue", "Running", "Unknown"):
        assert not delays_pods({**group, "status": {"phase": phase}}, "volcano")
    assert not delays_pods(None, "scheduler-plugins")


@pytest.mark.parametrize(
    ("scheduler", "scheduler_name", "labels", "annotations"),
    [
        (
            "volcano",
            "volcano",
            {},
            {"scheduling.k8s.io/group-name": "mnist", "volcano.sh/task-spec": "worker"},
        ),
        (
            "scheduler-plugins",
            "scheduler-plugins-scheduler",
            {"scheduling.x-k8s.io/pod-group": "mnist"},
            {},
        ),
    ],
)
def test_pods_carry_the_scheduler_and_their_group(
    scheduler: GangScheduler,
    scheduler_name: str,
    labels: dict[str, str],
    annotations: dict[str, str],
) -> None:
    sample = job()
    pod = joined(sample, "worker-1", scheduler)
    assert pod["spec"]["schedulerName"] == scheduler_name
    assert "schedulingGroup" not in pod["spec"]
    assert labels.items() <= pod["metadata"]["labels"].items()
    assert annotations.items() <= (pod["metadata"].get("annotations") or {}).items()
    plain = joined(sample, "worker-1", "none")
    assert "schedulerName" not in plain["spec"]
    assert set(pod["metadata"]["labels"]) - set(plain["metadata"]["labels"]) == set(labels)
    # A scheduler named in the template is kept (training-operator warns, and does not override).
    sample["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["schedulerName"] = "mine"
    assert joined(sample, "worker-1", scheduler)["spec"]["schedulerName"] == "mine"
