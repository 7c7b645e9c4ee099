"""controller.integrations.gang.native: a job → its kube-scheduler Workload and PodGroup in
v1alpha2 (Kubernetes v1.36) and v1alpha3 (v1.37), its topology and priority, and how a stored
object stands to the wanted one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.integrations.gang.native import (
    NativeVersion,
    build_gang_workload,
    build_pod_group,
    compare,
    gang_part,
    not_kept_message,
)
from tests.controller.samples import job, view_of

LABELS = {"training.kubeflow.org/job-name": "mnist"}
RACK = "topology.kubernetes.io/rack"
VERSIONS: tuple[NativeVersion, ...] = ("v1alpha2", "v1alpha3")


def policy(**fields: Any) -> dict[str, Any]:
    return job(run_policy={"schedulingPolicy": fields})


def test_workload_and_pod_group_are_owned_by_the_job_and_name_one_gang() -> None:
    sample = view_of(policy(minAvailable=3))
    workload = build_gang_workload(sample, labels=LABELS)
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


def test_v1alpha3_names_the_template_with_workload_ref() -> None:
    sample = view_of(policy(minAvailable=3))
    workload = build_gang_workload(sample, labels=LABELS, version="v1alpha3")
    group = build_pod_group(sample, labels=LABELS, version="v1alpha3")
    assert workload["apiVersion"] == group["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    (template,) = workload["spec"]["podGroupTemplates"]
    assert "podGroupTemplateRef" not in group["spec"]
    assert group["spec"]["workloadRef"] == {
        "workloadName": "mnist",
        "templateName": template["name"],
    }
    assert group["spec"]["schedulingPolicy"] == template["schedulingPolicy"]


@pytest.mark.parametrize(
    ("version", "reference"), [("v1alpha2", "podGroupTemplateRef"), ("v1alpha3", "workloadRef")]
)
def test_a_job_without_topology_or_priority_gets_only_its_gang_size(
    version: NativeVersion, reference: str
) -> None:
    sample = view_of(policy(queue="q", minResources={"cpu": "1"}))
    (template,) = build_gang_workload(sample, labels=LABELS, version=version)["spec"][
        "podGroupTemplates"
    ]
    group = build_pod_group(sample, labels=LABELS, version=version)
    assert set(template) == {"name", "schedulingPolicy"}
    assert set(group["spec"]) == {reference, "schedulingPolicy"}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_topology_key_keeps_the_gang_in_one_domain_of_that_label(
    version: NativeVersion,
) -> None:
    sample = view_of(policy(topologyKey=RACK))
    workload = build_gang_workload(sample, labels=LABELS, version=version)
    group = build_pod_group(sample, labels=LABELS, version=version)
    for part in (gang_part(workload), gang_part(group)):
        assert part["schedulingConstraints"] == {"topology": [{"key": RACK}]}
        assert "priorityClassName" not in part and "disruptionMode" not in part


@pytest.mark.parametrize(
    ("version", "whole_gang"), [("v1alpha2", "PodGroup"), ("v1alpha3", {"all": {}})]
)
def test_a_priority_class_comes_with_preemption_of_the_whole_gang(
    version: NativeVersion, whole_gang: object
) -> None:
    sample = view_of(policy(priorityClass="high"))
    workload = build_gang_workload(sample, labels=LABELS, version=version)
    group = build_pod_group(sample, labels=LABELS, version=version)
    for part in (gang_part(workload), gang_part(group)):
        assert part["priorityClassName"] == "high"
        assert part["disruptionMode"] == whole_gang
        assert "schedulingConstraints" not in part


def stored(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``obj`` as the API server could store it: the gang part with ``changes`` (None drops)."""
    copied = copy.deepcopy(obj)
    part = gang_part(copied)
    assert isinstance(part, dict)
    for name, value in changes.items():
        if value is None:
            part.pop(name, None)
        else:
            part[name] = value
    return copied


@pytest.mark.parametrize("version", VERSIONS)
def test_a_stored_object_as_written_matches(version: NativeVersion) -> None:
    sample = view_of(policy(topologyKey=RACK, priorityClass="high"))
    for build in (build_gang_workload, build_pod_group):
        wanted = build(sample, labels=LABELS, version=version)
        assert compare(wanted, stored(wanted, priority=1000)) == compare(wanted, wanted)
        assert compare(wanted, wanted).changed == compare(wanted, wanted).missing == ()


@pytest.mark.parametrize(
    ("version", "default"), [("v1alpha2", "Pod"), ("v1alpha3", {"single": {}})]
)
def test_what_the_api_server_fills_in_is_no_change(version: NativeVersion, default: object) -> None:
    wanted = build_pod_group(view_of(job()), labels=LABELS, version=version)
    filled = stored(wanted, disruptionMode=default, priorityClassName="cluster-default", priority=7)
    comparison = compare(wanted, filled)
    assert comparison.changed == () and comparison.missing == ()


def test_a_resized_gang_or_another_option_is_a_change() -> None:
    wanted = build_pod_group(view_of(policy(topologyKey=RACK)), labels=LABELS)
    resized = stored(wanted, schedulingPolicy={"gang": {"minCount": 9}})
    assert compare(wanted, resized).changed == ("schedulingPolicy",)
    other_rack = stored(wanted, schedulingConstraints={"topology": [{"key": "zone"}]})
    assert compare(wanted, other_rack).changed == ("schedulingConstraints",)
    plain = build_pod_group(view_of(job()), labels=LABELS)
    whole = stored(plain, disruptionMode="PodGroup")
    assert compare(plain, whole).changed == ("disruptionMode",), "priority taken off the job"


def test_fields_the_stored_object_lacks_are_missing_not_changed() -> None:
    wanted = build_pod_group(view_of(policy(topologyKey=RACK, priorityClass="high")), labels=LABELS)
    dropped = stored(
        wanted, schedulingConstraints=None, priorityClassName=None, disruptionMode=None
    )
    comparison = compare(wanted, dropped)
    assert comparison.changed == ()
    assert comparison.missing == ("schedulingConstraints", "priorityClassName", "disruptionMode")


def test_the_message_names_each_field_with_the_gate_it_needs() -> None:
    fields = ("schedulingConstraints", "disruptionMode")
    message = not_kept_message(("PodGroup",), fields, "v1alpha2")
    assert "schedulingConstraints (feature gate TopologyAwareWorkloadScheduling)" in message
    assert "disruptionMode (feature gate WorkloadAwarePreemption)" in message
    assert "scheduling.k8s.io/v1alpha2" in message
    v1alpha3 = not_kept_message(("PodGroup",), ("priorityClassName",), "v1alpha3")
    assert (
        "priorityClassName of the job's PodGroup" in v1alpha3
        and "feature gate" not in (v1alpha3.split(":")[0])
    )
