"""Pods with more containers than ``mxnet`` on the real node: the replica ends with ``mxnet``.

Three shapes users run: a regular sidecar that never ends by itself (a service-mesh proxy), a
native sidecar (an init container with ``restartPolicy: Always``), and a sidecar that fails
after ``mxnet`` succeeded (a metrics collector that could not report). In each the job ends
when ``mxnet`` ends, with ``mxnet``'s exit code, and no pod is made twice; a pod whose sidecar
still runs is cleaned up after its grace period (``cleanPodPolicy: Running``, the default).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.failing_jobs import condition, mxjob
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.helpers import mxjobs
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(600)

NAMESPACE = "sidecars"
FOREVER = ["python", "-c", "import time; time.sleep(3600)"]
"""A sidecar that never ends by itself (and, as PID 1 without a handler, ignores SIGTERM)."""


def job_with(installed: InstalledCluster, name: str, *, exit_code: int) -> dict[str, Any]:
    """One worker whose ``mxnet`` works 3 s and exits ``exit_code``, its pod's grace 5 s."""
    work = f"import sys, time; time.sleep(3); sys.exit({exit_code})"
    return mxjobs.mxjob(
        name,
        mode=None,
        replicas={"Worker": 1},
        image=installed.cluster.images.examples.ref,
        command=["python", "-c", work],
        resources={"requests": {"cpu": "10m", "memory": "32Mi"}},
        restart_policy="Never",
        grace_seconds=5,
    )


def container(installed: InstalledCluster, name: str, command: list[str]) -> dict[str, Any]:
    return {
        "name": name, "image": installed.cluster.images.examples.ref, "command": command,
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }  # fmt: skip


def pod_names(installed: InstalledCluster) -> set[str]:
    listed = installed.api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
    return {p["metadata"]["name"] for p in listed}


def test_jobs_end_with_mxnet_whatever_their_sidecars_do(real_cluster: InstalledCluster) -> None:
    api = real_cluster.api
    namespace_for(real_cluster, NAMESPACE)
    creations = PodCreations(api, NAMESPACE)
    proxied = job_with(real_cluster, "proxied", exit_code=0)
    spec = proxied["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["containers"].append(container(real_cluster, "proxy", FOREVER))
    native = job_with(real_cluster, "native", exit_code=3)
    spec = native["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["initContainers"] = [
        {**container(real_cluster, "mesh", FOREVER), "restartPolicy": "Always"}
    ]
    spec["containers"].append(container(real_cluster, "proxy", FOREVER))
    collected = job_with(real_cluster, "collected", exit_code=0)
    spec = collected["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["containers"].append(
        container(
            real_cluster,
            "collector",
            ["python", "-c", "import sys, time; time.sleep(5); sys.exit(1)"],
        )
    )
    names = ("proxied", "native", "collected")
    try:
        for job in (proxied, native, collected):
            real_cluster.plane.kubectl(
                "create", "-n", NAMESPACE, "-f", "-", input_text=json.dumps(job)
            )
        ended = wait_for(
            "every job to end",
            lambda: {n: mxjob(api, NAMESPACE, n) for n in names},
            lambda jobs: all(j.get("status", {}).get("state") in ("Succeeded", "Failed")
                             for j in jobs.values()),
            timeout=180,
        )  # fmt: skip
        wait_for(
            "the pods whose sidecars run on to be cleaned up after their grace",
            lambda: pod_names(real_cluster),
            lambda left: not {"proxied-worker-0", "native-worker-0"} & left,
            timeout=90,
        )  # fmt: skip
    finally:
        creations.stop()
    states = {n: j["status"]["state"] for n, j in ended.items()}
    assert states == {"proxied": "Succeeded", "native": "Failed", "collected": "Succeeded"}
    failed = condition(ended["native"], "Failed")
    assert "exited with code 3" in failed["message"], failed
    for name in names:
        assert ended[name]["status"]["replicaStatuses"]["Worker"]["active"] == 0, ended[name]
    assert sorted(n for n, _ in creations.seen) == sorted(f"{n}-worker-0" for n in names)
    remove_namespace(real_cluster, NAMESPACE)
