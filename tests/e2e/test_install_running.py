"""The install, running as installed: the Deployments of ``manifests/`` serve and reconcile.

A control plane of this module's own runs the controllers a Deployment needs
(``INSTALL_CONTROLLERS``: Deployments, ReplicaSets, EndpointSlices, PDBs) and kube-apiserver with
``--enable-aggregator-routing=true``, so a Service-referenced webhook is dialled at one of the
ready addresses of the Service's EndpointSlice, not at a ClusterIP that nothing routes here. The
install is applied exactly as docs/how-to/install.md says (``python -m certs webhook --out …``
then a plain ``kubectl apply -k`` of the ``self-signed`` overlay). The test kubelet's install
profile (``localkube.kubelet.profile``) runs the pods kube-controller-manager creates as the
installed console scripts, each with its own pod IP, its Secret volume and service-account token
mounted where the pod says, and its readiness probe driving its Ready condition.
"""

from __future__ import annotations

import atexit
import datetime
import functools
import http.client
import json
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localkube.base.api import Api, ApiError, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet.core import TestKubelet
from localkube.kubelet.profile.operator_node import operator_kubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import INSTALL_CONTROLLERS, ControlPlaneSettings
from tests.e2e.progress_wiring import status_env, status_volume
from tests.helpers import mxjobs
from tests.helpers.pod_creations import PodCreations
from tests.helpers.waiting import wait_for

SYSTEM = "mxjob-system"
METRICS_PORT = 8443
PROGRESS_PORT = 8444
PROGRESS_HOST = f"mxjob-controller-progress.{SYSTEM}.svc"
pytestmark = pytest.mark.timeout(600)  # two rollouts of up to SETTLE each in one test

SETTLE = 180
"""Seconds a rollout or an eviction may take. Under a cold ``make test`` (Go builds and the
real-node tests taking both cores beside this module) a rollout of the two controller replicas
took over 90 s: each new pod 30 to 50 s to start and turn ready. What the tests assert is what
is answered meanwhile, not how fast the pods turn over."""


