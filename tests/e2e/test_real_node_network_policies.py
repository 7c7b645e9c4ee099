"""NetworkPolicy enforced for real on the real node: the operator and its jobs under default deny.

kube-network-policies (localkube.thirdparty.network_policies) enforces NetworkPolicy on the
node while this module runs, and only then. The operator's namespace and a job namespace deny
all ingress and egress but DNS; the operator is installed with
``manifests/components/network-policies`` (its own policies) and
``manifests/components/network-policies/jobs`` (``--job-network-policy``); the job namespace
adds the egress policy docs/how-to/harden.md gives for it (its jobs' pods reach one another and
the controller's progress port). Every verdict is read from a probe: a pod of the examples' image
(it has python) that opens TCP connections with a timeout and prints, per target, ``open``,
``dropped`` (the timeout: the packet was dropped) or the error; or from a job's own pod, whose
exit code says whether it got through.

On this node the API server's calls to the webhook and the kubelet's probes come from the
host's root user, which kube-network-policies never judges (node traffic, as NetworkPolicy's
documentation has it), and what pods send to the node address (the API server, CoreDNS) is not
judged either: the admission check shows the webhook works with the policies in place, and the
probes show what the policies themselves open and shut.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from localkube.base.paths import PROJECT_ROOT
from localkube.realnode import nfqueue
from localkube.realnode.cluster import SYSTEM_NAMESPACE
from localkube.scenarios.jobwatch import DEFAULT_JOB, Progress
from localkube.scenarios.node_demo import run_job
from localkube.thirdparty import network_policies
from shared.constants import LABEL_OPERATOR_NAME, OPERATOR_NAME
from tests.e2e.real_node_fixtures import (
    InstalledCluster,
    namespace_for,
    pods_of,
    remove_namespace,
    require,
)
from tests.helpers import mxjobs, pods
from tests.helpers.waiting import wait_for

pytestmark = [
    pytest.mark.timeout(1500),
    pytest.mark.changes_install,
    pytest.mark.late_builds("build-kube-network-policies"),
]

COMPONENTS = ("network-policies", "network-policies/jobs")
JOBS = "np-jobs"
SCRAPERS = "np-scrapers"
OTHERS = "np-others"
SCRAPE_LABEL = "metrics.mxjob.kubeflow.org/scrape"
COMPONENT_POLICIES = (
    "mxjob-webhook-admission", "mxjob-operator-metrics", "mxjob-controller-progress",
    "mxjob-operator-egress",
)  # fmt: skip
PROGRESS_PORT = 8444
INVALID = PROJECT_ROOT / "examples" / "invalid" / "missing-scheduler.yaml"
PROBE = """
import json, socket, sys, time
results, deadline = {}, time.monotonic() + 60
for name, host, port, want in json.loads(sys.argv[1]):
    while True:
        try:
            socket.create_connection((host, port), timeout=3).close()
            got = "open"
        except socket.timeout:
            got = "dropped"
        except OSError as error:
            got = f"error: {error}"
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(1)
    results[name] = got
print(json.dumps(results))
"""
"""Each target is tried until it gives the verdict expected (policies take a moment to reach
the program's sets) or a minute has passed; the last verdict is printed."""


def policy(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def default_deny(namespace: str) -> dict[str, Any]:
    """Nothing in or out but DNS, for every pod of ``namespace``."""
    dns = [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    return policy(
        namespace,
        "default-deny",
        {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "egress": [{"ports": dns}]},
    )


def jobs_reach_one_another(namespace: str) -> dict[str, Any]:
    """The egress policy docs/how-to/harden.md gives a namespace that denies egress by default:
    its jobs' pods reach one another, the controller's progress port, and DNS."""
    mxjob_pods = {"matchLabels": {LABEL_OPERATOR_NAME: OPERATOR_NAME}}
    controller = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": SYSTEM_NAMESPACE}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "mxjob-operator",
                                        "app.kubernetes.io/component": "controller"}},
    }  # fmt: skip
    dns = [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    return policy(
        namespace,
        "mxjob-pods-reach-one-another",
        {
            "podSelector": mxjob_pods,
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"podSelector": mxjob_pods}]},
                {"to": [controller], "ports": [{"port": PROGRESS_PORT, "protocol": "TCP"}]},
                {"ports": dns},
            ],
        },
    )


def apply(installed: InstalledCluster, *documents: dict[str, Any]) -> None:
    text = yaml.safe_dump_all(documents)
    installed.plane.kubectl("apply", "-f", "-", input_text=text)


@dataclass
class Enforced:
    installed: InstalledCluster
    enforcer: network_policies.Enforcer


