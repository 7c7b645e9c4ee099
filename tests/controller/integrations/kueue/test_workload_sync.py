"""controller.integrations.kueue.workload_sync: the HTTP requests that carry out Kueue's job
contract (in-memory fake API)."""

from __future__ import annotations

import copy
from typing import Any, get_args

import pytest

from controller.integrations.kueue.contract import StepKind
from controller.integrations.kueue.workload import (
    FINALIZER,
    JOB_UID_LABEL,
    Priority,
    build_kueue_workload,
    workload_conditions,
)
from controller.integrations.kueue.workload_sync import (
    KueueRouteError,
    WorkloadSync,
    verify_kueue_route,
    workload_owner_key,
)
from controller.integrations.kueue.workload_sync import kueue_workloads_path as wl_path
from controller.job.job_writes import MXJobWrites
from controller.runtime.client import APPLY_PATCH, mxjobs_path, resource_path
from controller.runtime.events import EventRecorder
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.conditions import get_condition
from tests.controller.fakes import FakeApi, Request
from tests.controller.kueue_samples import (
    admitted,
    cond,
    flavor,
    job_condition,
    queued_job,
    workload,
)
from tests.controller.samples import NOW, view_of

Obj = dict[str, Any]
PRIORITY_CLASSES = resource_path(group="scheduling.k8s.io", version="v1", plural="priorityclasses")
WAITING = cond("PodsReady", False, "WaitForStart", "Not all pods are ready or succeeded")
"""Already written: the step under test is the next one."""


class World:
    """A WorkloadSync over a FakeApi holding one job (and maybe its Workload)."""

    def __init__(self, job_obj: Obj, wl: Obj | None = None) -> None:
        self.api = FakeApi()
        self.api.objects[PRIORITY_CLASSES] = {"items": []}
        self.api.put_object(
            resource_path(group="kueue.x-k8s.io", version="v1beta2", plural="resourceflavors",
                          name="default"),
            flavor("default", {"pool": "a"}),
        )  # fmt: skip
        self.jobs = Store()
        self.workloads = Store(index_label=JOB_UID_LABEL)
        stored = self.api.objects.setdefault(mxjobs_path("ns", "mnist"), copy.deepcopy(job_obj))
        self.jobs.apply("ADDED", copy.deepcopy(stored))
        if wl is not None:
            self.api.objects[wl_path("ns", wl["metadata"]["name"])] = copy.deepcopy(wl)
            self.workloads.apply("ADDED", copy.deepcopy(wl))
        self.sync = WorkloadSync(
            self.api,
            workloads=self.workloads,
            job_writes=MXJobWrites(self.api, jobs=self.jobs),
            recorder=EventRecorder(self.api),
            metrics=Metrics(),
            now=lambda: NOW,
        )

    def run(self) -> bool:
        job = self.jobs.get("ns/mnist")
        assert job is not None
        return self.sync.sync(view_of(job))

    def writes(self) -> list[Request]:
        return self.api.writes()


def only_write(world: World) -> Request:
    writes = world.writes()
    assert len(writes) == 1, [(w.method, w.path) for w in writes]
    return writes[0]


def test_a_queued_job_without_a_workload_posts_one() -> None:
    job_obj = queued_job()
    world = World(job_obj)
    assert world.run() is False
    sent = only_write(world)
    assert (sent.method, sent.path) == (
        "POST",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads",
    )
    assert sent.body == build_kueue_workload(view_of(job_obj), priority=Priority())


def test_a_workload_priority_class_label_is_looked_up_for_the_workload() -> None:
    job_obj = queued_job(labels={"kueue.x-k8s.io/priority-class": "high"})
    world = World(job_obj)
    world.api.objects[
        resource_path(group="kueue.x-k8s.io", version="v1beta2",
                      plural="workloadpriorityclasses", name="high")
    ] = {"metadata": {"name": "high"}, "value": 500}  # fmt: skip
    world.run()
    spec = only_write(world).body["spec"]
    assert spec["priority"] == 500
    assert spec["priorityClassRef"]["kind"] == "WorkloadPriorityClass"


def test_status_writes_are_forced_server_side_applies_under_kueues_manager() -> None:
    job_obj = queued_job(suspend=False, status={"conditions": [job_condition("Succeeded")]})
    world = World(job_obj, admitted(job_obj))
    world.run()
    sent = only_write(world)
    name = admitted(job_obj)["metadata"]["name"]
    assert (sent.method, sent.path) == ("PATCH", wl_path("ns", name) + "/status")
    assert sent.content_type == APPLY_PATCH == "application/apply-patch+yaml"
    assert sent.query == [("fieldManager", "kueue-admission"), ("force", "true")]
    finished = get_condition(workload_conditions(sent.body), "Finished")
    assert finished is not None and finished["reason"] == "Succeeded"


def test_pods_ready_is_applied_under_its_own_manager() -> None:
    job_obj = queued_job(suspend=False)
    world = World(job_obj, admitted(job_obj))
    world.run()
    sent = only_write(world)
    assert sent.query == [("fieldManager", "kueue-job-controller-PodsReady"), ("force", "true")]
    assert [c["type"] for c in sent.body["status"]["conditions"]] == ["PodsReady"]


