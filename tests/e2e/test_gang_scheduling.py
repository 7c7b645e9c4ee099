"""Gang scheduling on the real kube-scheduler (v1.36, ``scheduling.k8s.io/v1alpha2``).

Two MXJobs each need one Scheduler and four one-GPU Workers; the nodes have six GPUs in all.
The pods reach kube-scheduler interleaved (A, B, A, B...: :func:`release_interleaved`), the same
order in every test. Without gang scheduling each job gets three of its four GPUs and neither
runs; with the native Workload API one job's pods are bound together while the other's wait as
a whole, and run once the first job is done. The stage is the one ``make demo-gang`` shows
(:mod:`localkube.scenarios.gang_demo`), on a control plane of its own: this one runs kube-scheduler.

The nodes are labelled by rack, and the plane runs TopologyAwareWorkloadScheduling and
WorkloadAwarePreemption: a job with ``schedulingPolicy.topologyKey`` is placed in one rack or
waits whole, and one with a higher ``priorityClass`` preempts a whole lower-priority gang (one
without a class loses only the pods needed: the contrast).

``--gang-scheduler=volcano`` and ``scheduler-plugins`` are checked against those projects' real
PodGroup CRDs (``hack/gang-crds.sh``), installed on the same plane: the API server accepts the
PodGroups and keeps every field (a structural schema prunes unknown ones), and the pods carry
the scheduler's name, label and annotations. Neither scheduler runs on this plane: the pods stay
Pending, unbound, because kube-scheduler leaves pods that name another scheduler alone; the test
asserts exactly that. For Volcano the test plays the one part of Volcano the controller waits
for: admitting the PodGroup (``status.phase: Inqueue``). Volcano's real scheduler places these
gangs in ``test_gang_volcano.py``; scheduler-plugins' cannot be built here.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import NotFound, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.base.processes import stop_process
from localkube.plane.operator import wait_established
from localkube.scenarios.gang_competition import describe
from localkube.scenarios.gang_competition import run as run_competition
from localkube.scenarios.gang_demo import (
    RACK_LABEL,
    Scene,
    bound,
    clear,
    gpu_job,
    job_state,
    phases,
    racks,
    release_interleaved,
    scene,
)
from localkube.scenarios.jobwatch import job_pods
from localkube.thirdparty.training_operator import LocalTrainingOperator
from tests.helpers import mxjobs, pods
from tests.helpers.waiting import wait_for

# The pod groups are compared with those of training-operator, run here.
pytestmark = pytest.mark.late_builds("build-training-operator")

JOBS = ("job-a", "job-b")
PODS_EACH = 5


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    with scene(Path(tmp_path_factory.mktemp("gang-plane"))) as setup:
        yield setup


@pytest.fixture
def gang_namespace(stage: Scene) -> Iterator[str]:
    name = f"g-{secrets.token_hex(4)}"
    ensure_namespace(stage.api, name)
    yield name
    clear(stage.api, name, JOBS)


def _submit(stage: Scene, namespace: str, *, gang_scheduler: str) -> int:
    pid = stage.start_controller(gang_scheduler=gang_scheduler, namespace=namespace)
    for job in JOBS:
        stage.api.request(
            "POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs", body=gpu_job(job)
        )
    release_interleaved(stage.api, namespace, JOBS, pods_each=PODS_EACH)
    return pid


def _stop(stage: Scene, namespace: str, pid: int, *, jobs: tuple[str, ...] = JOBS) -> None:
    """Delete the jobs while the controller still runs: their pods carry its tracking finalizer,
    which only a running controller lets go of (controller/job/tracking.py)."""
    try:
        clear(stage.api, namespace, jobs)
    finally:
        stop_process(pid)


def _events(stage: Scene, namespace: str, job: str, reason: str) -> list[str]:
    return _events_where(stage, namespace, f"involvedObject.name={job},reason={reason}")


def _events_where(stage: Scene, namespace: str, selector: str) -> list[str]:
    """The messages of the namespace's Events that match the field ``selector``."""
    return [str(e.get("message")) for e in _event_objects(stage, namespace, selector)]