@dataclass
class Install:
    plane: ControlPlane
    api: Api
    kubelet: TestKubelet
    ca_file: Path
    namespace: str
    """Where the tests' MXJobs go."""
    overlay: Path
    """The ``self-signed`` overlay as applied, Secret included: applied again, it restores."""
    pod_logs: Path
    """Where the test kubelet writes each pod's output, ``<namespace>_<pod>.log``."""

    def kubectl(self, *args: str, input_text: str | None = None, check: bool = True) -> Any:
        return self.plane.kubectl(*args, input_text=input_text, check=check, timeout=SETTLE + 10)

    def pods(self, component: str) -> list[dict[str, Any]]:
        selector = f"app.kubernetes.io/component={component}"
        items: list[dict[str, Any]] = self.api.request(
            "GET", f"/api/v1/namespaces/{SYSTEM}/pods", query=[("labelSelector", selector)]
        )["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    work = tmp_path_factory.mktemp("install-running")
    plane = ControlPlane(
        ControlPlaneSettings(
            state_dir=work / "plane",
            extra_controllers=INSTALL_CONTROLLERS,
            extra_apiserver_args=("--enable-aggregator-routing=true",),
        )
    )
    atexit.register(plane.down)
    kubelet: TestKubelet | None = None
    try:
        state = plane.up()
        api = Api.from_kubeconfig(plane.kubeconfig)
        kubelet = operator_kubelet(
            api, work=work, api_port=state.apiserver_port, node_name="install-node"
        )
        # docs/how-to/install.md, "With your own PKI", in a copy of manifests/ so the
        # generated Secret (a private key) stays out of the working tree.
        manifests = work / "manifests"
        shutil.copytree(
            PROJECT_ROOT / "manifests",
            manifests,
            ignore=shutil.ignore_patterns("webhook-tls-secret.yaml"),
        )
        overlay = manifests / "overlays" / "self-signed"
        subprocess.run(
            [sys.executable, "-m", "certs", "webhook", "--out", str(overlay), "--ca-dir",
             str(work / "ca")],
            check=True, cwd=PROJECT_ROOT, capture_output=True,
        )  # fmt: skip
        plane.kubectl("apply", "-k", str(overlay), timeout=90)
        plane.kubectl(
            "-n", SYSTEM, "rollout", "status", f"--timeout={SETTLE}s",
            "deployment/mxjob-webhook", "deployment/mxjob-controller",
            timeout=SETTLE + 10,
        )  # fmt: skip
        ca_file = work / "ca" / "ca.crt"
        namespace = "install-jobs"
        ensure_namespace(api, namespace)
        yield Install(plane, api, kubelet, ca_file, namespace, overlay, work / "pods")
    finally:
        if kubelet is not None:
            kubelet.stop()
        plane.down()
        atexit.unregister(plane.down)


def endpoint_addresses(install: Install, service: str) -> set[str]:
    slices = install.api.request(
        "GET",
        f"/apis/discovery.k8s.io/v1/namespaces/{SYSTEM}/endpointslices",
        query=[("labelSelector", f"kubernetes.io/service-name={service}")],
    )["items"]
    return {
        address
        for s in slices
        for endpoint in s.get("endpoints") or []
        if endpoint.get("conditions", {}).get("ready")
        for address in endpoint["addresses"]
    }


def all_pods(install: Install, component: str) -> list[dict[str, Any]]:
    """The component's pods, terminating ones included."""
    items: list[dict[str, Any]] = install.api.request(
        "GET",
        f"/api/v1/namespaces/{SYSTEM}/pods",
        query=[("labelSelector", f"app.kubernetes.io/component={component}")],
    )["items"]
    return items


def webhook_settled(install: Install, *, replicas: int = 2, terminated: bool = True) -> None:
    """Wait until ``replicas`` webhook pods serve and (``terminated``) every old one is gone."""
    install.kubectl(
        "-n", SYSTEM, "rollout", "status", "deployment/mxjob-webhook", f"--timeout={SETTLE}s"
    )  # fmt: skip
    wait_for(
        f"{replicas} ready webhook endpoints",
        lambda: endpoint_addresses(install, "mxjob-webhook"),
        lambda found: len(found) == replicas,
        timeout=60,
    )
    if not terminated:
        return
    wait_for(
        "the webhook's old pods to finish terminating",
        lambda: all_pods(install, "webhook"),
        lambda pods: (
            len(pods) == replicas and not any(p["metadata"].get("deletionTimestamp") for p in pods)
        ),
        timeout=SETTLE,
    )


def mxjob(name: str, *, workers: int = 1, suspend: bool = False, image: str = "busybox") -> str:
    """As ``kubectl apply -f -`` reads it: a job of ``workers`` Workers that exit at once."""
    job = mxjobs.mxjob(
        name,
        mode=None,
        replicas={"Worker": workers},
        image=image,
        command=["true"],
        restart_policy="Never",
        run_policy={"suspend": suspend},
    )
    return json.dumps(job)


def test_the_install_rolls_out_with_each_pod_on_its_own_address_behind_its_service(
    install: Install,
) -> None:
    webhooks, controllers = install.pods("webhook"), install.pods("controller")
    assert len(webhooks) == 2 and len(controllers) == 2
    ips = [p["status"]["podIP"] for p in webhooks + controllers]
    assert len(set(ips)) == 4 and all(ip.startswith("198.1") for ip in ips)
    assert all(
        {c["type"]: c["status"] for c in p["status"]["conditions"]}["Ready"] == "True"
        for p in webhooks + controllers
    )
    # The Service the webhook configurations and the CRD conversion name lists both webhook pods.
    # The EndpointSlice controller follows a pod's Ready condition asynchronously, so the
    # second pod's address may land a moment after the pod reports Ready.
    webhook_ips = {p["status"]["podIP"] for p in webhooks}
    wait_for(
        "the webhook Service's EndpointSlice to list both webhook pods",
        lambda: endpoint_addresses(install, "mxjob-webhook"),
        lambda found: found == webhook_ips,
        timeout=30,
    )
    # The controller's service-account token came from the TokenRequest API, bound to its pod.
    lease = install.api.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM}/leases/mxjob-controller"
    )
    assert lease["spec"]["holderIdentity"] in {p["metadata"]["name"] for p in controllers}
    # Every controller replica, the standby too, takes progress reports behind their Service,
    # with the installed certificate for the Service's name.
    controller_ips = {p["status"]["podIP"] for p in controllers}
    wait_for(
        "the progress Service's EndpointSlice to list both controller pods",
        lambda: endpoint_addresses(install, "mxjob-controller-progress"),
        lambda found: found == controller_ips,
        timeout=30,
    )
    for address in sorted(controller_ips):
        assert unauthenticated_report(install, address) == 401, address


