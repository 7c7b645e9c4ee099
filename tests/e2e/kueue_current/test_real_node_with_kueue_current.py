"""Kueue v0.19.2 queues MXJobs on the real node through its Workload API (the operator's route).

Kueue is built from its release source and installed from its own ``config/``
(``localkube.thirdparty.kueue.CURRENT``) with ``MXJob.v1.kubeflow.org`` among its
``integrations.externalFrameworks``; it has no MXJob integration of its own. The operator is
installed with ``manifests/components/kueue-workloads``: its webhook creates queued jobs
suspended and its controller writes each job's Workload, starts the job when Kueue admits it,
stops it when Kueue evicts it and marks the Workload finished
(controller/integrations/kueue/contract.py). Kueue runs with a short ``waitForPodsReady`` (20 s, one
requeue) so its timeout path ends in seconds. Every test also checks Kueue's own view (Workloads,
LocalQueue and ClusterQueue usage) against the jobs.
"""

from __future__ import annotations

import atexit
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from localkube.base.api import Api, NotFound, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import ControlPlaneSettings
from localkube.realnode.cluster import SYSTEM_NAMESPACE
from localkube.thirdparty import kueue, multikueue
from tests.e2e.kueue_current.install import COMPONENT, PODS_READY, VERSION, queued_in
from tests.e2e.kueue_queues import (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    QUOTA_CPU,
    TOLERATION,
    Queued,
    condition,
    mxjob,
    pod_uids,
    pods_of,
    priority_classes,
    queue_active,
    queue_objects,
    queued_job,
    state,
    workload_of,
    workloads_of,
)
from tests.e2e.real_node_fixtures import InstalledCluster, remove_namespace
from tests.e2e.real_node_fixtures import pods_of as operator_pods
from tests.helpers.waiting import wait_for

# A component built in the background by make test: first test waits for it (late_builds).
pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.changes_install,
    pytest.mark.late_builds("third-party-kueue-current", "late-images-kueue-current"),
]

NAMESPACE = "kueue-current-jobs"


@pytest.fixture(scope="module")
def queued(real_cluster: InstalledCluster, kueue_current_seconds: float) -> Iterator[Queued]:
    with queued_in(real_cluster, kueue_current_seconds, NAMESPACE) as context:
        context.apply(*queue_objects(NAMESPACE, VERSION), *priority_classes(VERSION))
        wait_for("the ClusterQueue to be active", lambda: queue_active(context), bool, timeout=60)
        yield context


def kueue_usage(queued: Queued) -> tuple[int, int, int]:
    """Kueue's own count of admitted Workloads: the ClusterQueue's, the LocalQueue's, and the
    Workloads with ``Admitted`` True and not ``Finished``."""
    cq = queued.api.request("GET", f"{queued.kueue_api}/clusterqueues/{CLUSTER_QUEUE}")
    lq = queued.api.request(
        "GET", f"{queued.kueue_api}/namespaces/{NAMESPACE}/localqueues/{LOCAL_QUEUE}"
    )
    listed = queued.api.request("GET", f"{queued.kueue_api}/namespaces/{NAMESPACE}/workloads")
    admitted = [
        w for w in listed["items"] if condition(w, "Admitted") and not condition(w, "Finished")
    ]
    return (
        int((cq.get("status") or {}).get("admittedWorkloads") or 0),
        int((lq.get("status") or {}).get("admittedWorkloads") or 0),
        len(admitted),
    )


def running_jobs(queued: Queued, names: list[str]) -> int:
    """Jobs unsuspended and unfinished, as one LIST sees them."""
    listed = queued.api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs")
    return sum(
        1
        for job in listed["items"]
        if job["metadata"]["name"] in names
        and not job["spec"]["runPolicy"].get("suspend")
        and (job.get("status") or {}).get("state") not in ("Succeeded", "Failed")
    )


def hold(queued: Queued, *, held: bool) -> None:
    policy = {"spec": {"stopPolicy": "Hold" if held else "None"}}
    queued.kubectl(
        "patch", f"clusterqueue/{CLUSTER_QUEUE}", "--type=merge", "-p", json.dumps(policy)
    )
    wait_for(
        "Kueue to see the ClusterQueue " + ("held" if held else "released"),
        lambda: queue_active(queued),
        lambda active: active is not held,
        timeout=60,
    )


