"""Kueue v0.19.2's Topology Aware Scheduling places MXJobs, and a job says why it waits.

The cluster: the real node plus four kwok nodes (two CPUs each), labelled into a Topology of
blocks, racks and hosts: ``block-1`` holds ``rack-a`` (two kwok nodes) and ``rack-b`` (two
kwok nodes), ``block-2`` holds ``rack-c``, the real node. One ResourceFlavor names the Topology
and selects those nodes; one ClusterQueue gives it eight CPUs. kwok renews the nodes' Leases,
so the node lifecycle controller keeps them Ready, and plays their pods Running; a pod placed
on the real node runs in a container.

The jobs ask with Kueue's own annotations on their replica templates; the operator writes them
into the Workload's podSets (shared/kueue_topology.py), Kueue finds a placement, its topology
gate holds each pod until Kueue's ungater gives it a node selector for its domain, and
kube-scheduler binds it there. Every test checks the pods' nodes against the topology and
against Kueue's node selectors: they land where Kueue says. While Kueue cannot admit a job,
the job's ``Pending`` condition carries the Workload's ``QuotaReserved`` reason and message,
``kubectl get mxjobs`` shows the reason and ``kubectl describe`` the Event.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from localkube.base.api import Api, NotFound
from localkube.thirdparty.kwok import LocalKwok, node
from tests.e2e.kueue_current.install import VERSION, queued_in
from tests.e2e.kueue_queues import QUEUE_LABEL, STOPS_ON_SIGTERM, Queued, mxjob, pods_of
from tests.e2e.real_node_fixtures import InstalledCluster
from tests.helpers import mxjobs
from tests.helpers.waiting import wait_for

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.changes_install,
    pytest.mark.late_builds("build-kwok", "third-party-kueue-current", "late-images-kueue-current"),
]

NAMESPACE = "kueue-topology-jobs"
BLOCK, RACK, HOST = "mxjob.test/block", "mxjob.test/rack", "kubernetes.io/hostname"
POOL = "mxjob.test/pool"
TOPOLOGY, FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE = "racks", "racks", "racks-cq", "racks"
INACTIVE_QUEUE, INACTIVE_LOCAL = "inactive-cq", "inactive"
REAL_NODE = "mxjob-node"
KWOK_NODES = {"tas-a-0": "rack-a", "tas-a-1": "rack-a", "tas-b-0": "rack-b", "tas-b-1": "rack-b"}
RACK_WORKERS = {"rack-a": 4, "rack-b": 4}
"""What each kwok rack holds of the tests' Workers (the real node's rack-c holds fewer)."""
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"


@dataclass
class Racks:
    queued: Queued
    kwok: LocalKwok


def _rack_labels(block: str, rack: str) -> dict[str, str]:
    return {POOL: "tas", BLOCK: block, RACK: rack}


def _queue_objects() -> list[dict[str, Any]]:
    api_version = f"kueue.x-k8s.io/{VERSION}"
    quota = [{"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "8Gi"}]
    return [
        {"apiVersion": api_version, "kind": "Topology", "metadata": {"name": TOPOLOGY},
         "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
        {"apiVersion": api_version, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
         "spec": {"nodeLabels": {POOL: "tas"}, "topologyName": TOPOLOGY}},
        {"apiVersion": api_version, "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory"],
             "flavors": [{"name": FLAVOR, "resources": quota}]}]}},
        {"apiVersion": api_version, "kind": "LocalQueue",
         "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE},
         "spec": {"clusterQueue": CLUSTER_QUEUE}},
        # A queue whose flavor does not exist: Kueue keeps it inactive.
        {"apiVersion": api_version, "kind": "ClusterQueue", "metadata": {"name": INACTIVE_QUEUE},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory"],
             "flavors": [{"name": "no-such-flavor", "resources": quota}]}]}},
        {"apiVersion": api_version, "kind": "LocalQueue",
         "metadata": {"name": INACTIVE_LOCAL, "namespace": NAMESPACE},
         "spec": {"clusterQueue": INACTIVE_QUEUE}},
    ]  # fmt: skip


def _label_real_node(api: Api, labels: Mapping[str, str | None]) -> None:
    api.request(
        "PATCH", f"/api/v1/nodes/{REAL_NODE}", body={"metadata": {"labels": labels}},
        content_type="application/merge-patch+json",
    )  # fmt: skip


@pytest.fixture(scope="module")
def racks(real_cluster: InstalledCluster, kueue_current_seconds: float) -> Iterator[Racks]:
    api = real_cluster.api
    kwok = LocalKwok(real_cluster.plane)
    with queued_in(real_cluster, kueue_current_seconds, NAMESPACE) as queued:
        try:
            kwok.start(lease_seconds=40)
            nodes = [
                node(name, cpu="2", labels=_rack_labels("block-1", rack))
                for name, rack in KWOK_NODES.items()
            ]
            kwok.add(api, nodes)
            _label_real_node(api, _rack_labels("block-2", "rack-c"))
            queued.apply(*_queue_objects())
            wait_for(
                "the topology ClusterQueue to be active",
                lambda: queued.api.request(
                    "GET", f"{queued.kueue_api}/clusterqueues/{CLUSTER_QUEUE}"
                ),
                lambda cq: any(
                    c["type"] == "Active" and c["status"] == "True"
                    for c in (cq.get("status") or {}).get("conditions") or []
                ),
                timeout=60,
            )
            yield Racks(queued, kwok)
        finally:
            queued.kubectl("delete", "mxjobs", "--all", "-n", NAMESPACE, "--wait=true",
                           check=False, timeout=120)  # fmt: skip
            for name in KWOK_NODES:
                with contextlib.suppress(NotFound):
                    api.request("DELETE", f"/api/v1/nodes/{name}")
            kwok.stop()
            _label_real_node(api, dict.fromkeys(_rack_labels("", ""), None))
            queued.kubectl("delete", "clusterqueue", CLUSTER_QUEUE, INACTIVE_QUEUE,
                           "--ignore-not-found", check=False)  # fmt: skip
            queued.kubectl("delete", "resourceflavor", FLAVOR, "--ignore-not-found", check=False)
            queued.kubectl("delete", "topology", TOPOLOGY, "--ignore-not-found", check=False)


def racked_job(
    racks: Racks, name: str, workers: int, *, annotations: dict[str, str], queue: str = LOCAL_QUEUE
) -> None:
    """An MXJob whose ``workers`` Workers (900m CPU each: four fill a kwok rack) ask for a
    placement, beside a Scheduler and a Server of 10m that ask for none; created queued."""
    image = racks.queued.installed.cluster.images.examples.ref
    command = ["python", "-c", STOPS_ON_SIGTERM.format(seconds=600)]

    def replica(count: int, cpu: str, asked: dict[str, str]) -> dict[str, Any]:
        resources = {"requests": {"cpu": cpu, "memory": "64Mi"}}
        sole = mxjobs.container(image=image, command=command, resources=resources)
        return mxjobs.replica(count, containers=[sole], annotations=asked)

    replicas = {"Scheduler": replica(1, "10m", {}), "Server": replica(1, "10m", {}),
                "Worker": replica(workers, "900m", annotations)}  # fmt: skip
    job = mxjobs.mxjob(
        name, labels={QUEUE_LABEL: queue}, replicas=replicas, run_policy={"backoffLimit": 0}
    )
    racks.queued.create(job)


def placed(racks: Racks, name: str, workers: int) -> dict[str, str]:
    """Worker pod → node, once every pod of the job (``workers`` and two more) is bound."""
    try:
        bound = wait_for(
            f"the {workers + 2} pods of {name} to be bound",
            lambda: {
                p["metadata"]["name"]: p["spec"].get("nodeName", "")
                for p in pods_of(racks.queued, name)
            },
            lambda found: len(found) == workers + 2 and all(found.values()),
            timeout=120,
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\n{json.dumps(story(racks, name), indent=1)}") from None
    return {pod: node for pod, node in bound.items() if f"{name}-worker-" in pod}


def story(racks: Racks, name: str) -> dict[str, Any]:
    """What a wait that times out shows: the job's and its Workload's conditions."""
    listed = racks.queued.api.request(
        "GET", f"{racks.queued.kueue_api}/namespaces/{NAMESPACE}/workloads"
    )["items"]
    logs = racks.queued.kubectl(
        "logs", "-n", "mxjob-system", "-l", "app.kubernetes.io/component=controller",
        "--tail=300", check=False,
    ).stdout.splitlines()  # fmt: skip
    events = racks.queued.kubectl(
        "get", "events", "-n", NAMESPACE, f"--field-selector=involvedObject.name={name}",
        "-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--no-headers", check=False,
    ).stdout.splitlines()  # fmt: skip
    pods = [(p["metadata"]["name"], p.get("status")) for p in pods_of(racks.queued, name)]
    return {
        "pods": pods[:3],
        "controller": [line for line in logs if name in line or "rror" in line][-8:],
        "events": events[-8:],
        "job": (mxjob(racks.queued, name).get("status") or {}).get("conditions"),
        "workloads": [
            {"podSets": [p.get("topologyRequest") for p in w["spec"]["podSets"]],
             "status": w.get("status")}
            for w in listed
            if w["metadata"]["ownerReferences"][0]["name"] == name
        ],
    }  # fmt: skip


def rack_of(node_name: str) -> str:
    return KWOK_NODES.get(node_name, "rack-c" if node_name == REAL_NODE else "?")


def where_kueue_said(racks: Racks, name: str) -> None:
    """Every pod passed Kueue's topology gate with a node selector for its domain, and is on
    a node that matches it."""
    for pod in pods_of(racks.queued, name):
        spec = pod["spec"]
        assert TOPOLOGY_GATE not in [g["name"] for g in spec.get("schedulingGates") or []]
        selector = spec.get("nodeSelector") or {}
        labels = racks.queued.api.request("GET", f"/api/v1/nodes/{spec['nodeName']}")["metadata"][
            "labels"
        ]
        assert selector, f"{pod['metadata']['name']}: Kueue gave it no node selector"
        assert all(labels.get(k) == v for k, v in selector.items()), (selector, labels)


def delete_job(racks: Racks, name: str) -> None:
    racks.queued.kubectl("delete", "mxjob", name, "-n", NAMESPACE, "--wait=true", timeout=120)
    wait_for(f"{name}'s pods to go", lambda: pods_of(racks.queued, name), lambda p: not p,
             timeout=120)  # fmt: skip


def pending(racks: Racks, name: str) -> dict[str, Any]:
    """The job's Pending condition, once it has one."""
    try:
        return wait_for(
            f"{name}'s Pending condition",
            lambda: next(
                (c for c in (mxjob(racks.queued, name).get("status") or {}).get("conditions")
                 or [] if c["type"] == "Pending"), {}),
            bool,
            timeout=90,
        )  # fmt: skip
    except AssertionError as error:
        raise AssertionError(f"{error}\n{json.dumps(story(racks, name), indent=1)}") from None


