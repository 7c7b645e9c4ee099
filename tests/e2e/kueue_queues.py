"""What the Kueue tests on the real node share: the queue they make, their jobs and reads.

Both Kueue lines get the same ResourceFlavor (the real node's hostname label and a toleration,
so the tests see both reach the pods), ClusterQueue (CPU for two jobs, preemption of lower
priorities) and LocalQueue; only the API version differs (``v1beta1`` for v0.10, ``v1beta2``,
the storage version, for the newest release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localkube.base.api import Api
from tests.e2e.real_node_fixtures import InstalledCluster
from tests.helpers import mxjobs

FLAVOR, CLUSTER_QUEUE, LOCAL_QUEUE = "mxjob-flavor", "mxjob-cq", "mxjob-lq"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
TOLERATION = {"key": "example.com/queued", "operator": "Exists", "effect": "NoSchedule"}
JOB_CPU = "100m"
QUOTA_CPU = "200m"
"""Two jobs at a time."""
QUOTA = [{"name": "cpu", "nominalQuota": QUOTA_CPU}, {"name": "memory", "nominalQuota": "2Gi"}]


@dataclass
class Queued:
    installed: InstalledCluster
    seconds_to_ready: float
    namespace: str
    version: str
    """Kueue's API version the tests read and write (``v1beta1`` or ``v1beta2``)."""

    @property
    def api(self) -> Api:
        return self.installed.api

    @property
    def kueue_api(self) -> str:
        return f"/apis/kueue.x-k8s.io/{self.version}"

    def kubectl(self, *args: str, **kwargs: Any) -> Any:
        return self.installed.plane.kubectl(*args, **kwargs)

    def apply(self, *objects: dict[str, Any]) -> None:
        items = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
        self.kubectl("apply", "-f", "-", input_text=json.dumps(items))

    def create(self, job: dict[str, Any]) -> None:
        self.kubectl("apply", "-n", self.namespace, "-f", "-", input_text=json.dumps(job))


def queue_objects(namespace: str, version: str) -> list[dict[str, Any]]:
    api_version = f"kueue.x-k8s.io/{version}"
    return [
        {"apiVersion": api_version, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
         "spec": {"nodeLabels": {"kubernetes.io/hostname": "mxjob-node"},
                  "tolerations": [TOLERATION]}},
        {"apiVersion": api_version, "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE},
         "spec": {"namespaceSelector": {},
                  "preemption": {"withinClusterQueue": "LowerPriority"},
                  "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                      {"name": FLAVOR, "resources": QUOTA}]}]}},
        {"apiVersion": api_version, "kind": "LocalQueue",
         "metadata": {"name": LOCAL_QUEUE, "namespace": namespace},
         "spec": {"clusterQueue": CLUSTER_QUEUE}},
    ]  # fmt: skip


def priority_classes(version: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "WorkloadPriorityClass",
         "metadata": {"name": name}, "value": value, "description": name}
        for name, value in (("mxjob-low", 10), ("mxjob-high", 1000))
    ]  # fmt: skip


STOPS_ON_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))\n"
    "time.sleep({seconds})"
)
"""A queued job's work: sleep, and stop at once on SIGTERM, as a training script should when its
job is evicted. Without the handler the container's first process (PID 1, which ignores a signal
it does not handle) outlives an eviction until its sleep ends, its pod holding the node's CPU and
its name: the job preempting it then waits for a node with room beyond Kueue's
``waitForPodsReady`` (20 s here), is evicted in turn, and the preempted job is re-admitted."""


def queued_job(
    name: str,
    image: str,
    *,
    seconds: float = 2,
    priority: str | None = None,
    cpu: str = JOB_CPU,
) -> dict[str, Any]:
    """One Worker working ``seconds`` in the LocalQueue (at ``priority``), never retried."""
    labels = {QUEUE_LABEL: LOCAL_QUEUE}
    if priority:
        labels["kueue.x-k8s.io/priority-class"] = priority
    return mxjobs.mxjob(
        name,
        mode=None,
        replicas={"Worker": 1},
        image=image,
        command=["python", "-c", STOPS_ON_SIGTERM.format(seconds=seconds)],
        resources={"requests": {"cpu": cpu, "memory": "64Mi"}},
        labels=labels,
        run_policy={"backoffLimit": 0},
    )


def mxjob(queued: Queued, name: str) -> dict[str, Any]:
    path = f"/apis/kubeflow.org/v1/namespaces/{queued.namespace}/mxjobs/{name}"
    return dict(queued.api.request("GET", path))


def workloads_of(queued: Queued, name: str) -> list[dict[str, Any]]:
    """The Workloads an MXJob of that name controls."""
    path = f"{queued.kueue_api}/namespaces/{queued.namespace}/workloads"
    return [
        w
        for w in queued.api.request("GET", path)["items"]
        if any(
            o["kind"] == "MXJob" and o["name"] == name
            for o in w["metadata"].get("ownerReferences") or []
        )
    ]


def workload_of(queued: Queued, name: str) -> dict[str, Any] | None:
    found = workloads_of(queued, name)
    return dict(found[0]) if found else None


def condition(obj: dict[str, Any] | None, kind: str) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


def queue_active(queued: Queued) -> bool:
    """Kueue's own word that its cache has the ClusterQueue as it now is: the ``Active``
    condition is computed from the cache (a held queue is inactive, reason ``Stopped``)."""
    found = queued.api.request("GET", f"{queued.kueue_api}/clusterqueues/{CLUSTER_QUEUE}")
    return condition(found, "Active")


def state(queued: Queued, name: str) -> str:
    return str((mxjob(queued, name).get("status") or {}).get("state"))


def pods_of(queued: Queued, name: str) -> list[dict[str, Any]]:
    items = queued.api.request("GET", f"/api/v1/namespaces/{queued.namespace}/pods")["items"]
    return [p for p in items if p["metadata"]["name"].startswith(f"{name}-")]


def pod_uids(queued: Queued, name: str) -> set[str]:
    """The uids of a job's pods: a re-admitted job gets pods of the same names, not uids."""
    return {p["metadata"]["uid"] for p in pods_of(queued, name)}