def test_a_queued_job_waits_suspended_and_runs_once_admitted_on_the_flavors_node(
    queued: Queued,
) -> None:
    image = queued.installed.cluster.images.examples.ref
    hold(queued, held=True)
    queued.create(queued_job("held", image, seconds=15))
    assert mxjob(queued, "held")["spec"]["runPolicy"]["suspend"] is True  # the webhook
    workload = wait_for(
        "the controller's Workload, found inadmissible while the queue is held",
        lambda: workload_of(queued, "held") or {},
        lambda found: any(
            c["type"] == "QuotaReserved" and c["status"] == "False"
            for c in (found.get("status") or {}).get("conditions") or []
        ),
        timeout=60,
    )
    owner = workload["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("MXJob", "held", True)
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("worker", 1)]
    assert workload["spec"]["queueName"] == LOCAL_QUEUE
    wait_for(
        "the Suspended condition",
        lambda: mxjob(queued, "held"),
        lambda job: condition(job, "Suspended"),
        timeout=30,
    )
    assert not pods_of(queued, "held")
    # Kueue writes the queues' status a moment after the Workload's admission.
    wait_for(
        "Kueue's usage (0, 0, 0)", lambda: kueue_usage(queued), lambda u: u == (0, 0, 0), timeout=30
    )
    hold(queued, held=False)
    wait_for("the job to run", lambda: state(queued, "held"), lambda s: s == "Running", timeout=90)
    # Kueue writes the queues' status a moment after the Workload's admission.
    wait_for(
        "Kueue's usage (1, 1, 1)", lambda: kueue_usage(queued), lambda u: u == (1, 1, 1), timeout=30
    )
    wait_for(
        "the job to finish",
        lambda: state(queued, "held"),
        lambda s: s in ("Succeeded", "Failed"),
        timeout=120,
    )
    assert state(queued, "held") == "Succeeded"
    pod = queued.api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/held-worker-0")
    assert pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "mxjob-node"
    assert any(
        all(t.get(k) == v for k, v in TOLERATION.items()) for t in pod["spec"]["tolerations"]
    )
    assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
    workload = wait_for(
        "the Workload Finished, Kueue's finalizer gone",
        lambda: workload_of(queued, "held") or {},
        lambda found: (
            condition(found, "Finished")
            and "kueue.x-k8s.io/resource-in-use" not in found["metadata"].get("finalizers", [])
        ),
        timeout=60,
    )
    assert condition(workload, "PodsReady"), workload["status"]
    wait_for(
        "Kueue's usage back to none",
        lambda: kueue_usage(queued),
        lambda u: u == (0, 0, 0),
        timeout=60,
    )


def test_five_jobs_on_a_quota_for_two_run_at_most_two_at_a_time_and_all_succeed(
    queued: Queued,
) -> None:
    image = queued.installed.cluster.images.examples.ref
    names = [f"quota-{index}" for index in range(5)]
    for name in names:
        queued.create(queued_job(name, image, seconds=4))
    most = 0
    disagreements: list[str] = []

    def observe() -> list[str]:
        nonlocal most
        running = running_jobs(queued, names)
        cq, lq, admitted = kueue_usage(queued)
        most = max(most, running, admitted)
        if cq > 2 or lq > 2 or admitted > 2:
            disagreements.append(f"Kueue admitted more than the quota: {cq}, {lq}, {admitted}")
        return [state(queued, n) for n in names]

    wait_for(
        "every job to finish",
        observe,
        lambda states: all(s in ("Succeeded", "Failed") for s in states),
        timeout=300,
        interval=0.3,
    )
    assert [state(queued, n) for n in names] == ["Succeeded"] * 5
    assert not disagreements, disagreements
    assert most == 2, most
    # One Workload per job, each marked Finished by Kueue a moment after its job ends.
    wait_for(
        "every Workload Finished",
        lambda: [[condition(w, "Finished") for w in workloads_of(queued, n)] for n in names],
        lambda finished: finished == [[True]] * len(names),
        timeout=60,
    )