def test_starting_puts_the_job_unsuspended_with_its_resource_version() -> None:
    job_obj = queued_job()
    world = World(job_obj, admitted(job_obj, extra=[WAITING]))
    assert world.run() is True
    sent = only_write(world)
    assert (sent.method, sent.path) == ("PUT", mxjobs_path("ns", "mnist"))
    assert sent.body["metadata"]["resourceVersion"] == "10"
    assert sent.body["spec"]["runPolicy"]["suspend"] is False
    assert "status" not in sent.body
    worker = sent.body["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    assert worker["spec"]["nodeSelector"] == {"pool": "a"}
    assert worker["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"


def test_a_start_that_cannot_succeed_finishes_the_workload_as_failed_to_start() -> None:
    job_obj = queued_job()
    job_obj["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {"pool": "z"}
    world = World(job_obj, admitted(job_obj, extra=[WAITING]))
    assert world.run() is False
    sent = only_write(world)
    assert sent.path.endswith("/status")
    finished = get_condition(workload_conditions(sent.body), "Finished")
    assert finished is not None and finished["reason"] == "FailedToStart"


def test_stopping_puts_the_job_suspended_with_its_resource_version() -> None:
    job_obj = queued_job(suspend=False)
    world = World(job_obj, admitted(job_obj, extra=[WAITING, cond("Evicted", True, "Preempted")]))
    assert world.run() is True
    sent = only_write(world)
    assert (sent.method, sent.path) == ("PUT", mxjobs_path("ns", "mnist"))
    assert sent.body["metadata"]["resourceVersion"] == "10"
    assert sent.body["spec"]["runPolicy"]["suspend"] is True


def test_a_pending_workload_follows_its_jobs_queue() -> None:
    wl = workload(queued_job(), conditions=[WAITING])
    world = World(queued_job(queue="team-b"), wl)
    world.run()
    sent = only_write(world)
    assert (sent.method, sent.path) == ("PUT", wl_path("ns", wl["metadata"]["name"]))
    assert sent.body["spec"]["queueName"] == "team-b"
    assert sent.body["metadata"]["resourceVersion"] == "50"


@pytest.mark.parametrize("uid", ["job-uid", None], ids=["by-uid", "by-name"])
def test_letting_go_removes_kueues_finalizer(uid: str | None) -> None:
    job_obj = queued_job()
    wl = workload(job_obj)
    world = World(job_obj, wl)
    world.sync.let_go("ns", "mnist", uid=uid)
    sent = only_write(world)
    assert (sent.method, sent.path) == ("PUT", wl_path("ns", wl["metadata"]["name"]))
    assert FINALIZER not in sent.body["metadata"].get("finalizers", [])
    world.sync.let_go("ns", "mnist", uid=uid)
    assert len(world.writes()) == 1  # the cache already shows it gone


def test_verify_kueue_route_accepts_a_kueue_serving_v1beta2() -> None:
    api = FakeApi()
    api.objects["/apis/kueue.x-k8s.io/v1beta2"] = {"kind": "APIResourceList"}
    verify_kueue_route(api)


def test_verify_kueue_route_refuses_a_kueue_serving_only_v1beta1() -> None:
    api = FakeApi()
    api.objects["/apis/kueue.x-k8s.io/v1beta1"] = {"kind": "APIResourceList"}
    with pytest.raises(
        KueueRouteError, match=r"serves only kueue\.x-k8s\.io/v1beta1 .* older than v0\.15"
    ):
        verify_kueue_route(api)


def test_verify_kueue_route_refuses_a_cluster_without_kueue() -> None:
    with pytest.raises(KueueRouteError, match="serves no Kueue Workload API"):
        verify_kueue_route(FakeApi())


def test_a_started_job_observes_its_workloads_wait_for_admission() -> None:
    job_obj = queued_job()
    workload = admitted(job_obj, extra=[WAITING])
    workload["metadata"]["creationTimestamp"] = "2030-01-02T03:03:35Z"  # 30 s before NOW
    world = World(job_obj, workload)
    assert world.run() is True
    wait = world.sync.metrics.admission_wait.labels(job_namespace="ns")
    samples = {s.name: s.value for m in wait.collect() for s in m.samples if not s.labels.get("le")}
    assert samples["mxjob_controller_job_admission_wait_seconds_count"] == 1
    assert samples["mxjob_controller_job_admission_wait_seconds_sum"] == 30


def test_every_step_that_writes_has_its_handler() -> None:
    world = World(queued_job())
    assert set(world.sync.handlers) == set(get_args(StepKind)) - {"wait"}


def test_a_workload_is_keyed_to_the_mxjob_controlling_it() -> None:
    wl = workload(queued_job())
    assert workload_owner_key(wl) == "ns/mnist"
    wl["metadata"]["ownerReferences"][0]["controller"] = False
    assert workload_owner_key(wl) is None
    wl["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
    ]
    assert workload_owner_key(wl) is None


def test_a_stale_workload_is_deleted_with_its_finalizer_removed_first() -> None:
    job_obj = queued_job(replicas={"Scheduler": 1, "Server": 1, "Worker": 3})
    old = workload(queued_job())
    world = World(job_obj, old)
    assert world.run() is False
    name = old["metadata"]["name"]
    assert [(w.method, w.path) for w in world.writes() if "/events" not in w.path] == [
        ("PUT", wl_path("ns", name)),
        ("DELETE", wl_path("ns", name)),
    ]
