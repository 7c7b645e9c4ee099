"""controller.integrations.gang.integration: the gang made before pods, each pod joined to it,
the Event of a gang that waits, and a foreign object of the gang's name left alone while the
job waits for it (in-memory fake API; the caches filled where the informers would catch up)."""

from __future__ import annotations

import copy

import pytest

from controller.integrations.children.ensure import ChildNotReadyError
from controller.integrations.children.kind import ChildKind, child_object
from controller.integrations.gang.integration import GANG_FIELD_NOT_KEPT, GangIntegration
from controller.integrations.gang.native import build_pod_group
from controller.integrations.gang.native_writes import gang_path, native_kinds
from controller.integrations.gang.podgroup_writes import (
    CRD_POD_GROUPS,
    crd_pod_group_path,
    gang_kinds,
)
from controller.integrations.gang.podgroups import GANG_WAITING, GangScheduler, build_crd_pod_group
from controller.job.desired import build_pod, desired_slots, job_labels
from controller.job.hooks import Integration, Notice, Preparation
from controller.job.pods import JobPods
from controller.job.status import compute_status
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from tests.controller.fakes import FakeApi, catch_up
from tests.controller.integrations.gang.gated_api import GatedApi
from tests.controller.samples import NOW, job, pods_all, view_of

JOB = view_of(job())


def prepare(gang: GangIntegration) -> tuple[bool, list[Exception]]:
    prepared = gang.prepare_pods(JOB, labels=job_labels(JOB))
    return prepared.ready, list(prepared.errors)


def seen(gang: GangIntegration, api: FakeApi) -> GangIntegration:
    """The gang's caches as its informers would have them once caught up with ``api``."""
    for kind in gang_kinds(gang.scheduler, gang.native.current()):
        catch_up(gang.children(kind), api, kind.path("ns"), transform=child_object)
    return gang


def test_it_is_an_integration_named_gang() -> None:
    integration: Integration = GangIntegration(FakeApi(), scheduler="none")
    assert integration.name == "gang"


def test_without_a_gang_scheduler_pods_are_made_at_once_and_nothing_is_written() -> None:
    api = FakeApi()
    assert prepare(GangIntegration(api, scheduler="none")) == (True, [])
    assert api.requests == []


def test_native_gang_objects_are_made_before_the_pods_then_left_alone() -> None:
    api = FakeApi()
    gang = GangIntegration(api, scheduler="native")
    assert prepare(gang) == (True, [])
    assert [(w.method, w.path) for w in api.writes()] == [
        ("POST", gang_path("workloads", "ns")),
        ("POST", gang_path("podgroups", "ns")),
    ]
    assert api.objects[gang_path("podgroups", "ns", "mnist")]["metadata"]["labels"] == (
        job_labels(JOB)
    )
    assert prepare(seen(gang, api)) == (True, [])
    sent = [r.method for r in api.requests if "/namespaces/" in r.path]
    assert sent == ["POST", "POST"], "read from the caches, nothing written"


def test_an_earlier_jobs_pod_group_is_left_and_the_job_waits_for_it() -> None:
    api = FakeApi()
    gang = GangIntegration(api, scheduler="native")
    earlier = build_pod_group(view_of(job(uid="earlier-uid")), labels={})
    stored = api.put_object(gang_path("podgroups", "ns", "mnist"), earlier)
    assert prepare(seen(gang, api)) == (False, []), "held back, and not an error"
    assert [(w.method, w.path) for w in api.writes()] == [("POST", gang_path("workloads", "ns"))]
    assert api.objects[gang_path("podgroups", "ns", "mnist")] == stored
    wait = gang.waits(JOB, JobPods())
    assert wait is not None and wait.reason == FOREIGN_OBJECT_EXISTS
    assert "PodGroup ns/mnist was made for an earlier MXJob of this name" in wait.message
    (notice,) = gang.notices(JOB, JobPods())
    assert (notice.type, notice.reason, notice.message) == (
        "Warning", FOREIGN_OBJECT_EXISTS, wait.message,
    )  # fmt: skip
    assert gang.notices(JOB, JobPods()) == (), "said once"
    del api.objects[gang_path("podgroups", "ns", "mnist")]  # garbage collection
    assert prepare(seen(gang, api)) == (True, [])
    assert gang.waits(JOB, JobPods()) is None


