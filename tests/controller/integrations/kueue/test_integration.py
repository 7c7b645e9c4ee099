"""controller.integrations.kueue.integration: when a reconcile hands the job to Kueue's Workload
route, and letting go of a gone job's Workloads (in-memory fake API)."""

from __future__ import annotations

import copy
from typing import Any

from controller.integrations.kueue.integration import WORKLOADS, KueueIntegration
from controller.integrations.kueue.workload import FINALIZER, JOB_UID_LABEL
from controller.integrations.kueue.workload_sync import WorkloadSync, kueue_workloads_path
from controller.job.hooks import Integration
from controller.job.job_writes import MXJobWrites
from controller.job.pods import JobPods
from controller.runtime.client import mxjobs_path, resource_path
from controller.runtime.events import EventRecorder
from controller.runtime.informers import Store
from controller.runtime.metrics import Metrics
from shared.queueing import MULTIKUEUE
from tests.controller.fakes import FakeApi
from tests.controller.kueue_samples import admitted, cond, flavor, queued_job, workload
from tests.controller.samples import NOW, job, view_of

Obj = dict[str, Any]
PRIORITY_CLASSES = resource_path(group="scheduling.k8s.io", version="v1", plural="priorityclasses")
WAITING = cond("PodsReady", False, "WaitForStart", "Not all pods are ready or succeeded")


def kueue(job_obj: Obj, wl: Obj | None = None) -> tuple[KueueIntegration, FakeApi]:
    """The integration over a FakeApi holding the job (and its Workload, if given)."""
    api = FakeApi()
    api.objects[PRIORITY_CLASSES] = {"items": []}
    api.put_object(
        resource_path(
            group="kueue.x-k8s.io", version="v1beta2", plural="resourceflavors", name="default"
        ),
        flavor("default", {"pool": "a"}),
    )
    api.objects[mxjobs_path("ns", "mnist")] = copy.deepcopy(job_obj)
    workloads = Store(index_label=JOB_UID_LABEL)
    if wl is not None:
        api.objects[kueue_workloads_path("ns", wl["metadata"]["name"])] = copy.deepcopy(wl)
        workloads.apply("ADDED", copy.deepcopy(wl))
    sync = WorkloadSync(
        api,
        workloads=workloads,
        job_writes=MXJobWrites(api, jobs=Store()),
        recorder=EventRecorder(api),
        metrics=Metrics(),
        now=lambda: NOW,
    )
    return KueueIntegration(sync), api


def test_it_is_an_integration_named_kueue() -> None:
    integration: Integration = kueue(queued_job())[0]
    assert integration.name == "kueue"


def test_a_job_not_queued_is_left_to_the_reconciler() -> None:
    integration, api = kueue(job())
    assert integration.takes_over(view_of(job())) is False
    assert api.requests == []


def test_a_queued_job_without_a_workload_gets_one_and_the_reconcile_goes_on() -> None:
    integration, api = kueue(queued_job())
    assert integration.takes_over(view_of(queued_job())) is False
    (sent,) = api.writes()
    assert (sent.method, sent.path) == ("POST", kueue_workloads_path("ns"))


def test_starting_an_admitted_job_takes_the_reconcile_over() -> None:
    job_obj = queued_job()
    integration, api = kueue(job_obj, admitted(job_obj, extra=[WAITING]))
    assert integration.takes_over(view_of(job_obj)) is True
    (sent,) = api.writes()
    assert (sent.method, sent.path) == ("PUT", mxjobs_path("ns", "mnist"))
    assert sent.body["spec"]["runPolicy"]["suspend"] is False


def test_a_job_multikueue_dispatches_keeps_its_workload_here() -> None:
    job_obj = queued_job()
    job_obj["spec"]["managedBy"] = MULTIKUEUE
    view = view_of(job_obj)
    assert not view.ours and view.dispatched_by_multikueue
    integration, api = kueue(job_obj)
    assert integration.takes_over(view) is False
    assert [(w.method, w.path) for w in api.writes()] == [("POST", kueue_workloads_path("ns"))]


def test_a_job_another_controller_manages_is_not_queued_here() -> None:
    job_obj = queued_job()
    job_obj["spec"]["managedBy"] = "example.com/other-controller"
    integration, api = kueue(job_obj)
    assert integration.takes_over(view_of(job_obj)) is False
    assert api.requests == []


def test_a_gone_job_lets_go_of_its_workload_found_by_its_uid() -> None:
    job_obj = queued_job()
    wl = workload(job_obj)
    integration, api = kueue(job_obj, wl)
    integration.job_gone("ns", "mnist", uid="earlier-uid")
    assert api.writes() == [], "an earlier job of the name lets go of nothing of this one"
    integration.job_gone("ns", "mnist", uid="job-uid")
    (sent,) = api.writes()
    assert (sent.method, sent.path) == ("PUT", kueue_workloads_path("ns", wl["metadata"]["name"]))
    assert FINALIZER not in sent.body["metadata"].get("finalizers", [])


def test_the_workloads_of_a_job_never_cached_are_found_by_its_name() -> None:
    job_obj = queued_job()
    wl = workload(job_obj)
    integration, api = kueue(job_obj, wl)
    integration.job_gone("ns", "other", uid=None)
    assert api.writes() == [], "another job's name lets go of nothing"
    integration.job_gone("ns", "mnist", uid=None)
    (sent,) = api.writes()
    assert (sent.method, sent.path) == ("PUT", kueue_workloads_path("ns", wl["metadata"]["name"]))


def test_it_declares_the_workloads_cache_by_job_uid_and_the_routes_rules() -> None:
    integration, _ = kueue(queued_job())
    declared = integration.declaration()
    assert declared.watches == (WORKLOADS,)
    assert (WORKLOADS.name, WORKLOADS.index_label) == ("workloads.kueue.x-k8s.io", JOB_UID_LABEL)
    assert WORKLOADS.path("ns") == kueue_workloads_path("ns")
    assert WORKLOADS.queues_gone_jobs, "a gone job's reconcile lets go of its Workloads"
    assert WORKLOADS.job_of(workload(queued_job())) == "ns/mnist"
    assert ("kueue.x-k8s.io", "workloads/status", "patch") in declared.grants()
    assert ("kubeflow.org", "mxjobs", "update") in declared.grants()


def test_the_bound_store_is_the_one_read() -> None:
    job_obj = queued_job()
    integration, api = kueue(job_obj)
    bound = WORKLOADS.empty_store()
    bound.apply("ADDED", workload(job_obj))
    integration.bind({WORKLOADS.name: bound})
    assert integration.sync.workloads is bound
    integration.job_gone("ns", "mnist", uid="job-uid")
    assert [w.method for w in api.writes()] == ["PUT"]


def test_a_suspended_queued_job_waits_for_the_reason_its_workload_gives() -> None:
    job_obj = queued_job()
    waiting = workload(
        job_obj, conditions=[cond("QuotaReserved", False, "WaitingForQuota", "no cpu left")]
    )
    integration, _ = kueue(job_obj, waiting)
    wait = integration.waits(view_of(job_obj), JobPods())
    assert wait is not None and (wait.reason, wait.message) == ("WaitingForQuota", "no cpu left")


def test_an_admitted_or_unqueued_job_waits_for_nothing_from_kueue() -> None:
    job_obj = queued_job()
    integration, _ = kueue(job_obj, admitted(job_obj))
    assert integration.waits(view_of(job_obj), JobPods()) is None
    plain, _ = kueue(job())
    assert plain.waits(view_of(job()), JobPods()) is None
