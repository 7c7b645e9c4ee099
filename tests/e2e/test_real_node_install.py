"""The install on a real node: the images built from the Dockerfiles, run by kubelet and containerd.

``real_cluster`` applies an overlay that differs from ``manifests/overlays/in-cluster`` only by
the images it names (the ones ``make images`` built) and ``imagePullPolicy: Never``. These tests
show what only real containers show: both Deployments roll out under the manifests' own
securityContext in the ``restricted`` namespace (read back from the OCI spec containerd gave
runc), the webhook pods admit and refuse through a Service that kube-proxy routes, a killed
leader container hands over to the standby, and the webhook rolls under a stream of jobs.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from controller.runtime.election import ElectionSettings
from localkube.base.paths import PROJECT_ROOT
from localkube.realnode.cluster import SYSTEM_NAMESPACE
from tests.e2e.admission_traffic import admission_traffic, single_worker_job
from tests.e2e.real_node_fixtures import InstalledCluster, every_pod_of, namespace_for, pods_of
from tests.helpers import mxjobs, pods
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

# Fixture set-up and teardown count against a test's time limit: installing or removing a
# third-party component (or the session's node) on a loaded machine can take minutes.
pytestmark = pytest.mark.timeout(900)

INVALID = sorted((PROJECT_ROOT / "examples" / "invalid").glob("*.yaml"))
TRAIN_EXAMPLE = PROJECT_ROOT / "examples" / "v1" / "train" / "mx_job_dist_cpu.yaml"
COMPONENTS = ("webhook", "controller")
RUNAS = 65532


def container_id(pod: dict[str, Any]) -> str:
    status = pod["status"]["containerStatuses"][0]
    runtime, _, identifier = status["containerID"].partition("://")
    assert runtime == "containerd", status
    return str(identifier)


def oci_spec(installed: InstalledCluster, identifier: str) -> dict[str, Any]:
    """The OCI runtime spec containerd handed runc for this container."""
    info: dict[str, Any] = json.loads(installed.node.ctr("containers", "info", identifier))
    return dict(info["Spec"])


def test_both_deployments_run_as_real_containers_under_the_manifests_security_context(
    real_cluster: InstalledCluster,
) -> None:
    namespace = real_cluster.api.request("GET", f"/api/v1/namespaces/{SYSTEM_NAMESPACE}")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    images = {
        "webhook": real_cluster.cluster.images.webhook.ref,
        "controller": real_cluster.cluster.images.controller.ref,
    }
    for component in COMPONENTS:
        pods = pods_of(real_cluster, component)
        assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
        for pod in pods:
            assert pod["spec"]["nodeName"] == real_cluster.node.settings.node_name
            status = pod["status"]["containerStatuses"][0]
            assert status["ready"] and "running" in status["state"], status
            assert status["image"] == images[component], status
            spec = oci_spec(real_cluster, container_id(pod))
            process = spec["process"]
            assert (process["user"]["uid"], process["user"]["gid"]) == (RUNAS, RUNAS)
            assert spec["root"]["readonly"] is True
            assert process["noNewPrivileges"] is True
            assert not process["capabilities"].get("bounding"), process["capabilities"]
            assert not process["capabilities"].get("effective"), process["capabilities"]
            assert spec["linux"]["seccomp"]["defaultAction"] == "SCMP_ACT_ERRNO"
            pod_ip = pod["status"]["podIP"]
            assert pod_ip.startswith("198.18.1."), pod_ip  # the CNI bridge's subnet


def test_the_restricted_namespace_refuses_a_pod_weaker_than_the_operator_s(
    real_cluster: InstalledCluster,
) -> None:
    as_root = mxjobs.container(
        "c", image=real_cluster.cluster.images.controller.ref, imagePullPolicy="Never",
        securityContext={"runAsUser": 0},
    )  # fmt: skip
    root_pod = pods.pod("as-root", namespace=SYSTEM_NAMESPACE, containers=[as_root])
    result = real_cluster.plane.kubectl(
        "apply", "-f", "-", input_text=json.dumps(root_pod), check=False
    )
    assert result.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in result.stderr, result.stderr


@pytest.mark.parametrize("path", INVALID, ids=[p.stem for p in INVALID])
def test_every_invalid_example_is_refused_by_the_webhook_pods_with_its_message(
    real_cluster: InstalledCluster, path: Path
) -> None:
    namespace = namespace_for(real_cluster, "invalid-examples")
    field = re.search(r"^# The webhook's message names: (\S+)$", path.read_text(), re.M)
    assert field, f"{path} must say which field the message names"
    verb = "create" if "generateName" in path.read_text() else "apply"
    result = real_cluster.plane.kubectl(verb, "-n", namespace, "-f", str(path), check=False)
    assert result.returncode != 0, f"{path.name} was accepted"
    assert 'admission webhook "mutate.mxjobs.kubeflow.org" denied the request' in result.stderr
    assert field.group(1) in result.stderr, result.stderr


def test_a_valid_job_is_defaulted_and_gets_its_env_from_the_webhook_pods(
    real_cluster: InstalledCluster,
) -> None:
    namespace = namespace_for(real_cluster, "defaulted")
    result = real_cluster.plane.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", str(TRAIN_EXAMPLE), "-o", "json"
    )
    admitted = json.loads(result.stdout)
    assert admitted["spec"]["runPolicy"]["backoffLimit"] == 6
    for replica_type, replica in admitted["spec"]["mxReplicaSpecs"].items():
        mxnet = next(c for c in replica["template"]["spec"]["containers"] if c["name"] == "mxnet")
        env = {e["name"]: e.get("value") for e in mxnet["env"]}
        assert env["DMLC_ROLE"] == replica_type.lower()
        assert env["DMLC_PS_ROOT_URI"] == "dist-train-cpu-scheduler-0"
        assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == ("1", "2")


def job_state(installed: InstalledCluster, namespace: str, name: str) -> str:
    path = f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}"
    return str(installed.api.request("GET", path).get("status", {}).get("state"))


def controller_lease(installed: InstalledCluster) -> dict[str, Any]:
    lease: dict[str, Any] = installed.api.request(
        "GET",
        f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM_NAMESPACE}/leases/mxjob-controller",
    )
    return dict(lease.get("spec") or {})


def lease_holder(installed: InstalledCluster) -> str:
    return str(controller_lease(installed).get("holderIdentity") or "")


def lease_duration(installed: InstalledCluster) -> float:
    return float(controller_lease(installed)["leaseDurationSeconds"])


def test_a_killed_leader_container_hands_over_to_the_standby_and_a_job_runs_once(
    real_cluster: InstalledCluster,
) -> None:
    namespace = namespace_for(real_cluster, "leader-kill")
    leader = wait_for("a Lease holder", lambda: lease_holder(real_cluster), bool, timeout=60)
    pods = {p["metadata"]["name"]: p for p in pods_of(real_cluster, "controller")}
    assert leader in pods, (leader, sorted(pods))
    standby = next(name for name in pods if name != leader)
    restarts_before = pods[leader]["status"]["containerStatuses"][0]["restartCount"]

    creations = PodCreations(real_cluster.api, namespace)
    image = real_cluster.cluster.images.examples.ref
    job = single_worker_job("during-takeover", image, ["python", "-c", "print('ran once')"])
    killed = time.monotonic()
    # The container's process dies (SIGKILL through containerd), the pod stays: the kubelet
    # restarts the container in place, under the same pod name.
    real_cluster.node.ctr("tasks", "kill", "--signal", "SIGKILL", container_id(pods[leader]))
    real_cluster.plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(job))
    wait_for(
        "the standby to take the Lease",
        lambda: lease_holder(real_cluster),
        lambda h: h == standby,
        timeout=60,
    )
    takeover = time.monotonic() - killed
    # The restarted container frees its dead predecessor's Lease (controller/runtime/election.py),
    # so the standby does not wait out a whole lease duration. That needs the kubelet to restart it
    # at once, as it does a container's first exit; after an earlier one it backs off 10 s
    # first, and the standby then takes the Lease when it expires.
    duration = lease_duration(real_cluster)
    retry = ElectionSettings.retry_period  # the manifests keep the defaults
    bound = duration if restarts_before == 0 else duration + 2 * retry
    assert takeover < bound, (takeover, restarts_before)
    wait_for(
        "the job to succeed",
        lambda: job_state(real_cluster, namespace, "during-takeover"),
        lambda s: s == "Succeeded",
        timeout=120,
    )
    creations.stop()
    created = {name for name, _ in creations.seen}
    assert [name for name, _ in creations.seen] == ["during-takeover-worker-0"], creations.seen
    assert created == {"during-takeover-worker-0"}
    restarted = next(
        p for p in pods_of(real_cluster, "controller") if p["metadata"]["name"] == leader
    )
    assert restarted["status"]["containerStatuses"][0]["restartCount"] > restarts_before
    logs = real_cluster.plane.kubectl("logs", "-n", namespace, "during-takeover-worker-0").stdout
    assert logs.strip() == "ran once"


def test_the_webhook_scaled_to_three_and_rolled_admits_every_valid_and_no_invalid_job(
    real_cluster: InstalledCluster,
) -> None:
    namespace = namespace_for(real_cluster, "webhook-roll")
    kubectl = real_cluster.plane.kubectl
    image = real_cluster.cluster.images.examples.ref
    try:
        with admission_traffic(kubectl, namespace=namespace, image=image, prefix="roll") as traffic:
            kubectl("-n", SYSTEM_NAMESPACE, "scale", "deployment/mxjob-webhook", "--replicas=3")
            kubectl("-n", SYSTEM_NAMESPACE, "rollout", "status", "deployment/mxjob-webhook",
                    "--timeout=120s", timeout=130)  # fmt: skip
            kubectl("-n", SYSTEM_NAMESPACE, "rollout", "restart", "deployment/mxjob-webhook")
            kubectl("-n", SYSTEM_NAMESPACE, "rollout", "status", "deployment/mxjob-webhook",
                    "--timeout=180s", timeout=190)  # fmt: skip
            # Traffic goes on while the old pods stop (preStop, then a graceful stop).
            wait_for(
                "the old webhook pods to finish terminating",
                lambda: every_pod_of(real_cluster, "webhook"),
                lambda pods: len(pods) == 3,
                timeout=90,
            )
    finally:
        kubectl("-n", SYSTEM_NAMESPACE, "scale", "deployment/mxjob-webhook", "--replicas=2")
        wait_for(
            "the webhook back at two pods",
            lambda: every_pod_of(real_cluster, "webhook"),
            lambda pods: len(pods) == 2,
            timeout=90,
        )
    traffic.assert_no_wrong_answer()
