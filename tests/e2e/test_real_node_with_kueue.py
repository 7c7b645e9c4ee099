"""Kueue v0.10.6 queues the operator's MXJobs on the real node, as it queued training-operator's.

Kueue is built from its release source and installed from its own ``config/components``
(``localkube.thirdparty.kueue``); its MXJob integration works on the ``kubeflow.org/v1`` MXJob it
knew from training-operator v1.8.1: it suspends a queued job through its webhook, makes a Workload,
unsuspends the job when it admits the Workload (adding its flavor's node labels and tolerations
to the pod templates), reads ``status.replicaStatuses[].active`` and the ``Succeeded``/``Failed``
conditions, and suspends the job again to evict it. The jobs are single Workers of the examples
image, so they run in seconds in real containers. Kueue runs with ``waitForPodsReady`` on, so
it also reads the job's ``Running`` condition as the Workload's ``PodsReady``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from localkube.thirdparty import kueue
from tests.e2e.kueue_queues import (
    CLUSTER_QUEUE,
    QUOTA_CPU,
    TOLERATION,
    Queued,
    condition,
    mxjob,
    pod_uids,
    priority_classes,
    queue_active,
    queue_objects,
    queued_job,
    state,
    workload_of,
)
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace, require
from tests.helpers.waiting import wait_for

# Fixture set-up and teardown count against a test's time limit: installing or removing a
# third-party component (or the session's node) on a loaded machine can take minutes.
# A component built in the background by make test: first test waits for it (late_builds).
pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.late_builds("third-party-kueue", "late-images-kueue"),
]

NAMESPACE = "kueue-jobs"
VERSION = "v1beta1"


@pytest.fixture(scope="module")
def queued(real_cluster: InstalledCluster) -> Iterator[Queued]:
    require(kueue.missing())
    cluster = real_cluster.cluster
    work = cluster.plane.dir / "kueue"
    try:
        seconds = kueue.install(cluster, work)
        namespace_for(real_cluster, NAMESPACE)
        context = Queued(real_cluster, seconds, NAMESPACE, VERSION)
        context.apply(*queue_objects(NAMESPACE, VERSION))
        wait_for("the ClusterQueue to be active", lambda: queue_active(context), bool, timeout=60)
        yield context
    finally:
        remove_namespace(real_cluster, NAMESPACE, until_gone=True)
        kueue.uninstall(cluster, work)


def test_a_queued_job_waits_suspended_until_kueue_admits_it_and_then_runs(queued: Queued) -> None:
    image = queued.installed.cluster.images.examples.ref
    hold = {"spec": {"stopPolicy": "Hold"}}
    queued.kubectl("patch", f"clusterqueue/{CLUSTER_QUEUE}", "--type=merge", "-p", json.dumps(hold))
    # Until Kueue has seen the hold, it could still admit the job.
    wait_for("the ClusterQueue held", lambda: queue_active(queued), lambda on: not on, timeout=60)
    # Long enough that Kueue sees the job Running before it ends: PodsReady comes from that.
    held = queued_job("held", image, seconds=8)
    queued.kubectl("apply", "-n", NAMESPACE, "-f", "-", input_text=json.dumps(held))
    assert mxjob(queued, "held")["spec"]["runPolicy"]["suspend"] is True  # Kueue's webhook
    # Kueue's record that it looked at the job's Workload and did not admit it (the workload
    # controller or the scheduler: QuotaReserved False, "ClusterQueue ... is inactive"), and the
    # operator's that it saw the job suspended; only then is "still suspended, no pod" a finding.
    wait_for(
        "Kueue to find the Workload inadmissible while the queue is held",
        lambda: workload_of(queued, "held") or {},
        lambda found: any(
            c["type"] == "QuotaReserved"
            and c["status"] == "False"
            and "inactive" in c.get("message", "")
            for c in (found.get("status") or {}).get("conditions") or []
        ),
        timeout=60,
    )
    wait_for(
        "the operator's Suspended condition",
        lambda: mxjob(queued, "held"),
        lambda job: condition(job, "Suspended"),
        timeout=30,
    )
    assert mxjob(queued, "held")["spec"]["runPolicy"]["suspend"] is True
    pods = queued.api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    assert not [p for p in pods if p["metadata"]["name"].startswith("held-")]
    release = {"spec": {"stopPolicy": "None"}}
    queued.kubectl(
        "patch", f"clusterqueue/{CLUSTER_QUEUE}", "--type=merge", "-p", json.dumps(release)
    )
    pods_ready = False  # Kueue's waitForPodsReady reads it from the job's Running condition

    def finished() -> bool:
        nonlocal pods_ready
        pods_ready = pods_ready or condition(workload_of(queued, "held"), "PodsReady")
        return state(queued, "held") in ("Succeeded", "Failed")

    wait_for("the job to finish", finished, bool, timeout=120)
    assert pods_ready, workload_of(queued, "held")
    assert state(queued, "held") == "Succeeded"
    pod = queued.api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/held-worker-0")
    assert pod["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "mxjob-node"
    assert any(
        all(t.get(k) == v for k, v in TOLERATION.items()) for t in pod["spec"]["tolerations"]
    )
    # Kueue marks the Workload Finished in a reconcile of its own, after the job's Succeeded.
    workload = wait_for(
        "the Workload to be Finished",
        lambda: workload_of(queued, "held"),
        lambda found: condition(found, "Finished"),
        timeout=60,
    )
    assert condition(workload, "Admitted"), workload


def test_five_jobs_on_a_quota_for_two_run_two_at_a_time_and_all_succeed(queued: Queued) -> None:
    image = queued.installed.cluster.images.examples.ref
    names = [f"quota-{index}" for index in range(5)]
    for name in names:
        queued.kubectl(
            "apply",
            "-n",
            NAMESPACE,
            "-f",
            "-",
            input_text=json.dumps(queued_job(name, image, seconds=4)),
        )
    most = 0

    def states() -> dict[str, str | None]:
        """Every job's state as of one moment (one LIST, not five reads between which one may
        end and the next be admitted); the most jobs unsuspended and unfinished at once so far."""
        nonlocal most
        listed = queued.api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs")
        jobs = {j["metadata"]["name"]: j for j in listed["items"] if j["metadata"]["name"] in names}
        found = {n: (j.get("status") or {}).get("state") for n, j in jobs.items()}
        unsuspended = [
            n
            for n, j in jobs.items()
            if not j["spec"]["runPolicy"].get("suspend") and found[n] not in ("Succeeded", "Failed")
        ]
        most = max(most, len(unsuspended))
        return found

    wait_for(
        "every job to finish",
        states,
        lambda found: (
            len(found) == len(names) and all(s in ("Succeeded", "Failed") for s in found.values())
        ),
        timeout=240,
        interval=0.3,
    )
    assert {state(queued, n) for n in names} == {"Succeeded"}
    assert most <= 2, most
    assert most == 2, most  # the quota was used


def test_a_higher_priority_job_evicts_a_running_one_which_comes_back_and_succeeds(
    queued: Queued,
) -> None:
    image = queued.installed.cluster.images.examples.ref
    queued.apply(*priority_classes(VERSION))
    # Long enough to still run when the preemption reaches it on a loaded machine.
    low = queued_job("low", image, seconds=30, priority="mxjob-low")
    low["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"][
        "requests"
    ]["cpu"] = QUOTA_CPU
    queued.kubectl("apply", "-n", NAMESPACE, "-f", "-", input_text=json.dumps(low))
    wait_for(
        "the low-priority job to run",
        lambda: state(queued, "low"),
        lambda s: s == "Running",
        timeout=60,
    )
    running = pod_uids(queued, "low")
    assert running, "the low job is Running without a pod"
    high = queued_job("high", image, seconds=2, priority="mxjob-high")
    queued.kubectl("apply", "-n", NAMESPACE, "-f", "-", input_text=json.dumps(high))
    wait_for(
        "the low job suspended by Kueue",
        lambda: mxjob(queued, "low")["spec"]["runPolicy"].get("suspend"),
        bool,
        timeout=60,
    )
    # The pods it ran are gone (by uid: once re-admitted, it gets pods of the same names).
    wait_for(
        "the low job's evicted pods to go",
        lambda: pod_uids(queued, "low"),
        lambda uids: not uids & running,
        timeout=60,
    )
    wait_for(
        "the high job to succeed",
        lambda: state(queued, "high"),
        lambda s: s == "Succeeded",
        timeout=120,
    )
    wait_for(
        "the low job to be re-admitted and succeed",
        lambda: state(queued, "low"),
        lambda s: s in ("Succeeded", "Failed"),
        timeout=180,
    )
    job = mxjob(queued, "low")
    assert job["status"]["state"] == "Succeeded", job["status"]
    assert job["spec"]["runPolicy"]["backoffLimit"] == 0  # an eviction is not a failure
    workload = workload_of(queued, "low")
    assert workload is not None
    kinds = {c["type"] for c in workload["status"]["conditions"]}
    assert "Preempted" in kinds, workload["status"]["conditions"]
