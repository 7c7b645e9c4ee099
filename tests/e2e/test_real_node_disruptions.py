"""A worker disrupted by the cluster on the real node: ``kubectl drain`` and the scheduler's
preemption.

In both cases the worker's pod is deleted from outside with a grace period: its process gets
SIGTERM (exit 143, retryable under ``restartPolicy: ExitCode``) and the pod says who ended it in
its ``DisruptionTarget`` condition. The operator recreates the replica (a restart, counted
against ``backoffLimit``), names the disruption in the job's ``Restarting`` condition, and the
job Succeeds once the node takes the new pod (after ``uncordon``, or once the preemptor ended).
:class:`~tests.helpers.pod_creations.PodCreations` counts the pods: one per attempt.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from controller.quantity import parse
from tests.e2e.admission_traffic import single_worker_job
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

LOW, HIGH = "mxjob-tests-low", "mxjob-tests-high"


def status_of(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    job = installed.api.request(
        "GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}"
    )
    return dict(job.get("status", {}))


def condition(status: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == ctype), {})


def worker_until_told(installed: InstalledCluster, name: str) -> dict[str, Any]:
    """A job whose worker works until SIGTERM (and, like a training program, stops on it: a PID 1
    without a handler would ignore it and be killed at the end of the grace period), unless it
    starts after :func:`tell_to_finish`, when it exits 0 at once. The first attempt is thus
    always the one disrupted, however slow the node, and the replacement always succeeds."""
    image = installed.cluster.images.examples.ref
    work = ("import os, signal, sys, time; "
            "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143)); "
            "sys.exit(0) if os.environ.get('FINISH') else time.sleep(3600)")  # fmt: skip
    job = single_worker_job(name, image, ["python", "-c", work])
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]
    worker["restartPolicy"] = "ExitCode"
    worker["template"]["spec"]["containers"][0]["env"] = [
        {
            "name": "FINISH",
            "valueFrom": {
                "configMapKeyRef": {"name": f"{name}-plan", "key": "finish", "optional": True}
            },
        }
    ]
    return job


def tell_to_finish(installed: InstalledCluster, namespace: str, name: str) -> None:
    """Containers of job ``name`` started from now on exit 0 (the env is read at their start)."""
    installed.api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-plan"},
        "data": {"finish": "yes"}})  # fmt: skip


def run_until_restarted(
    installed: InstalledCluster, namespace: str, job: dict[str, Any], disrupt: Any
) -> dict[str, Any]:
    """Create ``job``, disrupt its running worker, and return the job's status once restarted."""
    name = job["metadata"]["name"]
    installed.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    wait_for("the worker running", lambda: status_of(installed, namespace, name).get("state"),
             lambda state: state == "Running", timeout=120)  # fmt: skip
    tell_to_finish(installed, namespace, name)
    disrupt()
    return wait_for(
        "the job restarting", lambda: status_of(installed, namespace, name),
        lambda status: status.get("restartCount", 0) >= 1, timeout=120,
    )  # fmt: skip


