"""reconcile: what the Reconciler sends to the API server (in-memory fake)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import controller.job.status.sync as sync_module
from controller.integrations.children.kind import child_object
from controller.integrations.gang.integration import GangIntegration
from controller.integrations.gang.podgroup_writes import CRD_POD_GROUPS
from controller.job.desired import Slot, desired_slots
from controller.job.hooks import READY, Integration, NoHooks, Preparation
from controller.job.observed import ATTEMPT_ANNOTATION, PodView
from controller.job.pods import JobPods
from controller.job.reconciler import Reconciler
from controller.job.status import compute_status
from controller.job.view import MXJobView
from controller.job.writes import NameConflictError
from controller.runtime.client import Conflict, mxjobs_path, pods_path, services_path
from controller.runtime.events import FOREIGN_OBJECT_EXISTS
from controller.runtime.metrics import Metrics
from shared.constants import TRACKING_FINALIZER
from shared.logformat import fields_of
from tests.controller.fakes import FakeApi
from tests.controller.job.reconcile_world import KEY, Obj, World, integrations
from tests.controller.samples import (
    NOW,
    NOW_TEXT,
    job,
    later,
    pod,
    stored_before_the_new_defaults,
    training_operator_pod,
    training_operator_service,
    view_of,
)

LONE = job(restart_scope="Replica")
"""A job whose Server and Workers are replaced alone (``restartScope: Replica``)."""


def names(objects: list[Obj]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def test_first_reconcile_writes_status_once_and_creates_pods_and_services() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    writes = [(r.method, r.path) for r in world.api.writes()]
    assert writes[0] == ("PUT", mxjobs_path("ns", "mnist", subresource="status"))
    assert writes.count(("POST", pods_path("ns"))) == 4
    assert writes.count(("POST", services_path("ns"))) == 4
    assert len(writes) == 9
    created = world.api.objects[pods_path("ns", "mnist-worker-1")]
    assert created["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    stored = world.api.objects[mxjobs_path("ns", "mnist")]
    assert stored["status"]["state"] == "Created"
    assert stored["status"]["lastReconcileTime"] == "2030-01-02T03:04:05Z"


def test_a_job_asking_for_a_gang_gets_its_disruption_budget_before_its_pods() -> None:
    world = World(job(run_policy={"schedulingPolicy": {"minAvailable": 4}}))
    world.reconciler.reconcile(KEY)
    writes = [(r.method, r.path) for r in world.api.writes()]
    budgets = "/apis/policy/v1/namespaces/ns/poddisruptionbudgets"
    assert writes.index(("POST", budgets)) < writes.index(("POST", pods_path("ns")))
    assert world.api.objects[f"{budgets}/mnist"]["spec"]["minAvailable"] == 4


def test_a_foreign_pod_group_of_the_jobs_name_holds_its_pods_and_the_job_says_why() -> None:
    recorded: list[tuple[str, str]] = []
    users = {"metadata": {"name": "mnist", "namespace": "ns", "uid": "users"}}

    def volcano(api: FakeApi) -> list[Integration]:
        gang = GangIntegration(api, scheduler="volcano")
        gang.children(CRD_POD_GROUPS["volcano"]).put_if_newer(child_object(users))
        return [gang]

    def record(job: Obj, kind: str, reason: str, message: str, **_: str) -> None:
        recorded.append((kind, reason))

    world = World(job(), hooks=volcano)
    world.recorder.record = record  # type: ignore[assignment,method-assign]
    world.reconciler.reconcile(KEY)
    status = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    (pending,) = [c for c in status["conditions"] if c["type"] == "Pending"]
    assert (pending["status"], pending["reason"]) == ("True", FOREIGN_OBJECT_EXISTS)
    assert "the job's pods wait" in pending["message"]
    assert recorded.count(("Warning", FOREIGN_OBJECT_EXISTS)) == 1
    assert not [w for w in world.api.writes() if w.path == pods_path("ns")], "no pod made"
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    assert recorded.count(("Warning", FOREIGN_OBJECT_EXISTS)) == 1, "told once"


def test_a_second_reconcile_with_nothing_new_sends_nothing() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    before = len(world.api.requests)
    world.clock = later(30)
    world.reconciler.reconcile(KEY)
    assert world.api.requests[before:] == []


def test_nothing_is_done_while_created_pods_are_not_yet_in_the_cache() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    before = len(world.api.requests)
    world.reconciler.reconcile(KEY)  # the informers have not delivered the pods yet
    assert world.api.requests[before:] == []


def test_a_status_conflict_is_raised_before_any_pod_is_touched() -> None:
    world = World(job())
    world.api.fail_next[("PUT", mxjobs_path("ns", "mnist", subresource="status"))] = Conflict(
        409, "Conflict", {"reason": "Conflict"}
    )
    with pytest.raises(Conflict):
        world.reconciler.reconcile(KEY)
    assert [r.method for r in world.api.writes()] == ["PUT"]


def test_an_existing_pod_owned_by_the_job_is_adopted_without_error() -> None:
    world = World(job())
    ours = pod(job(), "worker-0")
    world.api.put_object(pods_path("ns", "mnist-worker-0"), ours)
    world.reconciler.reconcile(KEY)  # AlreadyExists on worker-0: it is ours, fine
    assert pods_path("ns", "mnist-worker-1") in world.api.objects


def test_a_name_taken_by_a_foreign_pod_is_an_error_and_a_warning_event() -> None:
    world = World(job())
    foreign = pod(job(uid="other-job"), "worker-0")
    world.api.put_object(pods_path("ns", "mnist-worker-0"), foreign)
    with pytest.raises(NameConflictError):
        world.reconciler.reconcile(KEY)
    assert pods_path("ns", "mnist-worker-1") in world.api.objects  # the others were created


def test_a_retryable_failure_is_recreated_and_counted_in_status_only() -> None:
    world = World(job(restart_scope="Replica"))
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-1", pod(LONE, "worker-1", phase="Failed", exit_code=137)["status"]
    )
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    assert pods_path("ns", "mnist-worker-1") not in world.api.objects
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["restartCount"] == 1
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    replacement = world.api.objects[pods_path("ns", "mnist-worker-1")]
    assert not replacement["metadata"].get("annotations")
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["restartCount"] == 1


def test_a_retryable_failure_restarts_the_whole_job_status_first_then_every_pod() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-1", pod(job(), "worker-1", phase="Failed", exit_code=137)["status"]
    )
    world.sync_from_api()
    world.api.requests.clear()
    world.reconciler.reconcile(KEY)
    writes = [(r.method, r.path.rsplit("/", 1)[-1]) for r in world.api.writes()]
    assert writes[0] == ("PUT", "status")  # the restart is written before any pod goes
    deleted = sorted(name for method, name in writes if method == "DELETE")
    assert deleted == ["mnist-scheduler-0", "mnist-server-0", "mnist-worker-0", "mnist-worker-1"]
    assert not any(method == "POST" and "pods" in name for method, name in writes)
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["attempt"] == 1
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    made = [o for p, o in world.api.objects.items() if "/pods/" in p]
    assert len(made) == 4
    assert {o["metadata"]["annotations"][ATTEMPT_ANNOTATION] for o in made} == {"1"}
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["restartCount"] == 1


def test_a_reconcile_observes_each_of_the_jobs_pods_once_and_its_slots_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World(LONE)
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-1", pod(LONE, "worker-1", phase="Failed", exit_code=137)["status"]
    )
    world.sync_from_api()
    observed: list[str] = []
    build_view = PodView.__init__

    def counting_view(view: PodView, *args: Any, **fields: Any) -> None:
        observed.append(fields["name"])
        build_view(view, *args, **fields)

    slots_asked: list[str] = []

    def counting_slots(job: MXJobView) -> list[Slot]:
        slots_asked.append(job.name)
        return desired_slots(job)

    monkeypatch.setattr(PodView, "__init__", counting_view)
    monkeypatch.setattr(sync_module, "desired_slots", counting_slots)
    world.reconciler.reconcile(KEY)
    assert pods_path("ns", "mnist-worker-1") not in world.api.objects, "status, tally, plan ran"
    assert sorted(observed) == names(world.pods.by_index("ns", "mnist"))
    assert slots_asked == ["mnist"]


def test_ttl_expiry_deletes_the_job_with_a_uid_precondition() -> None:
    finished = job(run_policy={"ttlSecondsAfterFinished": 0})
    finished["status"] = compute_status(
        view_of(finished),
        JobPods.read([pod(finished, "scheduler-0", phase="Succeeded", exit_code=0)]),
        now=NOW,
    ).status
    world = World(finished)
    world.reconciler.reconcile(KEY)
    delete = next(r for r in world.api.writes() if r.method == "DELETE")
    assert delete.path == mxjobs_path("ns", "mnist")
    assert delete.body["preconditions"]["uid"] == "job-uid"


def test_the_ttl_deletion_is_logged_with_namespace_and_name_as_fields(
    caplog: pytest.LogCaptureFixture,
) -> None:
    finished = job(run_policy={"ttlSecondsAfterFinished": 0})
    finished["status"] = compute_status(
        view_of(finished),
        JobPods.read([pod(finished, "scheduler-0", phase="Succeeded", exit_code=0)]),
        now=NOW,
    ).status
    world = World(finished)
    with caplog.at_level(logging.INFO, logger="controller.job.reconciler"):
        world.reconciler.reconcile(KEY)
    record = next(r for r in caplog.records if "ttlSecondsAfterFinished" in r.getMessage())
    assert record.getMessage() == "deleted after ttlSecondsAfterFinished"
    assert fields_of(record) == {"namespace": "ns", "name": "mnist"}


def test_a_job_managed_by_another_controller_is_left_alone() -> None:
    world = World(job(run_policy={"managedBy": "example.com/other"}))
    assert world.reconciler.reconcile(KEY) is None
    assert world.api.writes() == []


def test_a_job_stored_without_the_webhook_is_defaulted_in_memory_and_runs() -> None:
    raw = job()
    for replica in raw["spec"]["mxReplicaSpecs"].values():
        replica["template"]["spec"]["containers"][0].pop("env", None)
    raw["spec"]["mxReplicaSpecs"]["worker"] = raw["spec"]["mxReplicaSpecs"].pop("Worker")
    world = World(raw)
    world.reconciler.reconcile(KEY)
    worker = world.api.objects[pods_path("ns", "mnist-worker-1")]
    env = {e["name"] for e in worker["spec"]["containers"][0]["env"]}
    assert {"DMLC_ROLE", "DMLC_PS_ROOT_URI", "MX_CONFIG"} <= env


def test_a_job_stored_before_restart_scopes_were_written_restarts_whole_as_mxtrain() -> None:
    """Defaulted once, in memory (controller/job/memory.py): no reader holds a default of its
    own, and the stored spec is left as it was."""
    old = stored_before_the_new_defaults(job(run_policy={"backoffLimit": 0}))
    world = World(old)
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    evicted = pod(job(), "worker-1", phase="Failed", reason="Evicted",
                  disruption="EvictionByEvictionAPI")  # fmt: skip
    world.set_pod_status("mnist-worker-1", evicted["status"])
    world.sync_from_api()
    world.api.requests.clear()
    world.reconciler.reconcile(KEY)
    deleted = sorted(r.path.rsplit("/", 1)[-1] for r in world.api.writes() if r.method == "DELETE")
    assert deleted == ["mnist-scheduler-0", "mnist-server-0", "mnist-worker-0", "mnist-worker-1"]
    stored = world.api.objects[mxjobs_path("ns", "mnist")]
    # disruptionPolicy Ignore: with backoffLimit 0 the drained worker's restart does not fail it.
    assert stored["status"]["state"] != "Failed"
    assert stored["status"]["restarts"][0]["scope"] == "Job"
    assert stored["status"]["restarts"][0]["countedAgainstBackoff"] is False
    assert stored["spec"] == old["spec"]


def test_a_tune_job_stored_before_restart_scopes_were_written_replaces_a_replica_alone() -> None:
    tune = job(mode="MXTune", replicas={"TunerTracker": 1, "TunerServer": 2, "Tuner": 1})
    world = World(stored_before_the_new_defaults(tune))
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    killed = pod(tune, "tunerserver-1", phase="Failed", exit_code=137)
    world.set_pod_status("mnist-tunerserver-1", killed["status"])
    world.sync_from_api()
    world.api.requests.clear()
    world.reconciler.reconcile(KEY)
    deleted = [r.path.rsplit("/", 1)[-1] for r in world.api.writes() if r.method == "DELETE"]
    assert deleted == ["mnist-tunerserver-1"]


def test_an_invalid_job_stored_without_the_webhook_fails_with_a_clear_reason() -> None:
    raw = job()
    raw["spec"]["mxReplicaSpecs"]["Scheduler"]["replicas"] = 2
    world = World(raw)
    world.reconciler.reconcile(KEY)
    status = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    assert status["state"] == "Failed"
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "MXJobFailedValidation"
    assert "Scheduler" in failed["message"]
    assert not any(r.method == "POST" for r in world.api.writes())


def test_a_stored_job_with_absurd_replicas_fails_before_defaulting_builds_its_env() -> None:
    # Found by tests/fuzz: defaulting writes every replica's address into MX_CONFIG, so with
    # 2**31 - 1 replicas it would allocate until the controller was killed.
    raw = job()
    raw["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 2**31 - 1
    world = World(raw)
    world.reconciler.reconcile(KEY)
    status = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    assert status["state"] == "Failed"
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "MXJobFailedValidation"
    assert "at most 1000 replicas" in failed["message"]
    assert not any(r.method == "POST" for r in world.api.writes())


def test_scaling_down_keeps_the_restarts_of_the_removed_replicas() -> None:
    world = World(job(replicas={"Scheduler": 1, "Worker": 2}))
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    stored = world.api.objects[mxjobs_path("ns", "mnist")]
    stored["status"]["restartCount"] = 2
    stored["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 1
    stored["metadata"]["generation"] = 2
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    assert pods_path("ns", "mnist-worker-1") not in world.api.objects
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-0", pod(job(), "worker-0", phase="Failed", exit_code=137)["status"]
    )
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["restartCount"] == 3


# -- the tracking finalizer ---------------------------------------------------------------------
def finalizers(world: World, name: str) -> list[str]:
    return list(world.api.objects[pods_path("ns", name)]["metadata"].get("finalizers", []))


def test_a_succeeded_pod_is_released_after_the_status_that_counts_it_is_written() -> None:
    world = World(job(success_policy="AllWorkers"))
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-0", pod(job(), "worker-0", phase="Succeeded", exit_code=0)["status"]
    )
    world.sync_from_api()
    before = len(world.api.requests)
    world.reconciler.reconcile(KEY)
    sent = [(r.method, r.path.rsplit("/", 2)[-2:]) for r in world.api.requests[before:]]
    assert sent[0] == ("PUT", ["mnist", "status"])
    assert sent[1] == ("PATCH", ["pods", "mnist-worker-0"])
    assert finalizers(world, "mnist-worker-0") == []
    assert finalizers(world, "mnist-worker-1") == [TRACKING_FINALIZER]
    status = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
    # A reconcile before the cache shows the PATCH does not send it again.
    before = len(world.api.requests)
    world.reconciler.reconcile(KEY)
    assert [r for r in world.api.requests[before:] if r.method == "PATCH"] == []


def test_a_status_conflict_keeps_every_finalizer() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-0", pod(job(), "worker-0", phase="Succeeded", exit_code=0)["status"]
    )
    world.sync_from_api()
    world.api.fail_next[("PUT", mxjobs_path("ns", "mnist", subresource="status"))] = Conflict(
        409, "Conflict", {"reason": "Conflict"}
    )
    with pytest.raises(Conflict):
        world.reconciler.reconcile(KEY)
    assert finalizers(world, "mnist-worker-0") == [TRACKING_FINALIZER]


def test_a_pod_the_controller_recreates_is_released_just_before_its_delete() -> None:
    world = World(job(restart_scope="Replica"))
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-1", pod(LONE, "worker-1", phase="Failed", exit_code=137)["status"]
    )
    world.sync_from_api()
    before = len(world.api.requests)
    world.reconciler.reconcile(KEY)
    sent = [(r.method, r.path) for r in world.api.requests[before:] if r.method != "POST"]
    worker = pods_path("ns", "mnist-worker-1")
    assert sent == [
        ("PUT", mxjobs_path("ns", "mnist", subresource="status")),
        ("PATCH", worker),
        ("DELETE", worker),
    ]
    assert worker not in world.api.objects  # nothing held it


def test_a_pod_deleted_while_the_controller_was_down_is_counted_then_released() -> None:
    world = World(job(restart_scope="Replica"))
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    worker = pods_path("ns", "mnist-worker-1")
    # Someone deletes it; the finalizer holds it; its kubelet reports exit 143.
    world.api.request("DELETE", worker, body={})
    world.set_pod_status(
        "mnist-worker-1", pod(LONE, "worker-1", phase="Failed", exit_code=143)["status"]
    )
    assert worker in world.api.objects
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    status = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    assert status["restartCount"] == 1 and status["state"] == "Restarting"
    assert worker not in world.api.objects  # released: the API server let it go
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    replacement = world.api.objects[worker]
    assert replacement["metadata"]["finalizers"] == [TRACKING_FINALIZER]
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["restartCount"] == 1


def test_pods_of_a_deleted_job_are_released_once_the_api_confirms_it_is_gone() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    # The cache lost the job but the API server still has it (a lagging watch): keep them.
    world.jobs.apply("DELETED", world.jobs.get(KEY) or {})
    world.reconciler.reconcile(KEY)
    assert [r for r in world.api.requests if r.method == "PATCH"] == []
    del world.api.objects[mxjobs_path("ns", "mnist")]
    world.reconciler.reconcile(KEY)
    patched = sorted(r.path for r in world.api.requests if r.method == "PATCH")
    assert patched == sorted(
        pods_path("ns", n)
        for n in ("mnist-scheduler-0", "mnist-server-0", "mnist-worker-0", "mnist-worker-1")
    )
    assert all(finalizers(world, n.rsplit("/", 1)[1]) == [] for n in patched)


def test_pods_of_a_job_being_deleted_are_released_without_a_lookup() -> None:
    world = World(job())
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    deleting = copy.deepcopy(world.jobs.get(KEY) or {})
    deleting["metadata"]["deletionTimestamp"] = "2030-01-02T03:04:05Z"
    deleting["metadata"]["resourceVersion"] = "999"
    world.jobs.apply("MODIFIED", deleting)
    before = len(world.api.requests)
    world.reconciler.reconcile(KEY)
    sent = [r.method for r in world.api.requests[before:]]
    assert sent == ["PATCH"] * 4


class Recording(NoHooks):
    """Records the jobs it is told are gone, and answers ``prepared`` before pods are made."""

    def __init__(
        self, name: str, prepared: Preparation = READY, refreshed: Sequence[Exception] = ()
    ) -> None:
        self.name = name
        self.prepared = prepared
        self.refreshed = refreshed
        self.gone: list[tuple[str, str, str | None]] = []
        self.asked = 0
        self.refreshes = 0

    def job_gone(self, namespace: str, name: str, *, uid: str | None) -> None:
        self.gone.append((namespace, name, uid))

    def prepare_pods(self, job: MXJobView, *, labels: Mapping[str, str]) -> Preparation:
        self.asked += 1
        return self.prepared

    def refresh(self, job: MXJobView) -> Sequence[Exception]:
        self.refreshes += 1
        return self.refreshed


def test_a_job_being_deleted_is_gone_by_its_cached_uid() -> None:
    recording = Recording("recording")
    deleting = job()
    deleting["metadata"]["deletionTimestamp"] = NOW_TEXT
    world = World(deleting, hooks=lambda api: [recording])
    world.reconciler.reconcile(KEY)
    assert recording.gone == [("ns", "mnist", "job-uid")]


def test_a_deleted_job_is_gone_by_the_uid_its_deletion_carried_once() -> None:
    recording = Recording("recording")
    world = World(job(), hooks=lambda api: [recording])
    world.jobs.apply("DELETED", world.jobs.get(KEY) or {})
    world.reconciler.job_deleted(KEY, uid="job-uid")
    world.reconciler.reconcile(KEY)
    world.reconciler.reconcile(KEY)
    assert recording.gone == [("ns", "mnist", "job-uid"), ("ns", "mnist", None)]


def test_a_job_never_cached_is_gone_without_a_uid() -> None:
    recording = Recording("recording")
    world = World(job(), hooks=lambda api: [recording])
    world.reconciler.reconcile("ns/never-seen")
    assert recording.gone == [("ns", "never-seen", None)]


def test_a_deletion_followed_by_a_new_job_of_the_name_leaves_no_uid_behind() -> None:
    recording = Recording("recording")
    world = World(job(), hooks=lambda api: [recording])
    world.reconciler.job_deleted(KEY, uid="earlier-uid")
    world.reconciler.reconcile(KEY)  # the new job, cached under the name
    world.jobs.apply("DELETED", world.jobs.get(KEY) or {})
    world.reconciler.reconcile(KEY)
    assert recording.gone == [("ns", "mnist", None)]


def test_every_integration_prepares_and_any_holds_the_pods_back_with_its_errors_raised() -> None:
    refused = Conflict(409, "Conflict", {"reason": "Conflict"})
    failing = Recording("failing", Preparation(ready=True, errors=(refused,)))
    holding = Recording("holding", Preparation(ready=False))
    world = World(job(), hooks=lambda api: [failing, holding])
    with pytest.raises(Conflict) as raised:
        world.reconciler.reconcile(KEY)
    assert raised.value is refused
    assert (failing.asked, holding.asked) == (1, 1)
    assert not [w for w in world.api.writes() if w.path == pods_path("ns")], "no pod made"
    assert [w for w in world.api.writes() if w.path == services_path("ns")], "the rest goes on"


def test_a_running_job_whose_pods_all_stand_is_refreshed_instead_of_prepared() -> None:
    refused = Conflict(409, "Conflict", {"reason": "Conflict"})
    recording = Recording("recording", refreshed=(refused,))
    world = World(job(), hooks=lambda api: [recording])
    world.reconciler.reconcile(KEY)
    assert (recording.asked, recording.refreshes) == (1, 0), "pods made: prepared only"
    world.sync_from_api()
    with pytest.raises(Conflict) as raised:
        world.reconciler.reconcile(KEY)
    assert raised.value is refused, "a failed refresh is the reconcile's error"
    assert (recording.asked, recording.refreshes) == (1, 1)


def test_a_finished_job_is_not_refreshed() -> None:
    recording = Recording("recording")
    finished = job()
    finished["status"] = compute_status(
        view_of(finished),
        JobPods.read([pod(finished, "scheduler-0", phase="Succeeded", exit_code=0)]),
        now=NOW,
    ).status
    world = World(finished, hooks=lambda api: [recording])
    world.reconciler.reconcile(KEY)
    assert recording.refreshes == 0


def test_pods_of_an_older_job_of_the_same_name_are_released() -> None:
    world = World(job())
    old = pod(job(uid="old-job-uid"), "worker-0", phase="Failed", exit_code=1, terminating=True)
    world.api.put_object(pods_path("ns", "mnist-worker-0"), old)
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    # Released, so the API server let it go; the new job's own worker-0 took the name.
    fresh = world.api.objects[pods_path("ns", "mnist-worker-0")]
    assert fresh["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    patches = [r for r in world.api.requests if r.method == "PATCH"]
    assert [r.path for r in patches] == [pods_path("ns", "mnist-worker-0")]


def _training_operator_world() -> tuple[World, Obj]:
    """A running job as training-operator v1.8.1 left it: its pods, Services and status."""
    status = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "MXJobCreated", "message": "x"},
            {"type": "Running", "status": "True", "reason": "MXJobRunning", "message": "y"},
        ],
        "replicaStatuses": {"Scheduler": {"active": 1}, "Server": {"active": 1}},
        "startTime": NOW_TEXT,
    }
    j = job(status=status)
    raw = copy.deepcopy(j)
    for replica in raw["spec"]["mxReplicaSpecs"].values():  # it never defaulted what it stored
        replica.pop("restartPolicy", None)
        replica["template"]["spec"]["containers"][0].pop("env", None)
        replica["template"]["spec"]["containers"][0].pop("ports", None)
    raw["spec"].pop("runPolicy", None)
    world = World(raw)
    for key in ("scheduler-0", "server-0", "worker-0", "worker-1"):
        name = f"mnist-{key}"
        world.api.put_object(pods_path("ns", name), training_operator_pod(j, key))
        world.api.put_object(services_path("ns", name), training_operator_service(j, key))
    world.sync_from_api()
    return world, j


def test_a_running_job_taken_over_from_training_operator_keeps_its_pods_and_services() -> None:
    world, _ = _training_operator_world()
    world.reconciler.reconcile(KEY)
    writes = [(r.method, r.path) for r in world.api.writes()]
    assert ("PUT", mxjobs_path("ns", "mnist", subresource="status")) in writes
    assert not [w for w in writes if w[0] in ("POST", "DELETE")]
    patched = sorted(path for method, path in writes if method == "PATCH")
    assert patched == sorted(
        services_path("ns", f"mnist-{key}")
        for key in ("scheduler-0", "server-0", "worker-0", "worker-1")
    )
    service = world.api.objects[services_path("ns", "mnist-worker-1")]
    assert service["metadata"]["uid"] == "to-svc-worker-1"
    assert "training.kubeflow.org/operator-name" not in service["spec"]["selector"]
    assert service["spec"]["publishNotReadyAddresses"] is True
    stored = world.api.objects[mxjobs_path("ns", "mnist")]["status"]
    assert stored["state"] == "Running"
    assert stored["replicaStatuses"]["Worker"]["active"] == 2
    world.sync_from_api()
    before = len(world.api.requests)
    world.reconciler.reconcile(KEY)
    assert world.api.requests[before:] == []


def test_a_retried_replica_of_a_taken_over_job_is_selected_by_its_adopted_service() -> None:
    world, j = _training_operator_world()
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.set_pod_status(
        "mnist-worker-0", pod(j, "worker-0", phase="Failed", exit_code=137)["status"]
    )
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    replacement = world.api.objects[pods_path("ns", "mnist-worker-0")]
    assert replacement["metadata"]["labels"]["training.kubeflow.org/operator-name"] == (
        "mxjob-operator"
    )
    selector = world.api.objects[services_path("ns", "mnist-worker-0")]["spec"]["selector"]
    labels = replacement["metadata"]["labels"]
    assert selector and all(labels.get(k) == v for k, v in selector.items())


# -- metrics counted where status is written -----------------------------------------------------
def _job_samples(metrics: Metrics) -> dict[str, float]:
    """Each job metric's sample total (counters and histogram counts) over its labels."""
    found: dict[str, float] = {}
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name.endswith(("_total", "_count")) and "job" in sample.name:
                found[sample.name] = found.get(sample.name, 0) + sample.value
    return found