def _event_objects(stage: Scene, namespace: str, selector: str) -> list[dict[str, Any]]:
    """The namespace's Events that match the field ``selector``."""
    items: list[dict[str, Any]] = stage.api.request(
        "GET", f"/api/v1/namespaces/{namespace}/events", query=[("fieldSelector", selector)]
    )["items"]
    return items


def test_without_gangs_both_jobs_hold_part_of_the_gpus_and_neither_runs(
    stage: Scene, gang_namespace: str
) -> None:
    api, ns = stage.api, gang_namespace
    pid = _submit(stage, ns, gang_scheduler="none")
    try:
        wait_for(
            "the six GPUs and both Schedulers taken",
            lambda: bound(api, ns, "job-a") + bound(api, ns, "job-b") == 8,
            bool,
            timeout=30,
        )
        # The kubelets' record that the bound pods run, and kube-scheduler's that it tried each
        # job's last pod and found no node for it: nothing more fits.
        for job in JOBS:
            wait_for(
                f"{job}'s bound pods Running and its last one found unschedulable",
                functools.partial(_scheduling, stage, ns, job),
                lambda found: sorted(found.values()) == [*["Running"] * 4, "Unschedulable"],
                timeout=30,
            )
        for job in JOBS:
            assert sorted(phases(api, ns, job).values()) == ["Pending", *["Running"] * 4], job
            assert job_state(api, ns, job) != "Running"
        assert not stage.api.request(
            "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups"
        )["items"]
    finally:
        _stop(stage, ns, pid)


def _pending(api: Any, ns: str, name: str, *, wait: bool = True) -> dict[str, Any]:
    """The job's Pending condition ({} when it has none); with ``wait``, once it has one."""

    def read() -> dict[str, Any]:
        job = api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/{name}")
        conditions = (job.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Pending"), {})

    return wait_for(f"{name}'s Pending condition", read, bool, timeout=30) if wait else read()


def test_native_gangs_bind_one_job_whole_and_the_other_after_it(
    stage: Scene, gang_namespace: str
) -> None:
    api, ns = stage.api, gang_namespace
    pid = _submit(stage, ns, gang_scheduler="native")
    try:
        wait_for("job-a bound", lambda: bound(api, ns, "job-a") == 5, bool, timeout=30)
        wait_for("A Running", lambda: job_state(api, ns, "job-a") == "Running", bool, timeout=30)
        # kube-scheduler's record that it tried job-b's gang beside job-a's and could not place
        # it (its PodGroup's PodGroupScheduled condition), and the operator's that it saw
        # job-b's pods waiting (its GangWaiting event): then nothing of job-b runs.
        wait_for(
            "kube-scheduler to find job-b's gang unschedulable",
            lambda: api.request(
                "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups/job-b"
            ),
            lambda group: any(
                c["type"] == "PodGroupScheduled"
                and c["status"] == "False"
                and c["reason"] == "Unschedulable"
                for c in (group.get("status") or {}).get("conditions") or []
            ),
            timeout=30,
        )
        waiting = wait_for(
            "the GangWaiting event on job-b",
            lambda: _events(stage, ns, "job-b", "GangWaiting"),
            bool,
            timeout=30,
        )
        assert "0 of 5 pods placed" in waiting[0], waiting
        assert set(phases(api, ns, "job-a").values()) == {"Running"}
        assert set(phases(api, ns, "job-b").values()) == {"Pending"}
        assert bound(api, ns, "job-b") == 0
        assert job_state(api, ns, "job-b") == "Created"
        pending = _pending(api, ns, "job-b")
        assert pending["reason"] == "GangWaiting" and "0 of 5 pods placed" in pending["message"]

        # The gang objects: owned by the job, minCount every replica, every pod joined.
        group = api.request(
            "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups/job-b"
        )
        assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
        assert group["metadata"]["ownerReferences"][0]["kind"] == "MXJob"
        workload = api.request(
            "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/workloads/job-b"
        )
        assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"] == {
            "minCount": 5
        }
        for pod in job_pods(api, ns, "job-b").values():
            assert pod["spec"]["schedulingGroup"] == {"podGroupName": "job-b"}

        stage.finish_pods(ns, "job-a")
        wait_for("job-b bound", lambda: bound(api, ns, "job-b") == 5, bool, timeout=30)
        wait_for("B Running", lambda: job_state(api, ns, "job-b") == "Running", bool, timeout=30)
        assert _pending(api, ns, "job-b", wait=False) == {}, "a running job waits for nothing"
        stage.finish_pods(ns, "job-b")
        wait_for(
            "B Succeeded", lambda: job_state(api, ns, "job-b") == "Succeeded", bool, timeout=30
        )
        assert job_state(api, ns, "job-a") == "Succeeded"
    finally:
        _stop(stage, ns, pid)