def unauthenticated_report(install: Install, address: str) -> int:
    """A report without a token to one controller pod's progress port, which must present the
    installed certificate for the progress Service's name: the answer's status."""
    context = ssl.create_default_context(cafile=str(install.ca_file))
    raw = socket.create_connection((address, PROGRESS_PORT), timeout=10)
    connection = http.client.HTTPSConnection(PROGRESS_HOST, PROGRESS_PORT, timeout=10)
    connection.sock = context.wrap_socket(raw, server_hostname=PROGRESS_HOST)
    try:
        path = f"/apis/kubeflow.org/v1/namespaces/{install.namespace}/mxjobs/any/status"
        connection.request("POST", path, body=b"{}", headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return int(response.status)
    finally:
        connection.close()


def test_a_bad_spec_is_refused_at_kubectl_apply_by_the_webhook_pods(install: Install) -> None:
    bad = json.loads(mxjob("bad"))
    bad["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    result = install.kubectl(
        "apply", "-n", install.namespace, "-f", "-", input_text=json.dumps(bad), check=False
    )
    assert result.returncode != 0
    assert 'admission webhook "' in result.stderr and "denied the request" in result.stderr
    assert "restartPolicy" in result.stderr


def test_a_job_applied_is_defaulted_and_run_to_success_by_the_controller_pods(
    install: Install,
) -> None:
    install.kubectl("apply", "-n", install.namespace, "-f", "-", input_text=mxjob("runs"))
    path = f"/apis/kubeflow.org/v1/namespaces/{install.namespace}/mxjobs/runs"
    job = install.api.request("GET", path)
    assert job["spec"]["runPolicy"]["backoffLimit"] == 6  # the mutating webhook's default
    # The progress wiring, the webhook told its namespace by its Deployment; the CA the job's
    # pods verify the endpoint by is the installed one (ca.crt mounted beside the pair).
    template = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]
    (container,) = template["spec"]["containers"]
    assert container["env"][-3:] == status_env(install.namespace, "runs")
    assert template["spec"]["volumes"] == [status_volume("runs")]
    configmap = f"/api/v1/namespaces/{install.namespace}/configmaps/runs-status-ca"
    wait_for(
        "the job's CA ConfigMap to hold the installed CA",
        lambda: install.api.request("GET", configmap).get("data"),
        lambda data: data == {"ca.crt": install.ca_file.read_text()},
        timeout=30,
    )
    done = wait_for(
        "the job to succeed",
        lambda: install.api.request("GET", path),
        lambda job: job.get("status", {}).get("state") == "Succeeded",
        timeout=60,
    )
    assert done["status"]["replicaStatuses"]["Worker"]["succeeded"] == 1


def scraper_token(install: Install) -> str:
    """A token of a ServiceAccount bound to ``mxjob-metrics-reader``, as a scraper has one: both
    processes answer ``/metrics`` only to such a token (``--metrics-secure``)."""
    if install.namespace in _SCRAPER_TOKENS:
        return _SCRAPER_TOKENS[install.namespace]
    install.kubectl("-n", install.namespace, "create", "serviceaccount", "scraper")
    install.kubectl(
        "create", "clusterrolebinding", "scraper-mxjob-metrics",
        "--clusterrole=mxjob-metrics-reader", f"--serviceaccount={install.namespace}:scraper",
    )  # fmt: skip
    token = install.kubectl("-n", install.namespace, "create", "token", "scraper").stdout.strip()
    return _SCRAPER_TOKENS.setdefault(install.namespace, token)


_SCRAPER_TOKENS: dict[str, str] = {}


def scrape(install: Install, url: str, *, context: ssl.SSLContext, timeout: float = 10) -> str:
    request = urllib.request.Request(url)
    request.add_header("Authorization", f"Bearer {scraper_token(install)}")
    with urllib.request.urlopen(request, context=context, timeout=timeout) as reply:
        return str(reply.read().decode())


def webhook_reviews(install: Install, address: str) -> int:
    """Reviews one webhook pod answered, from its own ``/metrics`` (its metrics listener)."""
    context = ssl.create_default_context(cafile=str(install.ca_file))
    context.check_hostname = False
    text = scrape(install, f"https://{address}:{METRICS_PORT}/metrics", context=context)
    return int(
        sum(
            float(m.group(1))
            for m in re.finditer(r"^mxjob_webhook_reviews_total\{[^}]*\} (\S+)$", text, re.M)
        )
    )


