"""The CPU training example runs real MXNet ``dist_sync`` in containers on the real node.

``examples/v1/train/mx_job_dist_cpu.yaml`` as written (its image is the one ``make images``
builds from ``examples/Dockerfile`` under the same name), with only its CPU requests scaled to
fit this machine's two cores. Each replica is a container with its own address on the pod
bridge; the workers find the scheduler through its headless Service and CoreDNS; the logs are
read with ``kubectl logs``, which kube-apiserver fetches from the real kubelet.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from localkube.api import ensure_namespace
from localkube.demo import load_job
from tests.e2e.real_node_fixtures import InstalledCluster
from tests.e2e.test_install_running import wait_for
from tests.e2e.test_real_node_install import TRAIN_EXAMPLE

JOB = "dist-train-cpu"
EPOCH = re.compile(r"^epoch (\d+)/(\d+) loss ([0-9.]+)", re.MULTILINE)
DIGEST = re.compile(r"^final parameters sha256 ([0-9a-f]{64})$", re.MULTILINE)
CPU_REQUESTS = {"Scheduler": "100m", "Server": "100m", "Worker": "500m"}
"""The example asks for 2.5 CPUs in all (sized for a cluster); the real node has 2."""


def fitted(job: dict[str, Any]) -> dict[str, Any]:
    for replica_type, replica in job["spec"]["mxReplicaSpecs"].items():
        for container in replica["template"]["spec"]["containers"]:
            container["resources"]["requests"]["cpu"] = CPU_REQUESTS[replica_type]
    return job


def test_the_cpu_train_example_succeeds_in_containers_with_falling_loss_and_equal_parameters(
    real_cluster: InstalledCluster,
) -> None:
    namespace = "train"
    ensure_namespace(real_cluster.api, namespace)
    job = fitted(load_job(TRAIN_EXAMPLE))
    image = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]
    assert real_cluster.cluster.images.examples.ref == f"docker.io/{image}"
    kubectl = real_cluster.plane.kubectl
    started = time.monotonic()
    kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(job))

    def state() -> str:
        path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{JOB}"
        return str(real_cluster.api.request("GET", path).get("status", {}).get("state"))

    try:
        final = wait_for("the job to finish", state, lambda s: s in ("Succeeded", "Failed"),
                         timeout=300)  # fmt: skip
    except AssertionError as error:
        described = kubectl("describe", "pods", "-n", namespace, check=False).stdout
        raise AssertionError(f"{error}\n{described[-4000:]}") from None
    seconds = time.monotonic() - started
    logs = {
        index: kubectl("logs", "-n", namespace, f"{JOB}-worker-{index}").stdout for index in (0, 1)
    }
    assert final == "Succeeded", logs
    epochs = 5
    digests = []
    for text in logs.values():
        losses = [float(loss) for _, _, loss in EPOCH.findall(text)]
        assert len(losses) == epochs, text
        assert all(later < earlier for earlier, later in itertools.pairwise(losses)), losses
        found = DIGEST.search(text)
        assert found, text
        digests.append(found.group(1))
    assert digests[0] == digests[1], digests
    pods = real_cluster.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    addresses = {p["metadata"]["name"]: p["status"].get("podIP") for p in pods}
    assert len(set(addresses.values())) == 4, addresses  # four containers, four addresses
    for pod in pods:
        status = pod["status"]["containerStatuses"][0]
        assert status["containerID"].startswith("containerd://"), status
        assert status["state"]["terminated"]["exitCode"] == 0, status
    print(f"MXNet dist_sync in containers: Succeeded in {seconds:.1f} s")
