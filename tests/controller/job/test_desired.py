"""desired: the pod and the headless Service of every replica."""

from __future__ import annotations

import pytest

from controller.job.desired import (
    build_pod,
    build_service,
    desired_slots,
    pod_restart_policy,
    service_adoption_patch,
)
from controller.job.observed import ATTEMPT_ANNOTATION
from shared.constants import RestartPolicy
from tests.controller.samples import job, slot, training_operator_service, view_of


def test_one_slot_per_replica_index_in_canonical_order() -> None:
    slots = desired_slots(view_of(job(replicas={"Worker": 2, "Scheduler": 1, "Server": 1})))
    assert [s.name for s in slots] == [
        "mnist-scheduler-0",
        "mnist-server-0",
        "mnist-worker-0",
        "mnist-worker-1",
    ]


def test_the_pod_carries_name_labels_owner_and_the_template() -> None:
    j = job()
    j["spec"]["mxReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"team": "vision"},
        "annotations": {"note": "keep"},
    }
    built = build_pod(view_of(j), slot(j, "worker-1"))
    meta = built["metadata"]
    assert (meta["name"], meta["namespace"]) == ("mnist-worker-1", "ns")
    assert meta["labels"] == {
        "team": "vision",
        "training.kubeflow.org/operator-name": "mxjob-operator",
        "training.kubeflow.org/job-name": "mnist",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
        "training.kubeflow.org/job-role": "worker",
    }
    assert meta["annotations"] == {"note": "keep"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MXJob",
            "name": "mnist",
            "uid": "job-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    container = built["spec"]["containers"][0]
    assert container["image"] == "mxjob/mxnet:cpu"
    assert any(e["name"] == "DMLC_ROLE" for e in container["env"])  # from the webhook's defaults


def test_the_scheduler_is_the_master_role() -> None:
    j = job()
    labels = build_pod(view_of(j), slot(j, "scheduler-0"))["metadata"]["labels"]
    assert labels["training.kubeflow.org/job-role"] == "master"


def test_a_pod_of_a_later_attempt_is_annotated_with_it_and_nothing_else() -> None:
    """Status is the only record of restarts: a pod only says which attempt it belongs to."""
    j = job()
    assert (
        "annotations" not in build_pod(view_of(j), slot(j, "worker-0"))["metadata"]
        or not (build_pod(view_of(j), slot(j, "worker-0"))["metadata"]["annotations"])
    )
    built = build_pod(view_of(j), slot(j, "worker-0"), attempt=2)
    assert built["metadata"]["annotations"] == {ATTEMPT_ANNOTATION: "2"}


@pytest.mark.parametrize(
    ("policy", "pod_policy"),
    [
        (RestartPolicy.EXIT_CODE, "Never"),
        (RestartPolicy.NEVER, "Never"),
        (RestartPolicy.ON_FAILURE, "OnFailure"),
        (RestartPolicy.ALWAYS, "Always"),
    ],
)
def test_restart_policy_passes_through_except_exit_code(
    policy: RestartPolicy, pod_policy: str
) -> None:
    assert pod_restart_policy(policy) == pod_policy
    j = job(restart_policy=policy.value)
    assert build_pod(view_of(j), slot(j, "worker-0"))["spec"]["restartPolicy"] == pod_policy


def test_the_service_is_headless_publishes_not_ready_and_selects_one_replica() -> None:
    j = job()
    j["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "mxjob-port", "containerPort": 9999}
    ]
    service = build_service(view_of(j), slot(j, "worker-1"))
    spec = service["spec"]
    assert service["metadata"]["name"] == "mnist-worker-1"
    assert spec["clusterIP"] == "None" and spec["publishNotReadyAddresses"] is True
    assert spec["selector"] == {
        "training.kubeflow.org/job-name": "mnist",
        "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1",
    }
    assert spec["ports"] == [
        {"name": "mxjob-port", "port": 9999, "targetPort": 9999, "protocol": "TCP"}
    ]
    assert service["metadata"]["ownerReferences"][0]["controller"] is True


def test_a_service_training_operator_made_gets_our_selector_labels_and_not_ready_addresses() -> (
    None
):
    j = job()
    theirs = training_operator_service(j, "worker-1")
    patch = service_adoption_patch(theirs, build_service(view_of(j), slot(j, "worker-1")))
    assert patch == {
        "spec": {
            "selector": {
                "training.kubeflow.org/operator-name": None,
                "training.kubeflow.org/job-name": "mnist",
                "training.kubeflow.org/replica-type": "worker",
                "training.kubeflow.org/replica-index": "1",
            },
            "publishNotReadyAddresses": True,
        },
        "metadata": {
            "labels": {
                "training.kubeflow.org/operator-name": "mxjob-operator",
                "training.kubeflow.org/job-role": "worker",
            }
        },
    }


def test_a_service_of_our_own_shape_needs_no_patch() -> None:
    j = job()
    ours = build_service(view_of(j), slot(j, "scheduler-0"))
    assert service_adoption_patch(ours, build_service(view_of(j), slot(j, "scheduler-0"))) is None