def finish(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    return wait_for(
        f"MXJob {name} to finish", lambda: status_of(installed, namespace, name),
        lambda status: status.get("state") in ("Succeeded", "Failed"), timeout=180,
    )  # fmt: skip


def rerun_once(
    restarted: dict[str, Any], final: dict[str, Any], creations: PodCreations, *, pod: str,
    disruption: str,
) -> str:  # fmt: skip
    """The Restarting message, once shown to name the disruption, and the job to have run the
    replica twice (one pod per attempt) to success."""
    message = str(condition(restarted, "Restarting").get("message", ""))
    assert disruption in message and "exited with code 143" in message, restarted
    assert final["state"] == "Succeeded" and final["restartCount"] == 1, final
    assert sorted(n for n, _ in creations.seen) == [pod] * 2
    return message


def test_a_drained_worker_is_recreated_and_the_job_succeeds_after_uncordon(
    real_cluster: InstalledCluster,
) -> None:
    node, kubectl = real_cluster.node.settings.node_name, real_cluster.plane.kubectl
    namespace = namespace_for(real_cluster, "disrupt-drain")
    creations = PodCreations(real_cluster.api, namespace)
    started = time.monotonic()
    try:
        restarted = run_until_restarted(
            real_cluster, namespace, worker_until_told(real_cluster, "drained"),
            lambda: kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                            "--pod-selector=training.kubeflow.org/job-name=drained",
                            "--timeout=90s", timeout=100),
        )  # fmt: skip
        pending = wait_for(
            "the new pod unschedulable on the cordoned node",
            lambda: real_cluster.api.request(
                "GET", f"/api/v1/namespaces/{namespace}/pods/drained-worker-0")["status"],
            lambda status: status.get("phase") == "Pending", timeout=60,
        )  # fmt: skip
        kubectl("uncordon", node)
        final = finish(real_cluster, namespace, "drained")
    finally:
        kubectl("uncordon", node, check=False)
        creations.stop()
    message = rerun_once(restarted, final, creations, pod="drained-worker-0",
                         disruption="EvictionByEvictionAPI")  # fmt: skip
    assert pending.get("phase") == "Pending"
    remove_namespace(real_cluster, namespace)
    print(f"\ndrain: worker evicted, recreated (restart 1 of 6: {message!r}), held Pending while "
          f"cordoned, Succeeded after uncordon, {time.monotonic() - started:.1f} s in all, "
          f"2 pods made")  # fmt: skip


def budget_of(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = installed.api.request(
        "GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}"
    )
    return found


def test_a_drain_waits_for_a_gang_behind_its_budget_and_goes_through_once_the_job_ended(
    real_cluster: InstalledCluster,
) -> None:
    """A job that sets ``minAvailable`` gets a PodDisruptionBudget of that size: ``kubectl drain``
    is refused the eviction of its pods (the job runs on, untouched, no restart) until the job
    has ended, and then drains the node."""
    node, kubectl = real_cluster.node.settings.node_name, real_cluster.plane.kubectl
    namespace = namespace_for(real_cluster, "disrupt-budget")
    creations = PodCreations(real_cluster.api, namespace)
    image = real_cluster.cluster.images.examples.ref
    # Long enough to outlast the refused drain below (10 s) with room to spare.
    job = single_worker_job("gang", image, ["python", "-c", "import time; time.sleep(30)"])
    replicas = job["spec"]["mxReplicaSpecs"]
    replicas["Scheduler"] = json.loads(json.dumps(replicas["Worker"]))
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"minAvailable": 2}}
    drain = ("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
             "--pod-selector=training.kubeflow.org/job-name=gang")  # fmt: skip
    started = time.monotonic()
    try:
        kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(job))
        budget = wait_for(
            "the budget to count both pods healthy",
            lambda: budget_of(real_cluster, namespace, "gang"),
            lambda pdb: pdb.get("status", {}).get("currentHealthy") == 2, timeout=120,
        )  # fmt: skip
        refused = kubectl(*drain, "--timeout=10s", check=False, timeout=30)
        during = status_of(real_cluster, namespace, "gang")
        pods = [pod_of(real_cluster, namespace, f"gang-{r}-0") for r in ("scheduler", "worker")]
        final = finish(real_cluster, namespace, "gang")
        drained = kubectl(*drain, "--timeout=60s", check=False, timeout=70)
    finally:
        kubectl("uncordon", node, check=False)
        creations.stop()
    assert budget["spec"]["minAvailable"] == 2 and budget["status"]["disruptionsAllowed"] == 0
    assert refused.returncode != 0, refused.stdout
    assert "disruption budget" in refused.stderr + refused.stdout, refused.stderr
    assert during.get("state") == "Running" and during.get("restartCount", 0) == 0, during
    assert not any(p["metadata"].get("deletionTimestamp") for p in pods), pods
    assert final["state"] == "Succeeded" and final.get("restartCount", 0) == 0, final
    assert drained.returncode == 0, drained.stderr
    assert sorted(n for n, _ in creations.seen) == ["gang-scheduler-0", "gang-worker-0"]
    remove_namespace(real_cluster, namespace)
    print(f"drain behind a gang's budget (minAvailable 2): eviction refused for 10 s, job ran on "
          f"untouched, Succeeded, then the drain went through; {time.monotonic() - started:.1f} s "
          f"in all, 2 pods made, 0 restarts")  # fmt: skip