def quota_reserved(racks: Racks, name: str) -> dict[str, Any]:
    listed = racks.queued.api.request(
        "GET", f"{racks.queued.kueue_api}/namespaces/{NAMESPACE}/workloads"
    )["items"]
    (workload,) = [w for w in listed if w["metadata"]["ownerReferences"][0]["name"] == name]
    conditions = (workload.get("status") or {}).get("conditions") or []
    return next(c for c in conditions if c["type"] == "QuotaReserved")


def assert_pending_as_kueue_says(racks: Racks, name: str, reason: str | None) -> dict[str, Any]:
    """The job's Pending condition is the Workload's QuotaReserved=False, word for word; the
    Waiting column and an Event say it too."""
    condition = pending(racks, name)
    reserved = wait_for(
        f"{name}'s Workload and job to agree",
        lambda: (quota_reserved(racks, name), pending(racks, name)),
        lambda both: (
            both[0]["reason"] == both[1]["reason"] and both[0]["message"] == both[1]["message"]
        ),
        timeout=60,
    )[0]
    condition = pending(racks, name)
    assert reserved["status"] == "False" and condition["status"] == "True"
    if reason is not None:
        assert condition["reason"] == reason, condition
    table = racks.queued.kubectl("get", "mxjob", name, "-n", NAMESPACE, "--no-headers").stdout
    assert condition["reason"] in table.split()
    described = racks.queued.kubectl("describe", "mxjob", name, "-n", NAMESPACE).stdout
    assert "MXJobPending" in described and condition["reason"] in described
    return condition