def test_a_restarted_controller_counts_no_start_or_creation_twice() -> None:
    created = job()
    created["metadata"]["creationTimestamp"] = "2030-01-02T03:03:05Z"  # a minute before NOW
    world = World(created)
    world.reconciler.reconcile(KEY)
    world.sync_from_api()
    for name in ("scheduler-0", "server-0", "worker-0", "worker-1"):
        world.set_pod_status(f"mnist-{name}", pod(job(), name)["status"])
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    assert world.api.objects[mxjobs_path("ns", "mnist")]["status"]["state"] == "Running"
    counted = _job_samples(world.reconciler.metrics)
    assert counted["training_operator_jobs_created_total"] == 1
    assert counted["mxjob_controller_job_start_seconds_count"] == 1
    # A new process (fresh metrics) reconciles the same job: it reads the written status back.
    world.reconciler = Reconciler(
        world.api, jobs=world.jobs, pods=world.pods, services=world.services,
        expectations=world.expectations, recorder=world.recorder, metrics=Metrics(),
        integrations=integrations(world.api), now=lambda: world.clock,
    )  # fmt: skip
    world.sync_from_api()
    world.reconciler.reconcile(KEY)
    counted = _job_samples(world.reconciler.metrics)
    assert counted.get("training_operator_jobs_created_total", 0) == 0
    assert counted.get("mxjob_controller_job_start_seconds_count", 0) == 0


def test_a_namespaces_job_counters_exist_at_zero_from_its_first_job_whoever_runs_it() -> None:
    # A job this controller does not run still makes its namespace's series, so that the
    # first increment of each is a step from 0 that increase() sees.
    world = World(job(run_policy={"managedBy": "example.com/other"}))
    world.reconciler.reconcile(KEY)
    assert world.api.writes() == []
    samples = {
        (sample.name, sample.labels.get("job_namespace"), sample.value)
        for family in world.reconciler.metrics.registry.collect()
        for sample in family.samples
        if sample.name.startswith("training_operator_jobs_")
    }
    assert {name for name, _, _ in samples} >= {
        "training_operator_jobs_created_total",
        "training_operator_jobs_deleted_total",
        "training_operator_jobs_successful_total",
        "training_operator_jobs_failed_total",
        "training_operator_jobs_restarted_total",
    }
    assert {
        (namespace, value) for name, namespace, value in samples if name.endswith("_total")
    } == {("ns", 0.0)}