@pytest.fixture
def priority_classes(real_cluster: InstalledCluster) -> Iterator[None]:
    for name, value in ((LOW, 100), (HIGH, 1_000_000)):
        real_cluster.plane.kubectl("apply", "-f", "-", input_text=json.dumps({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value}))  # fmt: skip
    yield
    real_cluster.plane.kubectl("delete", "priorityclass", LOW, HIGH, "--ignore-not-found")


def free_millicores(installed: InstalledCluster) -> int:
    """The node's allocatable CPU less what its pods that have not ended request."""
    node_name = installed.node.settings.node_name
    node = installed.api.request("GET", f"/api/v1/nodes/{node_name}")
    pods = installed.api.request(
        "GET", "/api/v1/pods", query=[("fieldSelector", f"spec.nodeName={node_name}")]
    )["items"]
    requested = sum(
        parse(c.get("resources", {}).get("requests", {}).get("cpu", "0")).value
        for p in pods if p["status"].get("phase") not in ("Succeeded", "Failed")
        for c in p["spec"]["containers"]
    )  # fmt: skip
    return int((parse(node["status"]["allocatable"]["cpu"]).value - requested) * 1000)


@pytest.mark.usefixtures("priority_classes")
def test_a_preempted_worker_is_recreated_and_the_job_succeeds_after_the_preemptor(
    real_cluster: InstalledCluster,
) -> None:
    namespace = namespace_for(real_cluster, "disrupt-preempt")
    creations = PodCreations(real_cluster.api, namespace)
    share = f"{free_millicores(real_cluster) * 6 // 10}m"  # two such pods do not fit together
    job = worker_until_told(real_cluster, "preempted")
    template = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    template["priorityClassName"] = LOW
    template["containers"][0]["resources"]["requests"]["cpu"] = share
    preemptor = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "preemptor"},
        "spec": {"priorityClassName": HIGH, "restartPolicy": "Never", "containers": [{
            "name": "busy", "image": real_cluster.cluster.images.examples.ref,
            "command": ["python", "-c", "import time; time.sleep(10)"],
            "resources": {"requests": {"cpu": share, "memory": "32Mi"}}}]},
    }  # fmt: skip
    started = time.monotonic()
    try:
        restarted = run_until_restarted(
            real_cluster, namespace, job,
            lambda: real_cluster.plane.kubectl("create", "-n", namespace, "-f", "-",
                                               input_text=json.dumps(preemptor)),
        )  # fmt: skip
        final = finish(real_cluster, namespace, "preempted")
    finally:
        creations.stop()
    preemptor_made = ("preemptor", next(u for n, u in creations.seen if n == "preemptor"))
    creations.seen.discard(preemptor_made)
    message = rerun_once(restarted, final, creations, pod="preempted-worker-0",
                         disruption="PreemptionByScheduler")  # fmt: skip
    remove_namespace(real_cluster, namespace)
    print(f"preemption: worker ({share} CPU, priority 100) preempted by a pod of priority "
          f"1000000, recreated (restart 1: {message!r}), Succeeded after the preemptor, "
          f"{time.monotonic() - started:.1f} s in all")  # fmt: skip


def pod_of(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = installed.api.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods/{name}"
    )
    return found


