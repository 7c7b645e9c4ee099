"""The CPU tune example on the real node, in containers: MetaSchedule over the tracker.

``examples/v1/tune/mx_job_tune_cpu.yaml`` as written (its image built from
``examples/Dockerfile.tvm`` and imported into the node), its requests fitted to the node. Each
replica is a container with its own address; the two TunerServers register with the tracker the
operator names in ``TVM_TRACKER_HOST``/``TVM_TRACKER_PORT`` under ``TVM_TRACKER_KEY``, and the
Tuner's MetaSchedule RPC runner reads the same env. The job must Succeed with: the tracker
holding both servers, every trial measured and trials on both servers (told apart by the
address the tracker handed out, each a server pod's IP), the best kernel checked against NumPy
and faster than the untuned one, and the tuning database on the example's volume.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from localkube.scenarios.jobwatch import EXAMPLES, load_job
from localkube.scenarios.node_demo import node_fit
from tests.e2e.real_node_fixtures import InstalledCluster, namespace_for, remove_namespace
from tests.e2e.recovery_jobs import status_of
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.timeout(900)

TUNE_JOB = EXAMPLES / "v1" / "tune" / "mx_job_tune_cpu.yaml"
NAME = "tune-cpu"
TRIAL = re.compile(r"^trial (\d+) on server (\S+): (?:([0-9.]+) us per run|error: .*)$", re.M)
BEST = re.compile(
    r"^best kernel checked against NumPy on server (\S+): ([0-9.]+) us per run \(trial (\d+) "
    r"on server \S+\); untuned ([0-9.]+) us per run; speed-up ([0-9.]+)x$",
    re.M,
)


def logs(installed: InstalledCluster, namespace: str, pod: str) -> str:
    return str(installed.plane.kubectl("logs", "-n", namespace, pod, check=False).stdout)


def pods_of(installed: InstalledCluster, namespace: str) -> dict[str, dict[str, Any]]:
    found = installed.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    return {p["metadata"]["name"]: p for p in found}


def tracker_env(pod: dict[str, Any]) -> dict[str, str]:
    [container] = pod["spec"]["containers"]
    return {e["name"]: e.get("value", "") for e in container["env"] if e["name"].startswith("TVM")}


@pytest.mark.usefixtures("tvm_examples")
def test_the_tune_example_tunes_with_metaschedule_on_both_servers_through_the_tracker(
    real_cluster: InstalledCluster,
) -> None:
    namespace = namespace_for(real_cluster, "tuning")
    job = load_job(TUNE_JOB)
    specs = job["spec"]["mxReplicaSpecs"]
    key = specs["TunerServer"]["template"]["metadata"]["annotations"]["tuner-server-key"]
    args = specs["Tuner"]["template"]["spec"]["containers"][0]["args"]
    count = int(args[args.index("--trials") + 1])
    fitted = node_fit(real_cluster.cluster, job).job
    real_cluster.plane.kubectl("create", "-n", namespace, "-f", "-", input_text=json.dumps(fitted))
    final = wait_for(
        f"MXJob {NAME} to finish",
        lambda: status_of(real_cluster, namespace, NAME),
        lambda status: status.get("state") in ("Succeeded", "Failed"),
        timeout=400,
    )
    tuner = logs(real_cluster, namespace, f"{NAME}-tuner-0")
    assert final["state"] == "Succeeded", (final, tuner[-4000:])
    pods = pods_of(real_cluster, namespace)

    # The env TVM reads: the tracker's Service and port, and the key, for servers and tuner.
    tracker_port = str(specs["TunerTracker"]["template"]["spec"]["containers"][0]["ports"][0][
        "containerPort"])  # fmt: skip
    address = {"TVM_TRACKER_HOST": f"{NAME}-tunertracker-0", "TVM_TRACKER_PORT": tracker_port}
    assert tracker_env(pods[f"{NAME}-tunertracker-0"]) == address
    for pod in (f"{NAME}-tunerserver-0", f"{NAME}-tunerserver-1", f"{NAME}-tuner-0"):
        assert tracker_env(pods[pod]) == {**address, "TVM_TRACKER_KEY": key}

    # The tracker held both servers, each at its pod's address.
    server_ips = {pods[f"{NAME}-tunerserver-{i}"]["status"]["podIP"]: i for i in (0, 1)}
    registered = re.search(
        rf"^tracker {NAME}-tunertracker-0:{tracker_port}: 2 servers under key '{key}': "
        r"\['([0-9.]+):\d+', '([0-9.]+):\d+'\]$",
        tuner,
        re.M,
    )
    assert registered, tuner
    assert {registered.group(1), registered.group(2)} == set(server_ips), (registered, server_ips)

    # Every trial measured; trials on both servers.
    trials = TRIAL.findall(tuner)
    assert [int(number) for number, _, _ in trials] == list(range(1, count + 1)), tuner
    measured = [(server_ips[server.split(":")[0]], float(us)) for _, server, us in trials if us]
    assert len(measured) == count, tuner
    by_server = {i: sum(1 for s, _ in measured if s == i) for i in (0, 1)}
    assert all(by_server.values()), by_server
    for index in (0, 1):
        server = logs(real_cluster, namespace, f"{NAME}-tunerserver-{index}")
        assert "connected from" in server and "load_module" in server, server

    # The best kernel: checked against NumPy on a server, faster than the untuned one.
    best = BEST.search(tuner)
    assert best, tuner
    assert best.group(1).split(":")[0] in server_ips
    assert float(best.group(2)) < float(best.group(4)), best.group(0)

    # The database went to the example's volume, not a temporary directory.
    assert "tuning database in /tuning" in tuner and "no volume" not in tuner, tuner
    assert f"database in /tuning: {count} tuning records" in tuner, tuner

    # The Tuner reported the search (examples/scripts/tune_kernel.py, sdk/mxjob_progress's
    # MetaSchedule callback) to the controller's endpoint: every trial, the best latency.
    trainer = final.get("trainerStatus") or {}
    assert trainer.get("progressPercentage") == 100 and trainer.get("lastUpdatedTime"), trainer
    reported = {metric["name"]: metric["value"] for metric in trainer.get("metrics", [])}
    assert reported.get("trials") == reported.get("totalTrials") == str(count), reported
    assert reported.get("failedTrials") == "0", reported
    assert float(reported["bestLatencyUs/main"]) > 0, reported
    remove_namespace(real_cluster, namespace)