def test_a_job_that_requires_one_rack_is_placed_in_one_rack(racks: Racks) -> None:
    racked_job(racks, "one-rack", 3, annotations={REQUIRED: RACK})
    nodes = placed(racks, "one-rack", 3)
    assert len({rack_of(n) for n in nodes.values()}) == 1, nodes
    assert {rack_of(n) for n in nodes.values()} <= set(RACK_WORKERS)
    where_kueue_said(racks, "one-rack")
    wait_for(
        "the job to run",
        lambda: (mxjob(racks.queued, "one-rack").get("status") or {}).get("state"),
        lambda state: state == "Running",
        timeout=60,
    )
    statuses = (mxjob(racks.queued, "one-rack").get("status") or {}).get("conditions") or []
    assert "Pending" not in [c["type"] for c in statuses]
    delete_job(racks, "one-rack")


def test_a_preferred_rack_spreads_over_as_few_racks_as_capacity_allows(racks: Racks) -> None:
    workers = 6  # more than any rack holds, fewer than two do
    racked_job(racks, "preferred", workers, annotations={PREFERRED: RACK})
    nodes = placed(racks, "preferred", workers)
    per_rack = Counter(rack_of(n) for n in nodes.values())
    fewest = next(k for k in range(1, 4) if sum(sorted(RACK_WORKERS.values())[-k:]) >= workers)
    assert len(per_rack) == fewest == 2, per_rack
    assert sorted(per_rack.values()) == [
        workers - max(RACK_WORKERS.values()),
        max(RACK_WORKERS.values()),
    ]
    where_kueue_said(racks, "preferred")
    # 5.42 of the queue's 8 CPUs are taken: a job asking 2.72 more waits for quota, and says so.
    racked_job(racks, "after", 3, annotations={REQUIRED: RACK})
    assert_pending_as_kueue_says(racks, "after", "WaitingForQuota")
    delete_job(racks, "preferred")
    placed(racks, "after", 3)
    wait_for("the waiting job's Pending condition to go", lambda: mxjob(racks.queued, "after"),
             lambda job: "Pending" not in [c["type"] for c in
                                           (job.get("status") or {}).get("conditions") or []],
             timeout=60)  # fmt: skip
    delete_job(racks, "after")