def test_a_foreign_pod_group_makes_the_job_pending_for_it_even_over_unplaced_pods() -> None:
    api = FakeApi()
    gang = GangIntegration(api, scheduler="volcano")
    users = {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {"minMember": 1}}
    api.put_object(crd_pod_group_path("volcano", "ns", "mnist"), users)
    seen(gang, api)
    assert prepare(gang) == (False, [])
    assert api.writes() == []
    unplaced = pods_all(job())
    for pod in unplaced:
        pod["spec"].pop("nodeName", None)
    wait = gang.waits(JOB, JobPods.read(unplaced))
    assert wait is not None
    status = compute_status(JOB, JobPods(), now=NOW, held=wait).status
    (pending,) = [c for c in status["conditions"] if c["type"] == "Pending"]
    assert (pending["status"], pending["reason"]) == ("True", FOREIGN_OBJECT_EXISTS)
    assert pending["message"].startswith("PodGroup ns/mnist is not this job's")
    assert pending["message"].endswith("the job's pods wait until the name is free.")


def test_pods_wait_until_volcano_admitted_their_group() -> None:
    api = FakeApi()
    gang = GangIntegration(api, scheduler="volcano")
    ready, errors = prepare(gang)
    assert ready is False and isinstance(errors[0], ChildNotReadyError)
    path = crd_pod_group_path("volcano", "ns", "mnist")
    api.objects[path]["status"] = {"phase": "Inqueue"}
    api.objects[path]["metadata"]["resourceVersion"] += "0"
    assert prepare(seen(gang, api)) == (True, [])
    assert [w.method for w in api.writes()] == ["POST"]


def test_a_volcano_pod_group_whose_job_changed_is_updated_in_place() -> None:
    api = FakeApi()
    gang = GangIntegration(api, scheduler="scheduler-plugins")
    smaller = build_crd_pod_group(view_of(job(replicas={"Scheduler": 1, "Worker": 1})),
                                  "scheduler-plugins")  # fmt: skip
    api.put_object(crd_pod_group_path("scheduler-plugins", "ns", "mnist"), smaller)
    assert prepare(seen(gang, api)) == (True, [])
    (put,) = api.writes()
    assert put.method == "PUT" and put.body["spec"]["minMember"] == 4


@pytest.mark.parametrize(
    ("scheduler", "kinds"),
    [
        ("none", ()),
        ("volcano", (CRD_POD_GROUPS["volcano"],)),
        ("scheduler-plugins", (CRD_POD_GROUPS["scheduler-plugins"],)),
        ("native", native_kinds("v1alpha2")),
    ],
)
def test_it_declares_the_caches_of_the_kinds_its_scheduler_makes_and_their_rules(
    scheduler: GangScheduler, kinds: tuple[ChildKind, ...]
) -> None:
    declared = GangIntegration(FakeApi(), scheduler=scheduler).declaration()
    assert declared.watches == tuple(kind.watch for kind in kinds)
    writes = "delete" if scheduler == "native" else "update"
    for kind in kinds:
        assert (kind.group, kind.plural, writes) in declared.grants()
        assert (kind.group, kind.plural, "watch") in declared.grants()
    reads_priorities = ("scheduling.k8s.io", "priorityclasses", "get") in declared.grants()
    assert reads_priorities == (scheduler in CRD_POD_GROUPS)


def test_native_declares_the_version_the_cluster_serves() -> None:
    api = GatedApi(versions=("v1alpha2", "v1alpha3"))
    declared = GangIntegration(api, scheduler="native").declaration()
    assert [watch.name for watch in declared.watches] == [
        "workloads.scheduling.k8s.io", "podgroups.scheduling.k8s.io",
    ]  # fmt: skip
    assert {watch.version for watch in declared.watches} == {"v1alpha3"}


def test_the_bound_stores_are_the_ones_read() -> None:
    api = FakeApi()
    gang = GangIntegration(api, scheduler="volcano")
    users = {"metadata": {"name": "mnist", "namespace": "ns"}, "spec": {"minMember": 1}}
    api.put_object(crd_pod_group_path("volcano", "ns", "mnist"), users)
    (watch,) = gang.declaration().watches
    bound = catch_up(watch.empty_store(), api, watch.path("ns"), transform=child_object)
    gang.bind({watch.name: bound})
    assert prepare(gang) == (False, []), "the foreign group in the bound cache holds the pods"
    assert api.writes() == []