def test_three_webhook_replicas_share_the_reviews_of_a_stream_of_applies(
    install: Install,
) -> None:
    # The API server picks one of the Service's ready endpoints only when it dials, and keeps
    # its connections: a replica added by a scale-up gets reviews because the webhook closes
    # every connection older than --max-connection-age after its response (webhook/worker.py).
    # 1 s instead of the default 30 s keeps this test short: the stream redials every second.
    install.kubectl(
        "-n", SYSTEM, "set", "env", "deployment/mxjob-webhook",
        "MXJOB_WEBHOOK_MAX_CONNECTION_AGE=1",
    )  # fmt: skip
    install.kubectl("-n", SYSTEM, "scale", "deployment/mxjob-webhook", "--replicas=3")
    # The old pods (no limit on age) serve their connections until they stop: wait them out.
    webhook_settled(install, replicas=3)
    addresses = endpoint_addresses(install, "mxjob-webhook")
    before = {a: webhook_reviews(install, a) for a in addresses}
    # One kubectl apply after the other, never two at once: 30 of them (seconds long, so the API
    # server redials several times at a 1 s age), more, up to 240 (about 30 s: a creation is one
    # review, so an apply is short), while a replica has none.
    applied = 0
    answered = dict.fromkeys(addresses, 0)
    while applied < 240 and not (applied >= 30 and all(answered.values())):
        install.kubectl(
            "apply", "-n", install.namespace, "-f", "-",
            input_text=mxjob(f"stream-{applied}", suspend=True),
        )  # fmt: skip
        applied += 1
        if applied >= 30:
            answered = {a: webhook_reviews(install, a) - before[a] for a in addresses}
    # A creation is one review (the mutating webhook).
    assert sum(answered.values()) >= applied, answered
    assert all(count > 0 for count in answered.values()), answered


def controller_leaders(install: Install) -> dict[str, bool]:
    """Each running controller pod's own ``mxjob_controller_is_leader``, by pod name."""
    leaders = {}
    for pod in install.pods("controller"):
        if pod["status"].get("phase") != "Running" or not pod["status"].get("podIP"):
            continue
        url = f"https://{pod['status']['podIP']}:{METRICS_PORT}/metrics"
        # This overlay mounts a pair for the webhook's Service name; not what is checked here.
        context = ssl.create_default_context(cafile=str(install.ca_file))
        context.check_hostname = False
        try:
            text = scrape(install, url, context=context, timeout=2)
        except OSError:
            continue
        found = re.search(r"^mxjob_controller_is_leader (\S+)$", text, re.M)
        leaders[pod["metadata"]["name"]] = found is not None and float(found.group(1)) == 1.0
    return leaders


def lease_holder(install: Install) -> str:
    lease = install.api.request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM}/leases/mxjob-controller"
    )
    return str(lease["spec"].get("holderIdentity") or "")


def test_two_controller_replicas_elect_one_leader_and_the_standby_takes_over(
    install: Install,
) -> None:
    leaders = wait_for(
        "both controller pods to answer /metrics",
        lambda: controller_leaders(install),
        lambda found: len(found) == 2,
        timeout=60,
    )
    assert sorted(leaders.values()) == [False, True], leaders
    leader = next(name for name, leading in leaders.items() if leading)
    assert lease_holder(install) == leader

    creations = PodCreations(install.api, install.namespace)
    sleeper = ["sh", "-c", "sleep 1"]
    jobs = [f"takeover-{n}" for n in range(8)]

    def apply(name: str) -> None:
        job = json.loads(mxjob(name))
        job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] = (
            sleeper
        )
        install.kubectl("apply", "-n", install.namespace, "-f", "-", input_text=json.dumps(job))

    for name in jobs[:4]:  # in flight when the leader goes
        apply(name)
    install.kubectl("-n", SYSTEM, "delete", "pod", leader, "--wait=false")
    for name in jobs[4:]:  # created while there is no leader, or just a new one
        apply(name)
    # The standby, or the pod the ReplicaSet starts at once in the leader's place: whichever
    # asks first once the leader has released the Lease on SIGTERM.
    holder = wait_for(
        "a new Lease holder",
        lambda: lease_holder(install),
        lambda h: h not in ("", leader),
        timeout=60,
    )
    wait_for(
        "the new holder to report itself leader",
        lambda: controller_leaders(install),
        lambda found: found.get(holder) is True,
        timeout=60,
    )

    def state(name: str) -> str:
        path = f"/apis/kubeflow.org/v1/namespaces/{install.namespace}/mxjobs/{name}"
        return str(install.api.request("GET", path).get("status", {}).get("state"))

    wait_for(
        "every job to succeed",
        lambda: {n: state(n) for n in jobs},
        lambda states: set(states.values()) == {"Succeeded"},
        timeout=60,
    )
    creations.stop()
    # Not reconciled twice: each job's one pod was created once, by one of the two leaders.
    created = sorted(name for name, _ in creations.seen)
    assert created == sorted(f"{job}-worker-0" for job in jobs), created
    # The replacement pod of the deleted leader became the new standby: still one leader.
    final = wait_for(
        "the replacement controller pod",
        lambda: controller_leaders(install),
        lambda found: len(found) == 2,
        timeout=60,
    )
    assert sorted(final.values()) == [False, True] and final[holder], final
    assert leader not in final