def node_ready(installed: InstalledCluster) -> str:
    node = installed.api.request("GET", f"/api/v1/nodes/{installed.node.settings.node_name}")
    return str(next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"))


SIMULATED_NODE = "mxjob-tests-simulated"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
def another_ready_node(real_cluster: InstalledCluster) -> Iterator[str]:
    """A second node that stays Ready while the test runs: a Node object whose Lease a thread
    renews every 2 s, as a kubelet (or kwok) does, tainted so that nothing is scheduled on it.

    Why: when every node of a cluster is NotReady, the node lifecycle controller assumes an
    outage of its own rather than of the nodes ("master disruption mode") and removes the
    NoExecute taints it added, so nothing is evicted. A one-node cluster is always in that case
    once its node is lost; a real cluster has other nodes, and so has this one with this node.
    """
    api, now = real_cluster.api, _now()
    api.request(
        "POST",
        "/api/v1/nodes",
        body={
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": SIMULATED_NODE},
            "spec": {"taints": [{"key": "mxjob-tests/simulated", "effect": "NoSchedule"}]},
        },
    )
    api.request(
        "PATCH",
        f"/api/v1/nodes/{SIMULATED_NODE}/status",
        content_type=("application/merge-patch+json"),
        body={
            "status": {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "lastHeartbeatTime": now[:19] + "Z",
                        "lastTransitionTime": now[:19] + "Z",
                    }
                ]
            }
        },
    )
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{SIMULATED_NODE}"
    api.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body={
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": SIMULATED_NODE},
        "spec": {"holderIdentity": SIMULATED_NODE, "leaseDurationSeconds": 40,
                 "renewTime": now}})  # fmt: skip
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(2):
            api.request("PATCH", lease_path, content_type="application/merge-patch+json",
                        body={"spec": {"renewTime": _now()}})  # fmt: skip

    renewer = threading.Thread(target=renew, daemon=True)
    renewer.start()
    try:
        yield SIMULATED_NODE
    finally:
        stop.set()
        renewer.join(timeout=10)
        real_cluster.plane.kubectl("delete", "node", SIMULATED_NODE, "--ignore-not-found")
        real_cluster.plane.kubectl(
            "delete", "lease", "-n", "kube-node-lease", SIMULATED_NODE, "--ignore-not-found"
        )


@pytest.mark.usefixtures("another_ready_node")
def test_a_lost_node_evicts_the_worker_by_taint_and_the_job_reruns_it_once_back(
    real_cluster: InstalledCluster,
) -> None:
    """The kubelet stopped past the node grace period: the node goes NotReady, taint-eviction
    deletes the worker (it tolerates ``unreachable`` for 5 s only), which stays Terminating
    while no kubelet confirms its end. The kubelet back, the container gets SIGTERM, its end is
    counted, and the replica is made again."""
    namespace = namespace_for(real_cluster, "disrupt-lost")
    creations = PodCreations(real_cluster.api, namespace)
    job = worker_until_told(real_cluster, "lost")
    job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"] = [
        {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 5} for taint in ("unreachable", "not-ready")
    ]  # fmt: skip
    seen: dict[str, float] = {}
    started = time.monotonic()

    def evicted_while_not_ready() -> bool:
        if "not_ready" not in seen and node_ready(real_cluster) != "True":
            seen["not_ready"] = time.monotonic() - started
        deleted = bool(pod_of(real_cluster, namespace, "lost-worker-0")["metadata"].get(
            "deletionTimestamp"))  # fmt: skip
        if deleted and "evicted" not in seen:
            seen["evicted"] = time.monotonic() - started
        return deleted

    try:
        restarted = run_until_restarted(
            real_cluster, namespace, job,
            lambda: real_cluster.node.restart("kubelet", down_until=evicted_while_not_ready),
        )  # fmt: skip
        final = finish(real_cluster, namespace, "lost")
    finally:
        creations.stop()
    assert "not_ready" in seen and "evicted" in seen, seen
    message = rerun_once(restarted, final, creations, pod="lost-worker-0",
                         disruption="DeletionByTaintManager")  # fmt: skip
    remove_namespace(real_cluster, namespace)
    print(f"node lost: NotReady {seen['not_ready']:.1f} s and the worker deleted by taint "
          f"{seen['evicted']:.1f} s after the create; kubelet back, {message!r}; Succeeded, "
          f"{time.monotonic() - started:.1f} s in all, 2 pods made")  # fmt: skip