@pytest.fixture(scope="module")
def enforced(
    real_cluster: InstalledCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Enforced]:
    require(network_policies.missing())
    work = tmp_path_factory.mktemp("network-policies")
    cluster = real_cluster.cluster
    try:
        with network_policies.enforcing(cluster) as enforcer:
            apply(real_cluster, default_deny(SYSTEM_NAMESPACE))
            for namespace in (JOBS, SCRAPERS, OTHERS):
                namespace_for(real_cluster, namespace)
            real_cluster.plane.kubectl("label", "namespace", SCRAPERS, f"{SCRAPE_LABEL}=true")
            apply(real_cluster, default_deny(JOBS), jobs_reach_one_another(JOBS))
            cluster.install_operator(work, components=COMPONENTS)
            yield Enforced(real_cluster, enforcer)
        # Rules left behind would drop the pod traffic of every later test.
        assert not nfqueue.installed() and not enforcer.alive()
    finally:
        _restore(real_cluster, work)


def _restore(installed: InstalledCluster, work: Path) -> None:
    """No policy, role or namespace of the module's left; the session's install (no flag) is
    put back later."""
    kubectl = installed.plane.kubectl
    kubectl("delete", "networkpolicy", "-n", SYSTEM_NAMESPACE, "--ignore-not-found",
            "default-deny", *COMPONENT_POLICIES, check=False)  # fmt: skip
    for kind in ("clusterrolebinding", "clusterrole"):
        kubectl("delete", kind, "mxjob-controller-network-policies", "--ignore-not-found",
                check=False)  # fmt: skip
    remove_namespace(installed, JOBS, SCRAPERS, OTHERS)
    installed.put_back_later()


def probe(installed: InstalledCluster, namespace: str, name: str, targets: list[Any]) -> Any:
    """Run the probe as pod ``name`` of ``namespace``; its verdict per target."""
    probing = mxjobs.container(
        "probe", image=installed.cluster.images.examples.ref, imagePullPolicy="Never",
        command=["python", "-c", PROBE, json.dumps(targets)],
    )  # fmt: skip
    pod = pods.pod(name, namespace=namespace, restart_policy="Never", containers=[probing])
    path = f"/api/v1/namespaces/{namespace}/pods"
    installed.api.request("POST", path, body=pod)
    wait_for(
        f"the probe {namespace}/{name} to end",
        lambda: installed.api.request("GET", f"{path}/{name}")["status"].get("phase"),
        lambda phase: phase in ("Succeeded", "Failed"),
        timeout=180,
    )
    logs = installed.plane.kubectl("logs", "-n", namespace, name).stdout
    installed.api.request("DELETE", f"{path}/{name}", body={"gracePeriodSeconds": 0})
    return json.loads(logs.strip().splitlines()[-1])


def ports_of(pod: dict[str, Any]) -> dict[str, int]:
    container = pod["spec"]["containers"][0]
    return {p["name"]: int(p["containerPort"]) for p in container.get("ports", [])}


def test_admission_works_under_default_deny_with_the_components_policies(
    enforced: Enforced,
) -> None:
    installed = enforced.installed
    assert enforced.enforcer.alive()
    stored = installed.api.request(
        "GET", f"/apis/networking.k8s.io/v1/namespaces/{SYSTEM_NAMESPACE}/networkpolicies"
    )
    names = {p["metadata"]["name"] for p in stored["items"]}
    assert names == {"default-deny", *COMPONENT_POLICIES}
    kubectl = installed.plane.kubectl
    suspended = mxjobs.mxjob("admitted", mode=None, replicas={"Worker": 1}, image="probe",
                             run_policy={"suspend": True})  # fmt: skip
    admitted = kubectl("create", "-n", JOBS, "-f", "-", "-o", "json",
                       input_text=json.dumps(suspended))  # fmt: skip
    assert json.loads(admitted.stdout)["spec"]["runPolicy"]["backoffLimit"] == 6  # defaulted
    refused = kubectl("apply", "-n", JOBS, "-f", str(INVALID), check=False)
    assert refused.returncode != 0
    assert 'admission webhook "mutate.mxjobs.kubeflow.org" denied the request' in refused.stderr
    assert "spec.mxReplicaSpecs.Scheduler" in refused.stderr, refused.stderr