@dataclass
class Traffic:
    """A client creating MXJobs without pause, a valid and an invalid one in turn."""

    api: Api
    namespace: str
    valid: list[str]
    valid_refused: list[str]
    invalid_admitted: list[str]
    invalid_refused_not_by_review: list[str]
    latencies: list[float]

    @classmethod
    def start(cls, api: Api, namespace: str) -> tuple[Traffic, threading.Event, threading.Thread]:
        traffic = cls(api, namespace, [], [], [], [], [])
        stop = threading.Event()
        thread = threading.Thread(target=traffic.run, args=(stop,), daemon=True)
        thread.start()
        return traffic, stop, thread

    def create(self, body: dict[str, Any]) -> tuple[bool, str]:
        started = time.monotonic()
        try:
            self.api.request(
                "POST", f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/mxjobs", body=body
            )
            return True, ""
        except ApiError as error:
            return False, str(error)
        finally:
            self.latencies.append(time.monotonic() - started)

    def run(self, stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            name = f"roll-{n}"
            admitted, message = self.create(json.loads(mxjob(name)))
            (self.valid if admitted else self.valid_refused).append(f"{name}: {message}")
            bad = json.loads(mxjob(f"roll-bad-{n}"))
            bad["spec"]["mxReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
            admitted, message = self.create(bad)
            if admitted:
                self.invalid_admitted.append(f"roll-bad-{n}")
            elif "denied the request" not in message:
                self.invalid_refused_not_by_review.append(message)
            n += 1
            stop.wait(0.2)


def roll(install: Install, deployment: str) -> None:
    """Change the pod template's annotation and wait for the rollout."""
    patch = {"spec": {"template": {"metadata": {"annotations": {"rolled": str(time.time())}}}}}
    install.kubectl(
        "-n", SYSTEM, "patch", f"deployment/{deployment}", "-p", json.dumps(patch)
    )  # fmt: skip
    install.kubectl(
        "-n", SYSTEM, "rollout", "status", f"deployment/{deployment}", f"--timeout={SETTLE}s"
    )  # fmt: skip


def test_rolling_updates_under_traffic_refuse_no_valid_job_and_admit_no_invalid_one(
    install: Install,
) -> None:
    install.kubectl("-n", SYSTEM, "scale", "deployment/mxjob-webhook", "--replicas=2")
    install.kubectl(
        "-n", SYSTEM, "rollout", "status", "deployment/mxjob-webhook", f"--timeout={SETTLE}s"
    )  # fmt: skip
    creations = PodCreations(install.api, install.namespace)
    traffic, stop, thread = Traffic.start(install.api, install.namespace)
    wait_for(
        "the traffic's first answers", lambda: len(traffic.latencies), lambda n: n >= 4, timeout=30
    )
    roll(install, "mxjob-webhook")
    roll(install, "mxjob-controller")
    stop.set()
    thread.join(timeout=30)
    names = [entry.split(":", 1)[0] for entry in traffic.valid]

    def state(name: str) -> str:
        path = f"/apis/kubeflow.org/v1/namespaces/{install.namespace}/mxjobs/{name}"
        return str(install.api.request("GET", path).get("status", {}).get("state"))

    assert traffic.valid_refused == []
    assert traffic.invalid_admitted == []
    assert traffic.invalid_refused_not_by_review == []
    wait_for(
        "every admitted job to succeed",
        lambda: [n for n in names if state(n) != "Succeeded"],
        lambda unfinished: not unfinished,
        timeout=60,
    )
    creations.stop()
    created = sorted(name for name, _ in creations.seen if name.startswith("roll-"))
    assert created == sorted(f"{name}-worker-0" for name in names)


class Flood:
    """``threads`` clients creating valid (suspended) MXJobs without pause; refusals counted.

    Suspended jobs start no pods, so the flood loads the webhook and the API server, not the
    kubelet. Every refusal is a valid job the install failed to admit.
    """

    def __init__(self, api: Api, namespace: str, *, prefix: str, threads: int) -> None:
        self.api = api
        self.namespace = namespace
        self.prefix = prefix
        self.admitted = 0
        self.refused: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, client: int) -> None:
        path = f"/apis/kubeflow.org/v1/namespaces/{self.namespace}/mxjobs"
        n = 0
        while not self._stop.is_set():
            body = json.loads(mxjob(f"{self.prefix}-{client}-{n}", suspend=True))
            try:
                self.api.request("POST", path, body=body)
            except ApiError as error:
                with self._lock:
                    self.refused.append(str(error))
            else:
                with self._lock:
                    self.admitted += 1
            n += 1

    def answers(self) -> int:
        """Requests answered so far, admitted or refused."""
        with self._lock:
            return self.admitted + len(self.refused)

    def keep_on(self, *, answers: int) -> None:
        """Wait until ``answers`` more requests are answered: the flood covers what comes next
        (or what just happened) for that many of them."""
        target = self.answers() + answers
        wait_for(
            f"{answers} more answers to the flood", self.answers, lambda n: n >= target, timeout=60
        )

    def stop(self) -> Flood:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        return self

    def reasons(self) -> dict[str, int]:
        """Refusals by the part of the message that says why, without the object's name."""
        counts: dict[str, int] = {}
        for message in self.refused:
            reason = re.sub(r"mxjobs?[\w. \"-]*\b" + self.prefix + r"-\d+-\d+", "…", message)
            reason = re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "<pod>", reason)[-160:]
            counts[reason] = counts.get(reason, 0) + 1
        return counts