def test_native_gang_objects_go_with_the_job(stage: Scene, gang_namespace: str) -> None:
    api, ns = stage.api, gang_namespace
    pid = stage.start_controller(gang_scheduler="native", namespace=ns)
    try:
        api.request(
            "POST",
            f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs",
            body=gpu_job("job-a", gated=False),
        )
        wait_for("job-a bound", lambda: bound(api, ns, "job-a") == 5, bool, timeout=30)
        api.request(
            "DELETE",
            f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/job-a",
            body={"propagationPolicy": "Background"},
        )
        base = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}"
        wait_for(
            "the Workload and PodGroup garbage-collected",
            lambda: (
                not api.request("GET", f"{base}/podgroups")["items"]
                and not api.request("GET", f"{base}/workloads")["items"]
            ),
            bool,
            timeout=60,
        )
    finally:
        _stop(stage, ns, pid)


def _patch_job(stage: Scene, namespace: str, name: str, patch: dict[str, object]) -> None:
    stage.api.request(
        "PATCH",
        f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}",
        body=patch,
        content_type="application/merge-patch+json",
    )


def test_native_gang_follows_suspend_resize_resume_and_pod_recreation(
    stage: Scene, gang_namespace: str
) -> None:
    api, ns = stage.api, gang_namespace
    base = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}"
    pid = stage.start_controller(gang_scheduler="native", namespace=ns)
    try:
        api.request(
            "POST",
            f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs",
            body=gpu_job("job-a", workers=2, gated=False),
        )
        wait_for("3 pods bound", lambda: bound(api, ns, "job-a") == 3, bool, timeout=30)
        assert api.request("GET", f"{base}/podgroups/job-a")["spec"]["schedulingPolicy"] == {
            "gang": {"minCount": 3}
        }

        # A worker killed (137, retryable) is recreated, joins the same group and is bound.
        worker = job_pods(api, ns, "job-a")["job-a-worker-1"]
        kubelet = next(k for k in stage.kubelets if k.node_name == worker["spec"]["nodeName"])
        kubelet.terminate(ns, "job-a-worker-1", exit_code=137)
        old_uid = worker["metadata"]["uid"]

        def recreated_and_bound() -> bool:
            pod = job_pods(api, ns, "job-a").get("job-a-worker-1")
            return bool(pod and pod["metadata"]["uid"] != old_uid and pod["spec"].get("nodeName"))

        wait_for("worker recreated and bound", recreated_and_bound, bool, timeout=30)

        # Suspended, resized to 4 workers, resumed: a new PodGroup with minCount 5.
        _patch_job(stage, ns, "job-a", {"spec": {"runPolicy": {"suspend": True}}})
        wait_for("pods gone", lambda: not job_pods(api, ns, "job-a"), bool, timeout=30)
        _patch_job(stage, ns, "job-a", {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 4}}}})
        _patch_job(stage, ns, "job-a", {"spec": {"runPolicy": {"suspend": False}}})
        wait_for("5 bound", lambda: bound(api, ns, "job-a") == 5, bool, timeout=30)
        assert api.request("GET", f"{base}/podgroups/job-a")["spec"]["schedulingPolicy"] == {
            "gang": {"minCount": 5}
        }
        templates = api.request("GET", f"{base}/workloads/job-a")["spec"]["podGroupTemplates"]
        assert templates[0]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    finally:
        _stop(stage, ns, pid)


