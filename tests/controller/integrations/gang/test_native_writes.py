"""controller.integrations.gang.native_writes: the version the cluster serves, and a job's
Workload and PodGroup as an API server with some feature gates off keeps them (in-memory fake:
it drops gated fields silently, as kube-apiserver's PodGroup strategy does)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.integrations.gang.native import NativeVersion
from controller.integrations.gang.native_writes import (
    GangNotReadyError,
    NativeTarget,
    ensure_native_gang,
    gang_path,
    served_version,
)
from controller.integrations.gang.podgroup_writes import detect
from tests.controller.fakes import FakeApi
from tests.controller.integrations.gang.gated_api import GatedApi
from tests.controller.samples import job, view_of

RACK = "topology.kubernetes.io/rack"
LABELS = {"training.kubeflow.org/job-name": "mnist"}
TOPOLOGY_JOB = view_of(job(run_policy={"schedulingPolicy": {"topologyKey": RACK}}))


def written(api: FakeApi, plural: str, version: NativeVersion = "v1alpha2") -> dict[str, Any]:
    return api.objects[gang_path(plural, "ns", "mnist", version=version)]


@pytest.mark.parametrize(
    ("served", "expected"),
    [
        (("v1alpha2",), "v1alpha2"),
        (("v1alpha2", "v1alpha3"), "v1alpha3"),
        (("v1alpha3",), "v1alpha3"),
        ((), None),
    ],
)
def test_the_newest_served_version_is_written(
    served: tuple[str, ...], expected: NativeVersion | None
) -> None:
    api = GatedApi(versions=served)
    assert served_version(api) == expected
    assert detect(api) == ("native" if expected else "none")


def test_the_objects_go_to_the_version_the_cluster_serves() -> None:
    api = GatedApi(versions=("v1alpha3",))
    target = NativeTarget()
    assert ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=target) == []
    assert target.version == "v1alpha3"
    group = written(api, "podgroups", "v1alpha3")
    assert group["spec"]["workloadRef"]["workloadName"] == "mnist"
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}


def test_a_server_that_keeps_every_field_is_not_told_about() -> None:
    api = GatedApi()
    target = NativeTarget()
    assert ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=target) == []
    assert ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=target) == []
    assert [r.method for r in api.writes()] == ["POST", "POST"]


def test_a_field_the_server_drops_is_said_and_the_objects_are_kept() -> None:
    api = GatedApi(dropped=("schedulingConstraints",))
    target = NativeTarget()
    (message,) = ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=target)
    assert "of the job's Workload and PodGroup" in message
    assert "schedulingConstraints (feature gate TopologyAwareWorkloadScheduling)" in message
    assert "schedulingConstraints" not in written(api, "podgroups")["spec"]
    again = ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=target)
    assert again == [message]
    assert [r.method for r in api.writes()] == ["POST", "POST"], "never replaced"


def test_after_a_restart_one_dry_run_tells_a_dropped_field_from_a_new_one() -> None:
    api = GatedApi(dropped=("schedulingConstraints",))
    ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=NativeTarget())
    restarted = NativeTarget()
    messages = ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=restarted)
    assert len(messages) == 1
    dry_runs = api.writes()[2:]
    assert [(r.method, r.query) for r in dry_runs] == [("POST", [("dryRun", "All")])] * 2
    assert "generateName" in dry_runs[0].body["metadata"]
    ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=restarted)
    assert len(api.writes()) == 4, "learned once, no more dry runs, nothing replaced"


def test_a_topology_the_job_gained_while_suspended_replaces_the_pod_group() -> None:
    api = GatedApi()
    plain = view_of(job())
    ensure_native_gang(api, plain, labels=LABELS, target=NativeTarget())
    old_uid = written(api, "workloads")["metadata"]["uid"]
    with pytest.raises(GangNotReadyError, match="schedulingConstraints"):
        ensure_native_gang(api, TOPOLOGY_JOB, labels=LABELS, target=NativeTarget())
    delete = api.writes()[-1]
    assert (delete.method, delete.body) == ("DELETE", {"preconditions": {"uid": old_uid}})


def test_the_version_is_asked_again_until_the_cluster_serves_one() -> None:
    api = GatedApi(versions=())
    target = NativeTarget()
    assert target.resolve(api) == "v1alpha2" and target.version is None
    api.versions = ("v1alpha3",)
    assert target.resolve(api) == "v1alpha3"
    api.versions = ()
    assert target.resolve(api) == "v1alpha3", "kept once known"