class ReadyEndpoints:
    """The fewest ready addresses the webhook Service's EndpointSlice had, sampled meanwhile."""

    def __init__(self, install: Install) -> None:
        self.install = install
        self.fewest: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            count = len(endpoint_addresses(self.install, "mxjob-webhook"))
            self.fewest = count if self.fewest is None else min(self.fewest, count)
            self._stop.wait(0.05)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(timeout=10)
        assert self.fewest is not None
        return self.fewest


def evict(install: Install, pod: str) -> bool:
    """POST a policy/v1 Eviction for ``pod``, as ``kubectl drain`` does; False on 429."""
    try:
        install.api.request(
            "POST",
            f"/api/v1/namespaces/{SYSTEM}/pods/{pod}/eviction",
            body={
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": pod, "namespace": SYSTEM},
            },
        )
    except ApiError as error:
        if error.status == 429:  # the PodDisruptionBudget allows no disruption now
            return False
        raise
    return True


def _evict_counted(install: Install, pod: str, tries: list[bool]) -> list[bool]:
    """:func:`evict` once more; every outcome so far, this one last."""
    tries.append(evict(install, pod))
    return tries


def drain_webhook(install: Install, *, budget: bool) -> tuple[int, int]:
    """Evict every webhook pod as ``kubectl drain`` does (429: try again in a second), and wait
    until every evicted pod has a Ready replacement.

    Returns the evictions refused with 429 and the fewest ready webhook endpoints seen.
    """
    # Pods still terminating from before are out of the endpoints already: no need to wait.
    webhook_settled(install, terminated=False)
    if budget:
        wait_for(
            "the PodDisruptionBudget to allow one disruption",
            lambda: install.api.request(
                "GET", f"/apis/policy/v1/namespaces/{SYSTEM}/poddisruptionbudgets/mxjob-webhook"
            ).get("status", {}),
            lambda status: status.get("disruptionsAllowed") == 1,
            timeout=60,
        )
    names = [p["metadata"]["name"] for p in install.pods("webhook")]
    endpoints = ReadyEndpoints(install)
    refused = 0
    for name in names:
        # As kubectl drain: an eviction refused with 429 is asked again a second later.
        tries = wait_for(
            f"{name} evicted",
            functools.partial(_evict_counted, install, name, []),
            lambda outcomes: outcomes[-1],
            timeout=SETTLE,
            interval=1,
        )
        refused += tries.count(False)
    wait_for(
        "two ready webhook endpoints, none of them an evicted pod",
        lambda: [p for p in install.pods("webhook") if p["metadata"]["name"] not in names],
        lambda fresh: (
            len(fresh) == 2
            and endpoint_addresses(install, "mxjob-webhook")
            == {p["status"].get("podIP") for p in fresh}
        ),
        timeout=SETTLE,
    )
    return refused, endpoints.stop()