def test_a_higher_priority_job_evicts_a_running_one_which_comes_back_with_its_backoff_untouched(
    queued: Queued,
) -> None:
    image = queued.installed.cluster.images.examples.ref
    queued.create(queued_job("low", image, seconds=25, priority="mxjob-low", cpu=QUOTA_CPU))
    wait_for(
        "the low job to run", lambda: state(queued, "low"), lambda s: s == "Running", timeout=90
    )
    running = pod_uids(queued, "low")
    assert running, "the low job is Running without a pod"
    queued.create(queued_job("high", image, seconds=2, priority="mxjob-high"))
    wait_for(
        "the low job stopped by the controller",
        lambda: mxjob(queued, "low")["spec"]["runPolicy"].get("suspend"),
        bool,
        timeout=60,
    )
    # The pods it ran are gone (by uid: once re-admitted, it gets pods of the same names).
    wait_for(
        "the low job's evicted pods to go",
        lambda: pod_uids(queued, "low"),
        lambda uids: not uids & running,
        timeout=90,
    )
    wait_for(
        "the high job to succeed",
        lambda: state(queued, "high"),
        lambda s: s == "Succeeded",
        timeout=120,
    )
    readmitted = wait_for(
        "the low job re-admitted",
        lambda: mxjob(queued, "low"),
        lambda job: not job["spec"]["runPolicy"].get("suspend"),
        timeout=120,
    )
    # The templates were restored on eviction and given the flavor again on re-admission.
    template = readmitted["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    assert template["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "mxjob-node"}
    wait_for(
        "the low job to succeed",
        lambda: state(queued, "low"),
        lambda s: s in ("Succeeded", "Failed"),
        timeout=180,
    )
    job = mxjob(queued, "low")
    # backoffLimit 0: had the eviction counted as a failure, the job would have Failed.
    assert job["status"]["state"] == "Succeeded", job["status"]
    assert job["spec"]["runPolicy"]["backoffLimit"] == 0
    # Kueue marks the Workload Finished on its own watch of the job, a moment after the job ends.
    workload = wait_for(
        "the low job's Workload Finished",
        lambda: workload_of(queued, "low"),
        lambda found: found is not None and condition(found, "Finished"),
        timeout=60,
    )
    assert workload is not None
    assert "Preempted" in {c["type"] for c in workload["status"]["conditions"]}


def test_wait_for_pods_ready_evicts_and_requeues_a_job_whose_pods_cannot_start(
    queued: Queued,
) -> None:
    job = queued_job("no-image", "docker.io/mxjob-operator/does-not-exist:none")
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"
    ] = "Never"
    queued.create(job)
    reasons: list[str] = []

    def evictions() -> dict[str, Any]:
        found = workload_of(queued, "no-image") or {}
        for c in (found.get("status") or {}).get("conditions") or []:
            if c["type"] == "Evicted" and c["status"] == "True" and c["reason"] not in reasons:
                reasons.append(c["reason"])
        return found

    workload = wait_for(
        "Kueue to give up on the job after its requeue (Workload deactivated)",
        evictions,
        lambda found: (
            (found.get("spec") or {}).get("active") is False
            and not condition(found, "QuotaReserved")
        ),
        timeout=240,
        interval=0.5,
    )
    assert "PodsReadyTimeout" in reasons, reasons
    # Kueue's own record: evicted for the timeout, then deactivated at the requeuing limit.
    recorded = {
        (e["reason"], e.get("underlyingCause", ""))
        for e in (workload["status"].get("schedulingStats") or {}).get("evictions") or []
    }
    assert ("PodsReadyTimeout", "WaitForStart") in recorded, workload["status"]
    assert ("Deactivated", "RequeuingLimitExceeded") in recorded, workload["status"]
    wait_for(
        "the job's pods to go", lambda: pods_of(queued, "no-image"), lambda p: not p, timeout=60
    )
    stored = mxjob(queued, "no-image")
    assert stored["spec"]["runPolicy"]["suspend"] is True
    assert stored["status"]["state"] == "Suspended", stored["status"]
    wait_for(
        "Kueue's usage back to none",
        lambda: kueue_usage(queued),
        lambda u: u == (0, 0, 0),
        timeout=60,
    )
    queued.kubectl("delete", "-n", NAMESPACE, "mxjob", "no-image", "--wait", timeout=60)


def test_deleting_a_queued_or_a_running_job_leaves_no_workload_or_pod(queued: Queued) -> None:
    image = queued.installed.cluster.images.examples.ref
    hold(queued, held=True)
    queued.create(queued_job("queued-gone", image))
    wait_for("its Workload", lambda: workload_of(queued, "queued-gone"), bool, timeout=60)
    queued.kubectl("delete", "-n", NAMESPACE, "mxjob", "queued-gone", "--wait", timeout=60)
    hold(queued, held=False)
    queued.create(queued_job("running-gone", image, seconds=60))
    wait_for(
        "the job to run",
        lambda: state(queued, "running-gone"),
        lambda s: s == "Running",
        timeout=90,
    )
    queued.kubectl("delete", "-n", NAMESPACE, "mxjob", "running-gone", "--wait", timeout=60)
    for name in ("queued-gone", "running-gone"):
        wait_for(
            f"{name}'s Workloads to go",
            functools.partial(workloads_of, queued, name),
            lambda found: not found,
            timeout=90,
        )
        wait_for(
            f"{name}'s pods to go",
            functools.partial(pods_of, queued, name),
            lambda p: not p,
            timeout=90,
        )
    wait_for(
        "Kueue's usage back to none",
        lambda: kueue_usage(queued),
        lambda u: u == (0, 0, 0),
        timeout=60,
    )