def test_each_pod_joins_the_gang_as_it_is_built() -> None:
    slot = next(s for s in desired_slots(JOB) if s.key == "worker-1")
    replica = JOB.replica("Worker")
    assert replica is not None
    native = build_pod(JOB, slot)
    GangIntegration(FakeApi(), scheduler="native").decorate_pod(JOB, native, replica=replica)
    assert native["spec"]["schedulingGroup"] == {"podGroupName": "mnist"}
    volcano = build_pod(JOB, slot)
    GangIntegration(FakeApi(), scheduler="volcano").decorate_pod(JOB, volcano, replica=replica)
    assert volcano["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"
    plain = build_pod(JOB, slot)
    before = copy.deepcopy(plain)
    GangIntegration(FakeApi(), scheduler="none").decorate_pod(JOB, plain, replica=replica)
    assert plain == before


def test_a_job_whose_pods_all_wait_for_their_gang_is_told_so() -> None:
    unplaced = pods_all(job())
    for pod in unplaced:
        pod["spec"].pop("nodeName", None)
    gang = GangIntegration(FakeApi(), scheduler="native")
    (notice,) = gang.notices(JOB, JobPods.read(unplaced))
    assert isinstance(notice, Notice)
    assert (notice.type, notice.reason) == ("Normal", GANG_WAITING)
    assert "0 of 4 pods placed" in notice.message
    placed = copy.deepcopy(unplaced)
    for pod in placed:
        pod["spec"]["nodeName"] = "node-1"
    assert gang.notices(JOB, JobPods.read(placed)) == ()
    assert GangIntegration(FakeApi(), scheduler="none").notices(JOB, JobPods.read(unplaced)) == ()


def test_a_job_whose_pods_wait_for_their_gang_is_pending_for_it_until_placed() -> None:
    unplaced = pods_all(job())
    for pod in unplaced:
        pod["spec"].pop("nodeName", None)
    gang = GangIntegration(FakeApi(), scheduler="native")
    wait = gang.waits(JOB, JobPods.read(unplaced))
    assert wait is not None and wait.reason == GANG_WAITING
    assert "0 of 4 pods placed" in wait.message
    placed = copy.deepcopy(unplaced)
    for pod in placed:
        pod["spec"]["nodeName"] = "node-1"
    assert gang.waits(JOB, JobPods.read(placed)) is None
    assert gang.waits(view_of(job(run_policy={"suspend": True})), JobPods.read(unplaced)) is None


def test_a_finished_or_suspended_job_waits_for_no_gang() -> None:
    unplaced = pods_all(job())
    for pod in unplaced:
        pod["spec"].pop("nodeName", None)
    gang = GangIntegration(FakeApi(), scheduler="native")
    succeeded = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "Done"}]}
    assert gang.notices(view_of(job(status=succeeded)), JobPods.read(unplaced)) == ()
    assert gang.notices(view_of(job(run_policy={"suspend": True})), JobPods.read(unplaced)) == ()


def test_a_field_the_api_server_dropped_is_told_once_in_a_warning_on_the_job() -> None:
    rack = {"schedulingPolicy": {"topologyKey": "topology.kubernetes.io/rack"}}
    topology_job = view_of(job(run_policy=rack))
    gang = GangIntegration(GatedApi(dropped=("schedulingConstraints",)), scheduler="native")
    assert gang.notices(topology_job, JobPods()) == ()
    assert gang.prepare_pods(topology_job, labels={}) == Preparation(ready=True)
    warnings = gang.notices(topology_job, JobPods())
    assert [(n.type, n.reason) for n in warnings] == [("Warning", GANG_FIELD_NOT_KEPT)]
    assert "TopologyAwareWorkloadScheduling" in warnings[0].message
    for _ in range(2):
        assert gang.prepare_pods(topology_job, labels={}) == Preparation(ready=True)
        assert gang.notices(topology_job, JobPods()) == (), "said once"
    gang.job_gone("ns", "mnist", uid="job-uid")
    gang.prepare_pods(topology_job, labels={})
    assert len(gang.notices(topology_job, JobPods())) == 1, "a new job of that name is told again"