def test_the_webhook_budget_keeps_a_replica_serving_through_a_drain(install: Install) -> None:
    flood = Flood(install.api, install.namespace, prefix="drain-pdb", threads=2)
    with_pdb = drain_webhook(install, budget=True)
    flood.keep_on(answers=10)  # the replacements serve the flood too
    guarded = flood.stop()

    install.kubectl(
        "-n", SYSTEM, "delete", "poddisruptionbudget", "mxjob-webhook"
    )  # fmt: skip
    flood = Flood(install.api, install.namespace, prefix="drain-nopdb", threads=2)
    without_pdb = drain_webhook(install, budget=False)
    flood.keep_on(answers=10)
    unguarded = flood.stop()
    install.kubectl("apply", "-k", str(install.overlay))  # the budget back

    # (evictions refused with 429, fewest ready webhook endpoints) of each drain
    assert with_pdb[0] >= 1 and with_pdb[1] >= 1, with_pdb
    assert guarded.refused == [] and guarded.admitted > 0, guarded.reasons()
    assert without_pdb[0] == 0 and without_pdb[1] == 0, without_pdb
    assert len(unguarded.refused) > 0, unguarded.admitted
    assert all("failed calling webhook" in m for m in unguarded.refused), unguarded.reasons()
    wait_for(
        "the PodDisruptionBudget to be back",
        lambda: install.api.request(
            "GET", f"/apis/policy/v1/namespaces/{SYSTEM}/poddisruptionbudgets/mxjob-webhook"
        ).get("status", {}),
        lambda status: status.get("disruptionsAllowed") == 1,
        timeout=60,
    )


class Timeline:
    """When each webhook pod was seen deleted, and its address seen leaving the ready endpoints.

    The API server chooses among the EndpointSlice's ready addresses, so the second time is when
    it stopped dialling the pod (give or take its own watch's delay). Both are listed before the
    constructor returns and watched from the lists' resourceVersions: nothing after it is missed.
    """

    def __init__(self, install: Install) -> None:
        self.install = install
        self.deleted: dict[str, float] = {}
        self.addresses: dict[str, str] = {}
        self.left: dict[str, float] = {}
        self._ready: dict[str, set[str]] = {}
        self._stop = threading.Event()
        self._threads = []
        for path, handle in (
            (f"/api/v1/namespaces/{SYSTEM}/pods", self._pod),
            (f"/apis/discovery.k8s.io/v1/namespaces/{SYSTEM}/endpointslices", self._slice),
        ):
            listing = install.api.request("GET", path)
            for item in listing["items"]:
                handle(item, time.time())
            version = listing["metadata"]["resourceVersion"]
            self._threads.append(
                threading.Thread(target=self._watch, args=(path, version, handle), daemon=True)
            )
        for thread in self._threads:
            thread.start()

    def _watch(
        self, path: str, version: str, handle: Callable[[dict[str, Any], float], None]
    ) -> None:
        while not self._stop.is_set():
            query = [("resourceVersion", version), ("timeoutSeconds", "2")]
            for event in self.install.api.watch(path, query=query):
                item = event["object"]
                version = item["metadata"]["resourceVersion"]
                handle(item, time.time())

    def _pod(self, pod: dict[str, Any], now: float) -> None:
        name = pod["metadata"]["name"]
        if pod["status"].get("podIP"):
            self.addresses.setdefault(name, pod["status"]["podIP"])
        if pod["metadata"].get("deletionTimestamp"):
            self.deleted.setdefault(name, now)

    def _slice(self, endpoint_slice: dict[str, Any], now: float) -> None:
        if endpoint_slice["metadata"]["labels"].get("kubernetes.io/service-name") != (
            "mxjob-webhook"
        ):
            return
        before = set().union(*self._ready.values())
        self._ready[endpoint_slice["metadata"]["name"]] = {
            address
            for endpoint in endpoint_slice.get("endpoints") or []
            if endpoint.get("conditions", {}).get("ready")
            for address in endpoint["addresses"]
        }
        for address in before - set().union(*self._ready.values()):
            self.left.setdefault(address, now)

    def saw_leave(self, pods: list[str]) -> bool:
        """Every one of ``pods`` seen deleted, and its address seen leaving the endpoints."""
        return all(pod in self.deleted and self.addresses.get(pod) in self.left for pod in pods)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def logged(self, pod: str, prefix: str) -> float:
        """When the pod's gunicorn first logged a message starting with ``prefix``."""
        for line in (self.install.pod_logs / f"{SYSTEM}_{pod}.log").read_text().splitlines():
            if line.startswith("{") and json.loads(line)["message"].startswith(prefix):
                return datetime.datetime.fromisoformat(json.loads(line)["time"]).timestamp()
        raise AssertionError(f"{pod} never logged {prefix!r}")

    def stages(self, pod: str) -> tuple[float, float, float]:
        """Seconds from the pod's deletion to its SIGTERM, to its leaving the endpoints, and to
        its gunicorn worker's exit (the listening socket closes with it)."""
        deleted = self.deleted[pod]
        return (
            self.logged(pod, "Handling signal: term") - deleted,
            self.left[self.addresses[pod]] - deleted,
            self.logged(pod, "Worker exiting") - deleted,
        )