# -- volcano and scheduler-plugins: their PodGroup CRDs, no scheduler of theirs ------------------
CRD_SCRIPT = PROJECT_ROOT / "hack" / "gang-crds.sh"


# -- topology and priority of a native gang --------------------------------------------------
# The stage's nodes are labelled by rack (gang_demo.RACKS: gpu-node-0 and -1 in rack-a, gpu-node-2
# in rack-b); the plane runs TopologyAwareWorkloadScheduling and WorkloadAwarePreemption.


def _submit_job(stage: Scene, namespace: str, job: dict[str, Any], **policy: str) -> None:
    if policy:
        job["spec"]["runPolicy"] = {"schedulingPolicy": policy}
    stage.api.request("POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs", body=job)


def _unschedulable(stage: Scene, namespace: str, group: str) -> bool:
    """kube-scheduler's record that it tried the gang and found no place for it."""
    found = stage.api.request(
        "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups/{group}"
    )
    return any(
        c["type"] == "PodGroupScheduled"
        and c["status"] == "False"
        and c["reason"] == "Unschedulable"
        for c in (found.get("status") or {}).get("conditions") or []
    )


def test_a_topology_key_places_the_whole_gang_in_one_rack(
    stage: Scene, gang_namespace: str
) -> None:
    """rack-a has two nodes and four GPUs, rack-b one node and two GPUs. A Scheduler and four
    one-GPU Workers fit in rack-a only; with five Workers the gang fits the cluster but no rack,
    so with the key it waits whole, and without it is placed across both racks."""
    api, ns = stage.api, gang_namespace
    pid = stage.start_controller(gang_scheduler="native", namespace=ns)
    try:
        _submit_job(stage, ns, gpu_job("racked", workers=4, gated=False), topologyKey=RACK_LABEL)
        wait_for("racked bound", lambda: bound(api, ns, "racked") == 5, bool, timeout=30)
        placed = racks(api, ns, "racked")
        assert set(placed.values()) == {"rack-a"}, placed
        clear(api, ns, ("racked",))

        _submit_job(stage, ns, gpu_job("too-wide", workers=5, gated=False), topologyKey=RACK_LABEL)
        wait_for("too-wide found unschedulable", lambda: _unschedulable(stage, ns, "too-wide"),
                 bool, timeout=30)  # fmt: skip
        _submit_job(stage, ns, gpu_job("spread", workers=5, gated=False))
        wait_for("spread bound", lambda: bound(api, ns, "spread") == 6, bool, timeout=30)
        spread = racks(api, ns, "spread")
        assert set(spread.values()) == {"rack-a", "rack-b"}, spread
        assert bound(api, ns, "too-wide") == 0, "the gang with the key waits whole"
        assert not _events(stage, ns, "racked", "GangFieldNotKept"), "the plane kept the field"
    finally:
        _stop(stage, ns, pid, jobs=("racked", "too-wide", "spread"))


@pytest.fixture
def priority_classes(stage: Scene, gang_namespace: str) -> Iterator[dict[str, str]]:
    classes = {"low": f"{gang_namespace}-low", "high": f"{gang_namespace}-high"}
    for value, name in zip((100, 1000), classes.values(), strict=True):
        stage.api.request(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            body={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": name}, "value": value},
        )  # fmt: skip
    yield classes
    for name in classes.values():
        with contextlib.suppress(NotFound):
            stage.api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def _preempted(pod: dict[str, Any] | None) -> bool:
    """Gone, being deleted, or marked by kube-scheduler's preemption (DisruptionTarget)."""
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return True
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "DisruptionTarget" and c["status"] == "True" for c in conditions)