def test_a_job_too_large_for_any_rack_waits_with_kueues_reason(racks: Racks) -> None:
    racked_job(racks, "too-large", 5, annotations={REQUIRED: RACK})
    assert_pending_as_kueue_says(racks, "too-large", "TopologyPlacementFailed")
    assert not pods_of(racks.queued, "too-large")
    assert mxjob(racks.queued, "too-large")["status"]["state"] == "Suspended"
    delete_job(racks, "too-large")


def test_a_job_in_an_inactive_cluster_queue_says_so(racks: Racks) -> None:
    racked_job(racks, "inactive", 1, annotations={}, queue=INACTIVE_LOCAL)
    condition = assert_pending_as_kueue_says(racks, "inactive", None)
    assert INACTIVE_QUEUE in condition["message"] or "inactive" in condition["message"].lower()
    delete_job(racks, "inactive")


def test_pods_no_node_fits_make_the_job_pending_with_the_schedulers_message(
    racks: Racks,
) -> None:
    """Not queued: kube-scheduler's Unschedulable is the job's Pending condition."""
    image = racks.queued.installed.cluster.images.examples.ref
    job = mxjobs.mxjob(
        "too-big", mode=None, replicas={"Worker": 1}, image=image, command=["true"],
        resources={"requests": {"cpu": "100", "memory": "64Mi"}},
    )  # fmt: skip
    racks.queued.create(job)
    condition = pending(racks, "too-big")
    assert condition["reason"] == "Unschedulable"
    (pod,) = pods_of(racks.queued, "too-big")
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["message"].endswith(scheduled["message"]), (condition, scheduled)
    table = racks.queued.kubectl("get", "mxjob", "too-big", "-n", NAMESPACE, "--no-headers").stdout
    assert "Unschedulable" in table.split()
    delete_job(racks, "too-big")