def test_metrics_ports_open_only_to_the_labelled_namespace_and_admission_to_all(
    enforced: Enforced,
) -> None:
    installed = enforced.installed
    controller = pods_of(installed, "controller")[0]
    webhook = pods_of(installed, "webhook")[0]
    admission_port = ports_of(webhook)["https"]
    metrics = [
        (f"{component}/{name}", pod["status"]["podIP"], port)
        for component, pod in (("controller", controller), ("webhook", webhook))
        for name, port in ports_of(pod).items()
        if name.endswith("-metrics") and port != admission_port  # a port of its own
    ]
    assert any(target.startswith("controller/") for target, _, _ in metrics), metrics
    health = ("controller/health", controller["status"]["podIP"], ports_of(controller)["health"])
    admission = ("webhook/https", webhook["status"]["podIP"], admission_port)
    # The progress port takes the pods of MXJobs only (test_the_controllers_progress_port_...).
    progress = ("controller/https-progress", controller["status"]["podIP"],
                ports_of(controller)["https-progress"])  # fmt: skip
    assert progress[2] == PROGRESS_PORT
    scraper = probe(installed, SCRAPERS, "scraper", [
        *[[*target, "open"] for target in metrics], [*health, "dropped"], [*progress, "dropped"],
    ])  # fmt: skip
    assert scraper == {**{t[0]: "open" for t in metrics}, health[0]: "dropped",
                       progress[0]: "dropped"}  # fmt: skip
    other = probe(installed, OTHERS, "other", [
        *[[*target, "dropped"] for target in metrics], [*admission, "open"], [*progress, "dropped"],
    ])  # fmt: skip
    assert other == {**{t[0]: "dropped" for t in metrics}, admission[0]: "open",
                     progress[0]: "dropped"}  # fmt: skip


def test_a_real_mxnet_job_succeeds_under_default_deny_with_its_own_policy(
    enforced: Enforced,
) -> None:
    installed = enforced.installed
    out = io.StringIO()
    status, _ = run_job(
        installed.cluster, DEFAULT_JOB, namespace=JOBS, timeout=300, progress=Progress(out),
        out=out,
    )  # fmt: skip
    if status.get("state") != "Succeeded":
        described = installed.plane.kubectl("describe", "pods", "-n", JOBS, check=False).stdout
        raise AssertionError(f"{out.getvalue()}\n{described[-4000:]}")
    digests = {
        re.findall(r"^final parameters sha256 ([0-9a-f]{64})$", logs, re.MULTILINE)[-1]
        for logs in (
            installed.plane.kubectl("logs", "-n", JOBS, f"dist-train-cpu-worker-{index}").stdout
            for index in (0, 1)
        )
    }
    assert len(digests) == 1, digests  # both workers trained, through the scheduler and server
    path = f"/apis/networking.k8s.io/v1/namespaces/{JOBS}/networkpolicies/dist-train-cpu"
    made = installed.api.request("GET", path)
    assert made["metadata"]["ownerReferences"][0]["kind"] == "MXJob"
    assert made["spec"]["policyTypes"] == ["Ingress"]
    installed.plane.kubectl("delete", "mxjob", "-n", JOBS, "dist-train-cpu", "--wait")
    wait_for(
        "garbage collection to remove the job's policy",
        lambda: policy_names(installed, JOBS),
        lambda names: "dist-train-cpu" not in names,
        timeout=60,
    )


def policy_names(installed: InstalledCluster, namespace: str) -> set[str]:
    path = f"/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies"
    return {p["metadata"]["name"] for p in installed.api.request("GET", path)["items"]}


LISTENER = """
import os, socket
server = socket.create_server(("", int(os.environ["DMLC_PS_ROOT_PORT"])))
while True:
    connection, peer = server.accept()
    print("connected:", connection.recv(64).decode(), flush=True)
    connection.close()
"""
"""The target job's scheduler: listens on ``DMLC_PS_ROOT_PORT`` as ps-lite's does, and prints
who said hello."""
CALLER = """
import os, socket, sys, time
port = os.environ.get("PORT") or os.environ["DMLC_PS_ROOT_PORT"]
address = (os.environ["TARGET"], int(port))
deadline = time.monotonic() + float(os.environ["PATIENCE"])
while True:
    try:
        with socket.create_connection(address, timeout=3) as connection:
            connection.sendall(os.environ["HELLO"].encode())
        sys.exit(0)
    except socket.timeout:
        code = 1
    except OSError as error:
        print(error, flush=True)
        code = 2
    if time.monotonic() > deadline:
        sys.exit(code)
    time.sleep(1)
"""
"""Says hello to ``TARGET``'s ``PORT`` (by default its own job's ``DMLC_PS_ROOT_PORT``) until
it gets through (exit 0) or its patience ends: exit 1 when the last try timed out (dropped), 2
on any other error."""