def test_a_controller_restart_between_the_workload_and_the_start_loses_nothing(
    queued: Queued,
) -> None:
    image = queued.installed.cluster.images.examples.ref
    hold(queued, held=True)
    queued.create(queued_job("restarted", image))
    wait_for("its Workload", lambda: workload_of(queued, "restarted"), bool, timeout=60)
    before = {p["metadata"]["name"] for p in operator_pods(queued.installed, "controller")}
    queued.kubectl("delete", "pod", "-n", SYSTEM_NAMESPACE, *sorted(before), "--wait", timeout=90)
    wait_for(
        "new controller pods",
        lambda: {p["metadata"]["name"] for p in operator_pods(queued.installed, "controller")},
        lambda names: bool(names) and not names & before,
        timeout=120,
    )
    hold(queued, held=False)
    wait_for(
        "the job to succeed",
        lambda: state(queued, "restarted"),
        lambda s: s in ("Succeeded", "Failed"),
        timeout=180,
    )
    assert state(queued, "restarted") == "Succeeded"
    assert len(workloads_of(queued, "restarted")) == 1


# -- MultiKueue: the real node's cluster is the worker -------------------------------------------

MK_NAMESPACE = "multikueue-jobs"
MK_QUEUE = "multikueue-lq"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


@dataclass
class Dispatching:
    """A MultiKueue manager dispatching ``MK_NAMESPACE``'s queue to the real node's cluster and
    to a second worker whose API server a test stops."""

    manager: multikueue.ManagerCluster
    worker: Queued
    lost: ControlPlane

    def on_manager(self, name: str) -> dict[str, Any]:
        path = f"/apis/kubeflow.org/v1/namespaces/{MK_NAMESPACE}/mxjobs/{name}"
        return dict(self.manager.api.request("GET", path))

    def on_worker(self, name: str) -> dict[str, Any] | None:
        path = f"/apis/kubeflow.org/v1/namespaces/{MK_NAMESPACE}/mxjobs/{name}"
        try:
            return dict(self.worker.api.request("GET", path))
        except NotFound:
            return None

    def submit(self, name: str, *, seconds: float) -> None:
        """A single-Worker job of the examples image, queued on the manager for MultiKueue."""
        image = self.worker.installed.cluster.images.examples.ref
        job = json.dumps(dispatched_job(name, image, seconds=seconds))
        self.manager.plane.kubectl("apply", "-n", MK_NAMESPACE, "-f", "-", input_text=job)

    def wait_state(self, name: str, state: str, *, on: str = "manager") -> dict[str, Any]:
        """Until the job's ``status.state`` is ``state`` on the manager or the worker."""
        read = self.on_manager if on == "manager" else self.on_worker
        found: dict[str, Any] = wait_for(
            f"{name} {state} on the {on}",
            lambda: read(name) or {},
            lambda job: (job.get("status") or {}).get("state") == state,
            timeout=180,
        )
        return found

    def pods(self, api: Api, name: str) -> list[dict[str, Any]]:
        items = api.request("GET", f"/api/v1/namespaces/{MK_NAMESPACE}/pods")["items"]
        return [p for p in items if p["metadata"]["name"].startswith(f"{name}-")]

    def cluster_active(self, name: str) -> dict[str, Any]:
        found = self.manager.api.request("GET", f"{KUEUE_V1BETA2}/multikueueclusters/{name}")
        for entry in (found.get("status") or {}).get("conditions") or []:
            if entry["type"] == "Active":
                return dict(entry)
        return {}


KUEUE_V1BETA2 = "/apis/kueue.x-k8s.io/v1beta2"
MXJOB_CRD = PROJECT_ROOT / "manifests" / "crd" / "mxjobs.kubeflow.org.yaml"


