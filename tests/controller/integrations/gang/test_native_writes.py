"""controller.integrations.gang.native_writes: the version the cluster serves, and a job's
Workload and PodGroup as an API server with some feature gates off keeps them (in-memory fake:
it drops gated fields silently, as kube-apiserver's PodGroup strategy does), read from their
caches (filled where the informers would have caught up)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.integrations.children.ensure import ChildNotReadyError, OwnedChildren
from controller.integrations.children.kind import ChildKind, child_object
from controller.integrations.children.stores import ChildStores
from controller.integrations.gang.native import NativeVersion, build_gang_workload
from controller.integrations.gang.native_writes import (
    NativeTarget,
    ensure_native_gang,
    gang_path,
    native_kinds,
    served_version,
)
from controller.integrations.gang.podgroup_writes import detect
from controller.job.view import MXJobView
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.integrations.gang.gated_api import GatedApi
from tests.controller.samples import job, view_of

RACK = "topology.kubernetes.io/rack"
LABELS = {"training.kubeflow.org/job-name": "mnist"}
TOPOLOGY_JOB = view_of(job(run_policy={"schedulingPolicy": {"topologyKey": RACK}}))


def written(api: FakeApi, plural: str, version: NativeVersion = "v1alpha2") -> dict[str, Any]:
    return api.objects[gang_path(plural, "ns", "mnist", version=version)]


class Gang:
    """The job's native gang over a fake API and caches the test brings up to date."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.stores = ChildStores(api)

    def owned(self, kind: ChildKind) -> OwnedChildren:
        return OwnedChildren(self.api, kind=kind, store=self.stores(kind))

    def ensure(self, view: MXJobView, target: NativeTarget) -> list[str]:
        stands, messages = ensure_native_gang(
            self.owned, self.api, view, labels=LABELS, target=target
        )
        assert stands
        return messages

    def seen(self, version: NativeVersion = "v1alpha2") -> Gang:
        for kind in native_kinds(version):
            catch_up(self.stores(kind), self.api, kind.path("ns"), transform=child_object)
        return self


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
    assert Gang(api).ensure(TOPOLOGY_JOB, target) == []
    assert target.version == "v1alpha3"
    group = written(api, "podgroups", "v1alpha3")
    assert group["spec"]["workloadRef"]["workloadName"] == "mnist"
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}


def test_a_server_that_keeps_every_field_is_not_told_about() -> None:
    api = GatedApi()
    gang, target = Gang(api), NativeTarget()
    assert gang.ensure(TOPOLOGY_JOB, target) == []
    assert gang.seen().ensure(TOPOLOGY_JOB, target) == []
    assert [r.method for r in api.writes()] == ["POST", "POST"]


def test_a_field_the_server_drops_is_said_and_the_objects_are_kept() -> None:
    api = GatedApi(dropped=("schedulingConstraints",))
    gang, target = Gang(api), NativeTarget()
    (message,) = gang.ensure(TOPOLOGY_JOB, target)
    assert "of the job's Workload and PodGroup" in message
    assert "schedulingConstraints (feature gate TopologyAwareWorkloadScheduling)" in message
    assert "schedulingConstraints" not in written(api, "podgroups")["spec"]
    again = gang.seen().ensure(TOPOLOGY_JOB, target)
    assert again == [message]
    assert [r.method for r in api.writes()] == ["POST", "POST"], "never replaced"


def test_after_a_restart_one_dry_run_tells_a_dropped_field_from_a_new_one() -> None:
    api = GatedApi(dropped=("schedulingConstraints",))
    gang = Gang(api)
    gang.ensure(TOPOLOGY_JOB, NativeTarget())
    restarted = NativeTarget()
    messages = gang.seen().ensure(TOPOLOGY_JOB, restarted)
    assert len(messages) == 1
    dry_runs = api.writes()[2:]
    assert [(r.method, r.query) for r in dry_runs] == [("POST", [("dryRun", "All")])] * 2
    assert "generateName" in dry_runs[0].body["metadata"]
    gang.ensure(TOPOLOGY_JOB, restarted)
    assert len(api.writes()) == 4, "learned once, no more dry runs, nothing replaced"


def test_a_topology_the_job_gained_while_suspended_replaces_the_pod_group() -> None:
    api = GatedApi()
    gang = Gang(api)
    gang.ensure(view_of(job()), NativeTarget())
    old_uid = written(api, "workloads")["metadata"]["uid"]
    with pytest.raises(ChildNotReadyError, match="schedulingConstraints"):
        gang.seen().ensure(TOPOLOGY_JOB, NativeTarget())
    delete = api.writes()[-1]
    assert (delete.method, delete.body) == ("DELETE", {"preconditions": {"uid": old_uid}})


def test_a_foreign_workload_of_the_jobs_name_is_left_and_the_gang_does_not_stand() -> None:
    api = GatedApi()
    gang = Gang(api)
    earlier = build_gang_workload(view_of(job(uid="earlier-uid")), labels=LABELS)
    stored = api.put_object(gang_path("workloads", "ns", "mnist"), earlier)
    gang.seen()
    stands, messages = ensure_native_gang(
        gang.owned, api, TOPOLOGY_JOB, labels=LABELS, target=NativeTarget()
    )
    assert (stands, messages) == (False, [])
    assert api.writes() == [], "neither deleted nor overwritten, and no PodGroup made"
    assert written(api, "workloads") == stored


def test_the_version_is_asked_again_until_the_cluster_serves_one() -> None:
    api = GatedApi(versions=())
    target = NativeTarget()
    assert target.resolve(api) == "v1alpha2" and target.version is None
    api.versions = ("v1alpha3",)
    assert target.resolve(api) == "v1alpha3"
    api.versions = ()
    assert target.resolve(api) == "v1alpha3", "kept once known"