def test_a_higher_priority_gang_preempts_a_whole_lower_priority_gang(
    stage: Scene, gang_namespace: str, priority_classes: dict[str, str]
) -> None:
    api, ns = stage.api, gang_namespace
    pid = stage.start_controller(gang_scheduler="native", namespace=ns)
    try:
        # The low gang takes every GPU: one Scheduler and six one-GPU Workers.
        _submit_job(stage, ns, gpu_job("low", workers=6, gated=False),
                    priorityClass=priority_classes["low"])  # fmt: skip
        wait_for("low bound", lambda: bound(api, ns, "low") == 7, bool, timeout=30)
        victims = {p["metadata"]["uid"]: n for n, p in job_pods(api, ns, "low").items()}
        group = api.request(
            "GET", f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups/low"
        )
        assert (group["spec"]["priorityClassName"], group["spec"]["disruptionMode"]) == (
            priority_classes["low"], "PodGroup")  # fmt: skip
        assert group["spec"]["priority"] == 100, "filled in by the Priority admission plugin"

        # The high gang needs two of the six GPUs.
        started = time.monotonic()
        _submit_job(stage, ns, gpu_job("high", workers=2, gated=False),
                    priorityClass=priority_classes["high"])  # fmt: skip
        seen: set[str] = set()
        deadline = started + 60
        while time.monotonic() < deadline:
            current = {p["metadata"]["uid"]: p for p in job_pods(api, ns, "low").values()}
            seen |= {uid for uid in victims if _preempted(current.get(uid))}
            if len(seen) == len(victims) and bound(api, ns, "high") == 3:
                break
            time.sleep(0.05)
        assert sorted(victims[u] for u in seen) == sorted(victims.values()), "the whole gang"
        assert bound(api, ns, "high") == 3
        preempted = _events_of_pods(stage, ns, "Preempted")
        assert len(preempted) >= len(victims), preempted
        # What the low job made again meanwhile waits whole: none of it beside the high gang.
        new_low = [
            p for p in job_pods(api, ns, "low").values() if p["metadata"]["uid"] not in victims
        ]
        assert not any(p["spec"].get("nodeName") for p in new_low if not _preempted(p))
    finally:
        _stop(stage, ns, pid, jobs=("low", "high"))


def test_without_a_priority_class_a_gang_loses_only_the_pods_the_preemptor_needs(
    stage: Scene, gang_namespace: str, priority_classes: dict[str, str]
) -> None:
    """The contrast: a gang without priorityClass gets no disruptionMode (``Pod``, the API
    server's default), so kube-scheduler takes its pods one by one: the two the preemptor
    needs, and under load one more now and then (a retry that came before the first victims
    were gone), never the whole gang. Only the gang's first pods are counted: the low job
    makes its lost pods again meanwhile, and those can be preempted in turn."""
    api, ns = stage.api, gang_namespace
    pid = stage.start_controller(gang_scheduler="native", namespace=ns)
    try:
        _submit_job(stage, ns, gpu_job("low", workers=6, gated=False))
        wait_for("low bound", lambda: bound(api, ns, "low") == 7, bool, timeout=30)
        victims = {p["metadata"]["uid"] for p in job_pods(api, ns, "low").values()}
        _submit_job(stage, ns, gpu_job("high", workers=2, gated=False),
                    priorityClass=priority_classes["high"])  # fmt: skip
        wait_for("high bound", lambda: bound(api, ns, "high") == 3, bool, timeout=30)
        preempted = _event_objects(stage, ns, "involvedObject.kind=Pod,reason=Preempted")
        hit = {e["involvedObject"]["uid"] for e in preempted} & victims
        assert 2 <= len(hit) < len(victims), [e.get("message") for e in preempted]
    finally:
        _stop(stage, ns, pid, jobs=("low", "high"))