@pytest.fixture(scope="module")
def dispatching(queued: Queued, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dispatching]:
    work = tmp_path_factory.mktemp("multikueue")
    manager = multikueue.ManagerCluster(
        work / "manager", components=(f"components/{COMPONENT}",), pods_ready=PODS_READY
    )
    lost = ControlPlane(ControlPlaneSettings(state_dir=work / "lost"))
    atexit.register(manager.down)
    atexit.register(lost.down)
    try:
        manager.start()
        lost.up()
        # The lost worker serves what MultiKueue watches (Workloads, MXJobs, Jobs), no more.
        crds = kueue.CURRENT.source.build() / "config" / "components" / "crd"
        lost.kubectl("apply", "--server-side", "-k", str(crds), timeout=120)
        lost.kubectl("apply", "--server-side", "-f", str(MXJOB_CRD), timeout=60)
        for plane in (manager.plane, queued.installed.plane, lost):
            ensure_namespace(Api.from_kubeconfig(plane.kubeconfig), MK_NAMESPACE)
        multikueue.connect_workers(
            manager,
            {"worker": queued.installed.plane, "lost": lost},
            namespace=MK_NAMESPACE,
            quota={"cpu": "1", "memory": "2Gi"},
            local_queue=MK_QUEUE,
        )
        dispatching = Dispatching(manager, queued, lost)
        for name in ("worker", "lost"):
            wait_for(
                f"MultiKueue connected to {name}",
                functools.partial(dispatching.cluster_active, name),
                lambda found: found.get("status") == "True",
                timeout=120,
            )
        yield dispatching
    finally:
        lost.down()
        manager.down()
        atexit.unregister(lost.down)
        atexit.unregister(manager.down)
        remove_namespace(queued.installed, MK_NAMESPACE, until_gone=True)


def dispatched_job(name: str, image: str, *, seconds: float) -> dict[str, Any]:
    job = queued_job(name, image, seconds=seconds)
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = MK_QUEUE
    job["spec"]["managedBy"] = MULTIKUEUE
    return job


def test_a_job_dispatched_by_multikueue_runs_on_the_worker_and_its_status_shows_on_the_manager(
    dispatching: Dispatching,
) -> None:
    manager_api = dispatching.manager.api
    dispatching.submit("remote", seconds=5)
    stored = dispatching.on_manager("remote")
    assert stored["spec"]["managedBy"] == MULTIKUEUE
    assert stored["spec"]["runPolicy"]["suspend"] is True
    copy = wait_for(
        "the job's copy on the worker", lambda: dispatching.on_worker("remote"), bool, timeout=120
    )
    assert copy is not None and "managedBy" not in copy["spec"]
    prebuilt = copy["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"]
    # The worker runs it under the Workload MultiKueue made there, adopted by its controller
    # (looked at while it exists: MultiKueue deletes it once the manager's is Finished).
    remote = f"{KUEUE_V1BETA2}/namespaces/{MK_NAMESPACE}/workloads/{prebuilt}"
    wait_for(
        "the worker's controller to adopt MultiKueue's Workload",
        lambda: dispatching.worker.api.request("GET", remote),
        lambda found: any(
            (o["kind"], o["name"], o.get("controller")) == ("MXJob", "remote", True)
            for o in found["metadata"].get("ownerReferences") or []
        ),
        timeout=120,
    )
    dispatching.wait_state("remote", "Succeeded", on="worker")
    dispatching.wait_state("remote", "Succeeded")
    # The manager's controller wrote the Workload Kueue dispatched and made no pod.
    local = wait_for(
        "the manager's Workload Finished",
        lambda: [
            w
            for w in manager_api.request(
                "GET", f"{KUEUE_V1BETA2}/namespaces/{MK_NAMESPACE}/workloads"
            )["items"]
            if w["metadata"]["ownerReferences"][0]["name"] == "remote"
        ],
        lambda found: len(found) == 1 and condition(found[0], "Finished"),
        timeout=120,
    )
    assert local[0]["metadata"]["name"] == prebuilt
    assert dispatching.pods(manager_api, "remote") == []


def test_deleting_a_dispatched_job_on_the_manager_deletes_it_on_the_worker(
    dispatching: Dispatching,
) -> None:
    dispatching.submit("remote-gone", seconds=120)
    dispatching.wait_state("remote-gone", "Running")
    dispatching.manager.plane.kubectl(
        "delete", "-n", MK_NAMESPACE, "mxjob", "remote-gone", "--wait", timeout=60
    )
    wait_for(
        "the worker's copy to go",
        lambda: dispatching.on_worker("remote-gone"),
        lambda job: job is None,
        timeout=120,
    )
    wait_for(
        "the worker's pods to go",
        lambda: dispatching.pods(dispatching.worker.api, "remote-gone"),
        lambda pods: not pods,
        timeout=120,
    )


def test_a_worker_whose_api_server_stops_is_reported_and_jobs_go_to_the_one_left(
    dispatching: Dispatching,
) -> None:
    dispatching.lost.down()
    condition_now = wait_for(
        "Kueue to report the lost worker",
        lambda: dispatching.cluster_active("lost"),
        lambda found: found.get("status") == "False",
        timeout=180,
    )
    assert condition_now["reason"], condition_now
    dispatching.submit("after-loss", seconds=1)
    dispatching.wait_state("after-loss", "Succeeded")
