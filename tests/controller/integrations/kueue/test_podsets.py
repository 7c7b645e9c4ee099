"""controller.integrations.kueue.podsets: what admission adds to a job's pod templates and how
stopping takes it away."""

from __future__ import annotations

from typing import Any

import pytest

from controller.integrations.kueue.podsets import (
    PodSetConflictError,
    admitted_infos,
    started,
    stopped,
)
from tests.controller.kueue_samples import (
    FLAVORS,
    admitted,
    queued_job,
)
from tests.controller.samples import view_of

Obj = dict[str, Any]


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
        started(view_of(job_obj), admitted_infos(admitted(job_obj), FLAVORS))


def test_start_then_stop_restores_the_original_templates_exactly() -> None:
    job_obj = queued_job()
    job_obj["spec"]["mxReplicaSpecs"]["Server"]["template"]["metadata"] = {"labels": {"own": "1"}}
    wl = admitted(job_obj)
    running = started(view_of(job_obj), admitted_infos(wl, FLAVORS))
    assert running["spec"]["runPolicy"]["suspend"] is False
    server = running["spec"]["mxReplicaSpecs"]["Server"]["template"]
    assert server["metadata"]["labels"]["own"] == "1"
    assert server["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "server"
    back = stopped(view_of(running), wl)
    assert back["spec"]["runPolicy"]["suspend"] is True
    assert back == job_obj


def test_stopping_without_a_workload_only_suspends() -> None:
    running = started(view_of(queued_job()), admitted_infos(admitted(queued_job()), FLAVORS))
    back = stopped(view_of(running), None)
    assert back["spec"]["runPolicy"]["suspend"] is True
    assert back["spec"]["mxReplicaSpecs"] == running["spec"]["mxReplicaSpecs"]


def test_starting_writes_the_stored_job_not_its_defaults() -> None:
    stored = queued_job()
    stored["spec"]["mxReplicaSpecs"]["Worker"].pop("replicas")
    running = started(view_of(stored), admitted_infos(admitted(queued_job()), FLAVORS))
    assert "replicas" not in running["spec"]["mxReplicaSpecs"]["Worker"]
    assert stored["spec"]["runPolicy"]["suspend"] is True, "the view's dict is not changed"
