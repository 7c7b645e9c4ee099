"""A real MXNet job disrupted by the cluster on the real node: ``kubectl drain``, the
scheduler's preemption, a lost node.

Each test runs the resumable train example (real MXNet 1.9.1 ``dist_sync`` with a checkpoint
volume: tests/e2e/recovery_jobs.py) and has the cluster end worker 1's pod once worker 0 saved
a checkpoint. The pod says who ended it in its ``DisruptionTarget`` condition; ps-lite cannot
take a lone replacement back, so the operator restarts the job as a whole (attempt 1), without
counting the restart against ``backoffLimit`` (``disruptionPolicy: Ignore``), and the workers
resume after the checkpoint: the job must Succeed with its accuracy and every pod made twice.
A job behind a PodDisruptionBudget is not disrupted at all.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from controller.integrations.gang.quantity import parse
from controller.job.observed import ATTEMPT_ANNOTATION
from tests.e2e.admission_traffic import single_worker_job
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.e2e.recovery_jobs import (
    DRAINED,
    assert_restarted_once_and_resumed,
    cause,
    checkpoint_claim,
    record_resumed,
    resumable_job,
    run_disrupted,
    status_of,
)
from tests.helpers.figures import Figures
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

LOW, HIGH = "mxjob-tests-low", "mxjob-tests-high"


def finish(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    return wait_for(
        f"MXJob {name} to finish", lambda: status_of(installed, namespace, name),
        lambda status: status.get("state") in ("Succeeded", "Failed"), timeout=180,
    )  # fmt: skip


def budget_of(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = installed.api.request(
        "GET", f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}"
    )
    return found


def test_a_drain_waits_for_a_gang_behind_its_budget_and_goes_through_once_the_job_ended(
    real_cluster: InstalledCluster, figures: Figures
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
        ended = time.monotonic()
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
    figures.record(
        table="node", case="`kubectl drain` while a gang (`minAvailable` 2) runs",
        refused_for_s=10, succeeded_after_s=round(ended - started, 1), drained_after_end=True,
        pods_made=2, restarts=0,
    )  # fmt: skip


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


WORKER_1 = "training.kubeflow.org/replica-type=worker,training.kubeflow.org/replica-index=1"


def test_a_drained_workers_job_restarts_as_a_whole_and_resumes_after_uncordon(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    node, kubectl = real_cluster.node.settings.node_name, real_cluster.plane.kubectl
    namespace = namespace_for(real_cluster, "disrupt-drain")
    job = resumable_job(real_cluster, "drained")
    drain = ("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
             f"--pod-selector=training.kubeflow.org/job-name=drained,{WORKER_1}",
             "--timeout=90s")  # fmt: skip
    held: dict[str, Any] = {}

    def drain_then_uncordon() -> None:
        kubectl(*drain, timeout=100)
        held.update(wait_for(
            "the new attempt's pods Pending on the cordoned node",
            lambda: real_cluster.api.request("GET", f"/api/v1/namespaces/{namespace}/pods",
                query=[("labelSelector", "training.kubeflow.org/job-name=drained")])["items"],
            lambda pods: len(pods) == 4 and all(
                p["metadata"].get("annotations", {}).get(ATTEMPT_ANNOTATION) == "1"
                and p["status"].get("phase") == "Pending" for p in pods), timeout=120,
        )[0])  # fmt: skip
        kubectl("uncordon", node)

    try:
        with checkpoint_claim(real_cluster, namespace) as checkpoints:
            run = run_disrupted(real_cluster, namespace, job, checkpoints, drain_then_uncordon)
    finally:
        kubectl("uncordon", node, check=False)
    result = assert_restarted_once_and_resumed(
        run, replica="Worker-1", disruption="EvictionByEvictionAPI"
    )
    assert held, "the new attempt was made before the drained pod's attempt had ended"
    remove_namespace(real_cluster, namespace)
    record_resumed(figures, DRAINED, run, result)


@pytest.mark.usefixtures("priority_classes")
def test_a_preempted_workers_job_restarts_as_a_whole_and_resumes_after_the_preemptor(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    """The workers run at priority 100, the scheduler and the server at 1000000 (never
    victims): a pod of priority 1000000 that fits only in place of one worker preempts it."""
    namespace = namespace_for(real_cluster, "disrupt-preempt")
    job = resumable_job(real_cluster, "preempted")
    replicas = job["spec"]["mxReplicaSpecs"]
    for rtype, priority in (("Scheduler", HIGH), ("Server", HIGH), ("Worker", LOW)):
        replicas[rtype]["template"]["spec"]["priorityClassName"] = priority
    worker_cpu = parse(
        replicas["Worker"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    ).value
    made: list[str] = []

    def preempt() -> None:
        share = f"{free_millicores(real_cluster) + int(worker_cpu * 1000) // 2}m"
        made.append(share)
        real_cluster.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "preemptor"},
            "spec": {"priorityClassName": HIGH, "restartPolicy": "Never", "containers": [{
                "name": "busy", "image": real_cluster.cluster.images.examples.ref,
                "command": ["python", "-c", "import time; time.sleep(15)"],
                "resources": {"requests": {"cpu": share, "memory": "32Mi"}}}]}}))  # fmt: skip

    with checkpoint_claim(real_cluster, namespace) as checkpoints:
        run = run_disrupted(real_cluster, namespace, job, checkpoints, preempt)
    run.made.remove("preemptor")
    entry = cause(run)
    result = assert_restarted_once_and_resumed(
        run, replica=f"Worker-{entry['index']}", disruption="PreemptionByScheduler"
    )
    remove_namespace(real_cluster, namespace)
    case = "a worker preempted by a pod of priority 1000000 (workers at 100)"
    record_resumed(figures, case, run, result, preemptor_cpu=made[0])


@pytest.mark.usefixtures("another_ready_node")
def test_a_lost_nodes_evicted_worker_restarts_the_job_which_resumes_once_it_is_back(
    real_cluster: InstalledCluster, figures: Figures
) -> None:
    """The kubelet stopped past the node grace period: the node goes NotReady and taint
    eviction deletes worker 1 (it tolerates ``unreachable`` for 5 s only), which stays
    Terminating while no kubelet confirms its end. The kubelet back, its end is counted, the job
    restarts as a whole and resumes."""
    namespace = namespace_for(real_cluster, "disrupt-lost")
    # Training outlasts the node's loss (20 s of grace, 5 s of toleration): its containers run
    # on while the kubelet is away.
    job = resumable_job(real_cluster, "lost", epoch_pause=10)
    worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["tolerations"] = [
        {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 5} for taint in ("unreachable", "not-ready")
    ]  # fmt: skip
    seen: dict[str, float] = {}
    started = time.monotonic()

    def evicted_while_not_ready() -> bool:
        if "not_ready" not in seen and node_ready(real_cluster) != "True":
            seen["not_ready"] = time.monotonic() - started
        pods = real_cluster.api.request("GET", f"/api/v1/namespaces/{namespace}/pods",
            query=[("labelSelector", "training.kubeflow.org/job-name=lost,"
                    "training.kubeflow.org/replica-type=worker")])["items"]  # fmt: skip
        deleted = any(p["metadata"].get("deletionTimestamp") for p in pods)
        if deleted and "evicted" not in seen:
            seen["evicted"] = time.monotonic() - started
        return deleted

    def lose_the_node() -> None:
        real_cluster.node.restart("kubelet", down_until=evicted_while_not_ready)

    with checkpoint_claim(real_cluster, namespace) as checkpoints:
        run = run_disrupted(real_cluster, namespace, job, checkpoints, lose_the_node)
    assert "not_ready" in seen and "evicted" in seen, seen
    entry = cause(run)
    result = assert_restarted_once_and_resumed(
        run, replica=f"Worker-{entry['index']}", disruption="DeletionByTaintManager"
    )
    remove_namespace(real_cluster, namespace)
    case = "the node lost: its kubelet stopped until worker 1 was evicted by taint"
    record_resumed(figures, case, run, result, not_ready_after_s=round(seen["not_ready"], 1),
                   evicted_after_s=round(seen["evicted"], 1))  # fmt: skip
