"""``make demo DEMO_ARGS=--real-node`` runs the CPU training example: real MXNet ``dist_sync``
in containers on the real node.

The demo's own job step (``localkube.scenarios.node_demo.run_job``) runs on the session's node:
``examples/v1/train/mx_job_dist_cpu.yaml`` as written (its image is the one ``make images``
builds from ``examples/Dockerfile`` under the same name), its requests scaled to what the node
has free. Each replica is a container with its own address on the pod bridge; the workers find
the scheduler through its headless Service and CoreDNS; the demo shows the pods' output from the
kubelet's container logs while they run, and ``kubectl logs`` (which kube-apiserver fetches from
the real kubelet) at the end.
"""

from __future__ import annotations

import io
import itertools
import re
from typing import Any

import pytest

from localkube.scenarios.jobwatch import DEFAULT_JOB, Progress
from localkube.scenarios.node_demo import run_job
from tests.e2e.real_node_fixtures import InstalledCluster
from tests.helpers.waiting import wait_for

# The job's own wait is 300 s, and its diagnosis is printed only if it ends first.
pytestmark = pytest.mark.timeout(600)

JOB = "dist-train-cpu"
EPOCH = re.compile(r"^epoch (\d+)/(\d+) loss ([0-9.]+)", re.MULTILINE)
DIGEST = re.compile(r"^final parameters sha256 ([0-9a-f]{64})$", re.MULTILINE)


def test_the_demo_runs_the_cpu_train_example_in_containers_to_equal_parameters(
    real_cluster: InstalledCluster,
) -> None:
    namespace = "train"
    out = io.StringIO()
    status, _ = run_job(
        real_cluster.cluster,
        DEFAULT_JOB,
        namespace=namespace,
        timeout=300,
        progress=Progress(out),
        out=out,
    )
    shown = out.getvalue()
    kubectl = real_cluster.plane.kubectl
    if status.get("state") != "Succeeded":
        described = kubectl("describe", "pods", "-n", namespace, check=False).stdout
        raise AssertionError(f"{shown}\n{described[-4000:]}")
    # While it ran, the demo showed each worker's epochs from the kubelet's container logs.
    for index in (0, 1):
        assert re.search(rf"worker-{index} \| epoch 5/5 loss", shown), shown
    assert f"$ kubectl logs -n {namespace} {JOB}-worker-1 --tail=5" in shown
    assert re.search(rf"^{JOB}\s.*\bSucceeded\b", shown, re.MULTILINE), shown  # get mxjobs
    # Worker 0 reported its progress (examples/scripts/train_dist.py, sdk/mxjob_progress) to the
    # controller's endpoint: the demo's live line showed it, kubectl's PROGRESS column ends at
    # 100, and status.trainerStatus keeps the last epoch's metrics.
    assert re.search(r"progress  \| 100% .*epoch 5/5 loss=", shown), shown
    assert re.search(rf"^{JOB}\s+Succeeded\s+MXTrain\s+0\s+100\s", shown, re.MULTILINE), shown
    trainer = status.get("trainerStatus") or {}
    assert trainer.get("progressPercentage") == 100 and trainer.get("lastUpdatedTime"), trainer
    reported = {metric["name"]: metric["value"] for metric in trainer.get("metrics", [])}
    assert reported.get("currentEpoch") == reported.get("totalEpochs") == "5", reported
    assert float(reported["loss"]) > 0 and 0 < float(reported["accuracy"]) <= 1, reported
    logs = {
        index: kubectl("logs", "-n", namespace, f"{JOB}-worker-{index}").stdout for index in (0, 1)
    }
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

    def every_container_ended(pods: list[dict[str, Any]]) -> bool:
        return all(
            "terminated" in (p["status"].get("containerStatuses") or [{}])[0].get("state", {})
            for p in pods
        )

    # The job's state can be written before the kubelet reports each container's end.
    pods = wait_for(
        "every container to have ended",
        lambda: real_cluster.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"],
        every_container_ended,
        timeout=60,
    )
    addresses = {p["metadata"]["name"]: p["status"].get("podIP") for p in pods}
    assert len(set(addresses.values())) == 4, addresses  # four containers, four addresses
    for pod in pods:
        status = pod["status"]["containerStatuses"][0]
        assert status["containerID"].startswith("containerd://"), status
        assert status["state"]["terminated"]["exitCode"] == 0, status
        image = pod["spec"]["containers"][0]["image"]
        assert f"docker.io/{image}" == real_cluster.cluster.images.examples.ref