def _events_of_pods(stage: Scene, namespace: str, reason: str) -> list[str]:
    return _events_where(stage, namespace, f"involvedObject.kind=Pod,reason={reason}")


@pytest.fixture(scope="module")
def podgroup_crds(stage: Scene) -> None:
    """scheduler-plugins' and Volcano's own PodGroup CRDs, from their Go modules."""
    files = subprocess.run(
        [str(CRD_SCRIPT)], check=True, capture_output=True, text=True
    ).stdout.split()
    assert len(files) == 2, files
    for file in files:
        stage.plane.kubectl("apply", "--server-side", "-f", file)
    for name in ("podgroups.scheduling.x-k8s.io", "podgroups.scheduling.volcano.sh"):
        wait_established(stage.plane, name)


def _pod_group(stage: Scene, path: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = stage.api.request("GET", path)
    except NotFound:
        return None
    return found


def _found(stage: Scene, path: str) -> dict[str, Any]:
    """The object at ``path``; empty while there is none."""
    return _pod_group(stage, path) or {}


def _scheduling(stage: Scene, ns: str, job: str) -> dict[str, str]:
    """Each pod of ``job``: ``Unschedulable`` once kube-scheduler tried it and found no node
    (PodScheduled False, reason Unschedulable), its phase otherwise (as :func:`phases`)."""
    found = {}
    for name, pod in job_pods(stage.api, ns, job).items():
        status = pod.get("status") or {}
        scheduled: dict[str, Any] = next(
            (c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"), {}
        )
        if (scheduled.get("status"), scheduled.get("reason")) == ("False", "Unschedulable"):
            found[name] = "Unschedulable"
        elif status.get("phase", "Pending") == "Pending" and pod["spec"].get("nodeName"):
            found[name] = "Pending(bound)"
        else:
            found[name] = str(status.get("phase", "Pending"))
    return found


def _assert_left_to_their_scheduler(stage: Scene, ns: str) -> None:
    """Nothing binds the pods: kube-scheduler runs, but they name another scheduler.

    kube-scheduler's record that it went past them: a pod created after them, for it, bound. Its
    informer delivers pods in the order they were written and its queue hands out the older ones
    first, so pods it took for its own it would have tried before that one.
    """
    path = f"/api/v1/namespaces/{ns}/pods"
    name = f"after-job-a-{secrets.token_hex(3)}"
    pod = pods.pod(name, containers=[mxjobs.container("c", image="busybox")], grace_seconds=0)
    stage.api.request("POST", path, body=pod)
    try:
        wait_for(
            "kube-scheduler to bind a pod created after the job's",
            lambda: stage.api.request("GET", f"{path}/{name}")["spec"],
            lambda spec: bool(spec.get("nodeName")),
            timeout=30,
        )
    finally:
        stage.api.request("DELETE", f"{path}/{name}", body={"gracePeriodSeconds": 0})
    assert bound(stage.api, ns, "job-a") == 0
    assert set(phases(stage.api, ns, "job-a").values()) == {"Pending"}


# The job of gpu_job(): requests of 100m CPU and 128Mi per pod, GPUs only as limits, which
# training-operator's CalcPGMinResources does not count (a container's requests, when it has
# any, are all it counts).
MIN_RESOURCES = {"cpu": "500m", "memory": "640Mi"}


def test_volcano_pod_group_is_accepted_and_pods_wait_for_volcano(
    stage: Scene, gang_namespace: str, podgroup_crds: None
) -> None:
    api, ns = stage.api, gang_namespace
    path = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/job-a"
    pid = stage.start_controller(gang_scheduler="volcano", namespace=ns)
    try:
        job = gpu_job("job-a", gated=False)
        job["metadata"]["annotations"] = {"team": "vision"}
        job["spec"]["runPolicy"] = {"schedulingPolicy": {"queue": "research"}}
        api.request("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs", body=job)
        group = wait_for(
            "Volcano PodGroup", functools.partial(_found, stage, path), bool, timeout=30
        )
        mxjob = api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs/job-a")
        assert group["spec"] == {
            "minMember": PODS_EACH,
            "queue": "research",
            "minResources": MIN_RESOURCES,
        }
        assert group["metadata"]["annotations"] == {"team": "vision"}
        (owner,) = group["metadata"]["ownerReferences"]
        assert owner["uid"] == mxjob["metadata"]["uid"] and owner["controller"]

        # As training-operator: no pod until Volcano admitted the group. The reconcile that
        # wrote the PodGroup and found it not admitted goes on to the job's Services: once they
        # are there, it has decided about the pods.
        wait_for(
            "the job's Services, made by the reconcile that held its pods back",
            lambda: api.request(
                "GET",
                f"/api/v1/namespaces/{ns}/services",
                query=[("labelSelector", "training.kubeflow.org/job-name=job-a")],
            )["items"],
            lambda found: len(found) == PODS_EACH,
            timeout=30,
        )
        assert not job_pods(api, ns, "job-a")
        api.request(
            "PATCH",
            path,
            body={"status": {"phase": "Inqueue"}},
            content_type="application/merge-patch+json",
        )
        wait_for("pods", lambda: len(job_pods(api, ns, "job-a")) == PODS_EACH, bool, timeout=90)
        for name, pod in job_pods(api, ns, "job-a").items():
            rtype = "scheduler" if "-scheduler-" in name else "worker"
            assert pod["spec"]["schedulerName"] == "volcano"
            assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "job-a"
            assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == rtype
            assert "schedulingGroup" not in pod["spec"]
        _assert_left_to_their_scheduler(stage, ns)
        clear(api, ns, JOBS)
        wait_for("PodGroup gone", lambda: _pod_group(stage, path) is None, bool, timeout=60)
    finally:
        _stop(stage, ns, pid)


def test_scheduler_plugins_pod_group_is_accepted_and_pods_name_its_scheduler(
    stage: Scene, gang_namespace: str, podgroup_crds: None
) -> None:
    api, ns = stage.api, gang_namespace
    path = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups/job-a"
    pid = stage.start_controller(gang_scheduler="scheduler-plugins", namespace=ns)
    try:
        job = gpu_job("job-a", gated=False)
        job["spec"]["runPolicy"] = {
            "schedulingPolicy": {"minAvailable": 3, "scheduleTimeoutSeconds": 120}
        }
        api.request("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs", body=job)
        wait_for("pods", lambda: len(job_pods(api, ns, "job-a")) == PODS_EACH, bool, timeout=30)
        group = _pod_group(stage, path)
        assert group is not None
        # minAvailable 3: the Scheduler and two Workers' requests.
        assert group["spec"] == {
            "minMember": 3,
            "minResources": {"cpu": "300m", "memory": "384Mi"},
            "scheduleTimeoutSeconds": 120,
        }
        for pod in job_pods(api, ns, "job-a").values():
            assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "job-a"
        _assert_left_to_their_scheduler(stage, ns)
        clear(api, ns, JOBS)
        wait_for("PodGroup gone", lambda: _pod_group(stage, path) is None, bool, timeout=60)
    finally:
        _stop(stage, ns, pid)


# What training-operator v1.8.1 (the real one, built from its Go module) writes for the same job,
# beside this controller: in the test's namespace it runs, in a second one ours does.
TRAINING_OPERATOR_FLAG = {
    "volcano": "--gang-scheduler-name=volcano",
    "scheduler-plugins": "--gang-scheduler-name=scheduler-plugins-scheduler",
}
POD_GROUP_PATH = {
    "volcano": "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/job-a",
    "scheduler-plugins": "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups/job-a",
}
GANG_KEYS = (
    "scheduling.k8s.io/group-name",
    "volcano.sh/task-spec",
    "scheduling.x-k8s.io/pod-group",
)


def _has_pods(stage: Scene, ns: str, count: int) -> bool:
    return len(job_pods(stage.api, ns, "job-a")) == count


def _gang_marks(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    return {
        "schedulerName": pod["spec"].get("schedulerName"),
        **{key: marks.get(key) for key in GANG_KEYS},
    }


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler-plugins"])
def test_pod_groups_and_pods_are_the_same_as_training_operators(
    stage: Scene, gang_namespace: str, podgroup_crds: None, scheduler: str
) -> None:
    api, theirs_ns = stage.api, gang_namespace
    ours_ns = f"{theirs_ns}-ours"
    ensure_namespace(api, ours_ns)
    theirs = LocalTrainingOperator(stage.plane)
    process = theirs.start(TRAINING_OPERATOR_FLAG[scheduler], f"--namespace={theirs_ns}")
    pid = stage.start_controller(gang_scheduler=scheduler, namespace=ours_ns)
    namespaces = (theirs_ns, ours_ns)
    try:
        for ns in namespaces:
            job = gpu_job("job-a", gated=False)
            job["metadata"]["annotations"] = {"team": "vision"}
            job["spec"]["runPolicy"] = {
                "schedulingPolicy": {"minAvailable": 4, "scheduleTimeoutSeconds": 90}
            }
            api.request("POST", f"/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs", body=job)
        groups = {
            ns: wait_for(
                f"PodGroup in {ns}",
                functools.partial(_found, stage, POD_GROUP_PATH[scheduler].format(ns=ns)),
                bool,
                timeout=30,
            )
            for ns in namespaces
        }
        if scheduler == "volcano":
            for ns in namespaces:
                api.request(
                    "PATCH",
                    POD_GROUP_PATH[scheduler].format(ns=ns),
                    body={"status": {"phase": "Inqueue"}},
                    content_type="application/merge-patch+json",
                )
        for ns in namespaces:
            wait_for(
                f"pods in {ns}",
                functools.partial(_has_pods, stage, ns, PODS_EACH),
                bool,
                timeout=90,
            )
        their_group, our_group = groups[theirs_ns], groups[ours_ns]
        assert our_group["spec"] == their_group["spec"]
        assert our_group["metadata"].get("annotations") == their_group["metadata"].get(
            "annotations"
        )
        assert our_group["metadata"].get("labels") == their_group["metadata"].get("labels")
        (our_owner,), (their_owner,) = (
            g["metadata"]["ownerReferences"] for g in (our_group, their_group)
        )
        assert {**our_owner, "uid": "-"} == {**their_owner, "uid": "-"}
        their_pods, our_pods = (job_pods(api, ns, "job-a") for ns in namespaces)
        assert sorted(our_pods) == sorted(their_pods)
        for name, pod in our_pods.items():
            assert _gang_marks(pod) == _gang_marks(their_pods[name]), name
        _assert_left_to_their_scheduler(stage, theirs_ns)
        _assert_left_to_their_scheduler(stage, ours_ns)
    finally:
        theirs.stop(process)
        theirs.uninstall_webhook()
        # Ours go while our controller runs: it lifts its pods' tracking finalizer.
        try:
            for ns in namespaces:
                clear(api, ns, JOBS)
        finally:
            stop_process(pid)


def test_many_gangs_competing_for_the_same_gpus_all_succeed_none_holds_part(stage: Scene) -> None:
    """A small version of ``make demo-gang-50`` (:mod:`localkube.scenarios.gang_competition`)."""
    result = run_competition(stage, jobs=9, timeout=120)
    assert result.succeeded == 9, describe(result)
    # Six GPUs, jobs of two to four: two jobs ran side by side at some point.
    assert 4 < result.most_gpus_in_use <= 6
    # Seen bound in part only between two of kube-scheduler's bind calls (the GPUs for the rest
    # free), never while too few GPUs were free for the rest: no job held GPUs while waiting.
    assert not result.held_while_waiting, result.partial_seconds
    assert result.longest_partial < 1.0, result.partial_seconds