def _replica(installed: InstalledCluster, script: str, env: dict[str, str]) -> dict[str, Any]:
    """One pod running ``script`` once, with ``env``, asking for little."""
    sole = mxjobs.container(
        image=installed.cluster.images.examples.ref, imagePullPolicy="Never",
        command=["python", "-c", script], env=[{"name": k, "value": v} for k, v in env.items()],
        resources={"requests": {"cpu": "10m", "memory": "32Mi"}},
    )  # fmt: skip
    return mxjobs.replica(1, restart_policy="Never", containers=[sole])


def target_job(installed: InstalledCluster) -> dict[str, Any]:
    """A distributed job whose scheduler listens and whose worker says hello to it."""
    hello = {"TARGET": "target-scheduler-0", "HELLO": "own worker", "PATIENCE": "120"}
    replicas = {"Scheduler": _replica(installed, LISTENER, {}),
                "Worker": _replica(installed, CALLER, hello)}  # fmt: skip
    return mxjobs.mxjob("target", mode=None, replicas=replicas)


def intruder_job(installed: InstalledCluster, port: str) -> dict[str, Any]:
    """A single-node job whose worker tries the target's scheduler port."""
    hello = {"TARGET": "target-scheduler-0", "HELLO": "intruder", "PATIENCE": "20", "PORT": port}
    replicas = {"Worker": _replica(installed, CALLER, hello)}
    return mxjobs.mxjob("intruder", mode=None, replicas=replicas)


def reporter_job(installed: InstalledCluster, address: str) -> dict[str, Any]:
    """A single-node job whose worker connects to the controller's progress port at
    ``address``, as its reporter would."""
    hello = {"TARGET": address, "HELLO": "progress", "PATIENCE": "60", "PORT": str(PROGRESS_PORT)}
    replicas = {"Worker": _replica(installed, CALLER, hello)}
    return mxjobs.mxjob("reporter", mode=None, replicas=replicas)


def ended(installed: InstalledCluster, namespace: str, name: str) -> dict[str, Any]:
    """The terminated state of pod ``name``'s container, once it has one."""
    pod = wait_for(
        f"{namespace}/{name} to end",
        lambda: installed.api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}"),
        lambda p: "terminated" in ((p["status"].get("containerStatuses") or [{}])[0]
                                   .get("state") or {}),
        timeout=240,
    )  # fmt: skip
    return dict(pod["status"]["containerStatuses"][0]["state"]["terminated"])


def test_a_jobs_scheduler_port_takes_its_own_worker_and_drops_another_jobs_pod(
    enforced: Enforced,
) -> None:
    installed = enforced.installed
    kubectl = installed.plane.kubectl
    kubectl("create", "-n", JOBS, "-f", "-", input_text=json.dumps(target_job(installed)))
    own = ended(installed, JOBS, "target-worker-0")
    assert own["exitCode"] == 0, own
    scheduler = installed.api.request("GET", f"/api/v1/namespaces/{JOBS}/pods/target-scheduler-0")
    env = {e["name"]: e.get("value") for e in scheduler["spec"]["containers"][0]["env"]}
    port = str(env["DMLC_PS_ROOT_PORT"])
    kubectl("create", "-n", JOBS, "-f", "-", input_text=json.dumps(intruder_job(installed, port)))
    intruder = ended(installed, JOBS, "intruder-worker-0")
    heard = kubectl("logs", "-n", JOBS, "target-scheduler-0").stdout
    assert intruder["exitCode"] == 1, (intruder, heard)  # its connections timed out: dropped
    assert "connected: own worker" in heard and "intruder" not in heard, heard
    assert {"target", "intruder"} <= policy_names(installed, JOBS)
    kubectl("delete", "mxjob", "-n", JOBS, "target", "intruder", "--wait")


def test_the_controllers_progress_port_takes_a_jobs_pod_under_default_deny(
    enforced: Enforced,
) -> None:
    """A job's pod, in a namespace that denies egress but what harden.md's policy opens, gets
    through to every controller replica's progress port (mxjob-controller-progress admits the
    pods of MXJobs of any namespace); a pod of no job is dropped there
    (test_metrics_ports_open_only_to_the_labelled_namespace_and_admission_to_all)."""
    installed = enforced.installed
    kubectl = installed.plane.kubectl
    controller = pods_of(installed, "controller")[0]
    assert ports_of(controller)["https-progress"] == PROGRESS_PORT
    job = reporter_job(installed, controller["status"]["podIP"])
    kubectl("create", "-n", JOBS, "-f", "-", input_text=json.dumps(job))
    reporter = ended(installed, JOBS, "reporter-worker-0")
    logs = kubectl("logs", "-n", JOBS, "reporter-worker-0", check=False).stdout
    assert reporter["exitCode"] == 0, (reporter, logs)  # 1: dropped, 2: refused or another error
    kubectl("delete", "mxjob", "-n", JOBS, "reporter", "--wait")