@dataclass
class Roll:
    """One webhook roll under a flood: what the clients saw, and each old pod's stages."""

    flood: Flood
    stages: dict[str, tuple[float, float, float]]

    def describe(self) -> str:
        stages = ", ".join(
            f"SIGTERM at {signal:+.2f} s, out of the endpoints at {left:+.2f} s,"
            f" worker gone at {exited:+.2f} s"
            for signal, left, exited in self.stages.values()
        )
        return (
            f"{self.flood.admitted} admitted, {len(self.flood.refused)} refused"
            f" {self.flood.reasons()}; old pods after their deletion: {stages}"
        )


def roll_webhook_under_flood(
    install: Install, change: Callable[[], object], *, prefix: str
) -> Roll:
    """Apply ``change`` to the webhook Deployment while four clients create MXJobs flat out.

    The flood runs until every old pod is gone, so the SIGTERM at the end of each one's
    termination falls inside it.
    """
    webhook_settled(install)
    old = [p["metadata"]["name"] for p in install.pods("webhook")]
    timeline = Timeline(install)
    flood = Flood(install.api, install.namespace, prefix=prefix, threads=4)
    flood.keep_on(answers=8)  # flowing before the change
    change()
    webhook_settled(install)
    flood.keep_on(answers=8)  # and after it
    # The timeline's watches may lag the reads webhook_settled made: wait for what they saw.
    wait_for(
        "the timeline to see every old pod deleted and out of the endpoints",
        lambda: timeline.saw_leave(old),
        bool,
        timeout=30,
    )
    flood.stop()
    timeline.stop()
    return Roll(flood, {pod: timeline.stages(pod) for pod in old})


def test_the_pre_stop_sleep_keeps_a_rolling_update_from_refusing_reviews(
    install: Install,
) -> None:
    # Patching the hook out rolls pods that still have it: the "with" measurement.
    remove_hook = [{"op": "remove", "path": "/spec/template/spec/containers/0/lifecycle"}]
    patch = ["-n", SYSTEM, "patch", "deployment/mxjob-webhook", "--type=json"]
    with_hook = roll_webhook_under_flood(
        install,
        lambda: install.kubectl(*patch, "-p", json.dumps(remove_hook)),
        prefix="prestop",
    )
    # Applying the overlay again puts it back, rolling the pods without it: "without".
    without_hook = roll_webhook_under_flood(
        install,
        lambda: install.kubectl("apply", "-k", str(install.overlay)),
        prefix="noprestop",
    )
    # With the hook, each old pod left the API server's endpoints ~10 s before its SIGTERM:
    # no review can be sent to a pod that has stopped taking connections.
    assert with_hook.flood.refused == [] and with_hook.flood.admitted > 0, with_hook.describe()
    assert all(signal - left > 8 for signal, left, _ in with_hook.stages.values()), (
        with_hook.describe()
    )
    # Without it, SIGTERM and leaving the endpoints come within the same fraction of a second
    # (docs/explanation/admission.md, "Stopping a webhook pod"): the hook's separation is gone.
    assert all(
        signal < 1 and abs(signal - left) < 1 for signal, left, _ in without_hook.stages.values()
    ), without_hook.describe()
    assert without_hook.flood.admitted > 0, without_hook.describe()
    # What it can cost: a worker with no connection left exits at once, and the API server,
    # still listing the pod, dials it and is refused (seen in some runs, not all).
    assert all("failed calling webhook" in m for m in without_hook.flood.refused), (
        without_hook.describe()
    )
    template = install.api.request(
        "GET", f"/apis/apps/v1/namespaces/{SYSTEM}/deployments/mxjob-webhook"
    )["spec"]["template"]["spec"]["containers"][0]
    assert template["lifecycle"]["preStop"]  # the install is whole again
