"""A job's NetworkPolicy: what it selects, what it admits, and when it is put back
(controller/integrations/netpol/policy.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.integrations.netpol.policy import (
    build_policy,
    job_pods,
    policy_update,
)
from controller.job.desired import build_pod, desired_slots, job_labels
from shared.constants import LABEL_JOB_NAME, LABEL_OPERATOR_NAME
from tests.controller.samples import job, training_operator_labels, view_of

MNIST = view_of(job())


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector read as the API server reads it (matchLabels and In expressions)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def test_the_policy_selects_every_pod_the_controller_builds_for_the_job() -> None:
    selector = build_policy(MNIST, labels={})["spec"]["podSelector"]
    pods = [build_pod(MNIST, slot) for slot in desired_slots(MNIST)]
    assert len(pods) == 4
    assert all(selects(selector, pod["metadata"]["labels"]) for pod in pods)


def test_pods_adopted_from_training_operator_are_the_jobs_too() -> None:
    adopted = training_operator_labels(job(), "worker-0")
    assert selects(job_pods(MNIST), adopted)


def test_another_jobs_pods_and_another_kind_of_job_of_the_same_name_are_not_selected() -> None:
    other = view_of(job("other"))
    other_pod = build_pod(other, desired_slots(other)[0])
    assert not selects(job_pods(MNIST), other_pod["metadata"]["labels"])
    tfjob_pod = {LABEL_JOB_NAME: "mnist", LABEL_OPERATOR_NAME: "tfjob-controller"}
    assert not selects(job_pods(MNIST), tfjob_pod)


def test_ingress_is_admitted_on_every_port_only_from_the_jobs_own_pods() -> None:
    spec = build_policy(MNIST, labels={})["spec"]
    assert spec["policyTypes"] == ["Ingress"]  # egress is the namespace's business
    (rule,) = spec["ingress"]
    assert "ports" not in rule  # ps-lite's and TVM's ports are chosen at run time
    assert rule["from"] == [{"podSelector": job_pods(MNIST)}]  # no namespaceSelector: same one


def test_the_jobs_pods_still_reach_the_controllers_progress_port() -> None:
    """The pods report their progress to the operator's namespace (shared/progress.py): the
    policy restricts no egress, so it opens nothing new and closes nothing of that; the operator's
    own policies admit them there (manifests/components/network-policies)."""
    spec = build_policy(MNIST, labels={})["spec"]
    assert "Egress" not in spec["policyTypes"] and "egress" not in spec


def test_the_policy_is_named_after_the_job_and_owned_by_it_for_garbage_collection() -> None:
    policy = build_policy(MNIST, labels=job_labels(MNIST))
    assert policy["apiVersion"] == "networking.k8s.io/v1" and policy["kind"] == "NetworkPolicy"
    meta = policy["metadata"]
    assert (meta["namespace"], meta["name"]) == ("ns", "mnist")
    assert meta["labels"] == job_labels(MNIST)
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("MXJob", "mnist", "job-uid")
    assert owner["controller"] is True and owner["blockOwnerDeletion"] is True


def test_a_stored_policy_with_the_wanted_spec_needs_no_update() -> None:
    stored = {**build_policy(MNIST, labels={}), "metadata": {"resourceVersion": "7"}}
    assert policy_update(stored, build_policy(MNIST, labels={})) is None


def test_a_policy_edited_by_hand_is_put_back_keeping_its_metadata() -> None:
    stored = build_policy(MNIST, labels={})
    stored["metadata"]["resourceVersion"] = "7"
    stored["spec"]["ingress"] = [{}]  # opened to everyone
    update = policy_update(stored, build_policy(MNIST, labels={}))
    assert update is not None
    assert update["spec"] == build_policy(MNIST, labels={})["spec"]
    assert update["metadata"]["resourceVersion"] == "7"
