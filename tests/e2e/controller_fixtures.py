"""Controller processes and MXJob helpers for the controller's end-to-end tests.

Each test starts its own ``mxjob-controller`` process(es) through
``LocalOperator.start_controller`` (the same command line ``make dev-up`` uses), watching only
the test's namespace: tests stay independent of jobs other tests leave behind, and several tests
kill or duplicate the process. Import the fixtures into a test module explicitly.
"""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from localkube.base.api import Api, ApiError
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import RunningOperator
from tests.helpers import mxjobs
from tests.helpers.waiting import wait_for

GROUP_PATH = "/apis/kubeflow.org/v1"
SELECTOR = "training.kubeflow.org/operator-name=mxjob-operator"


@dataclass
class ControllerProcess:
    """One running ``mxjob-controller``."""

    process: subprocess.Popen[bytes]
    metrics_port: int
    health_port: int
    identity: str
    log_name: str
    args: tuple[str, ...] = field(default_factory=tuple)

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL, as a node failure or the OOM killer would."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM and wait for the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def metrics(self) -> str:
        with urllib.request.urlopen(
            f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5
        ) as response:
            return str(response.read().decode())

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample (0 when absent)."""
        wanted = {f'{k}="{v}"' for k, v in labels.items()}
        for line in self.metrics().splitlines():
            if line.startswith("#") or " " not in line:
                continue
            series, value = line.rsplit(" ", 1)
            metric_name, _, label_text = series.partition("{")
            present = set(label_text.rstrip("}").split(",")) if label_text else set()
            if metric_name == name and wanted <= present:
                return float(value)
        return 0.0


StartController = Callable[..., ControllerProcess]


@pytest.fixture
def start_controller(
    local_operator: RunningOperator, namespace: str, request: pytest.FixtureRequest
) -> Iterator[StartController]:
    """Start a controller for this test's namespace: ``start_controller(*flags, identity=...)``.

    Every process started is stopped after the test (SIGTERM, then SIGKILL).
    """
    started: list[ControllerProcess] = []

    def start(
        *extra: str, identity: str | None = None, wait_ready: bool = True
    ) -> ControllerProcess:
        number = len(started)
        identity = identity or f"{request.node.name[:40]}-{number}"
        args = (f"--namespace={namespace}", f"--identity={identity}", "--workers=2", *extra)
        log_name = f"controller-{namespace}-{number}.log"
        process, metrics_port, health_port = local_operator.local.start_controller(
            *args, log_name=log_name, wait_ready=wait_ready
        )
        running = ControllerProcess(process, metrics_port, health_port, identity, log_name, args)
        started.append(running)
        return running

    yield start
    for running in started:
        stop_process(running.pid)


@pytest.fixture
def controller(start_controller: StartController) -> ControllerProcess:
    """One controller (no leader election) for this test's namespace."""
    return start_controller()


# -- MXJobs -------------------------------------------------------------------------------------
def mxjob(
    name: str,
    *,
    workers: int = 2,
    servers: int = 1,
    restart_policy: str | None = None,
    run_policy: dict[str, Any] | None = None,
    success_policy: str | None = None,
    grace_seconds: int | None = 1,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An MXTrain job: 1 Scheduler, ``servers`` Servers, ``workers`` Workers, each running
    ``python <its type>.py`` (the fake mxnet image's scripts: scheduler.py, server.py...).

    Pods get ``grace_seconds`` of terminationGracePeriodSeconds (None: the default 30 s): the
    time pods still running when the job finishes have before cleanPodPolicy deletes them,
    kept short so that tests do not wait for it.
    """
    counts = {"Scheduler": 1, "Server": servers, "Worker": workers}
    replicas = {
        rtype: mxjobs.replica(
            count,
            containers=[mxjobs.container(command=["python", f"{rtype.lower()}.py"])],
            restart_policy=restart_policy,
            grace_seconds=grace_seconds,
        )
        for rtype, count in counts.items()
        if count
    }
    return mxjobs.mxjob(
        name,
        namespace=namespace,
        labels=labels,
        replicas=replicas,
        run_policy=run_policy or None,
        success_policy=success_policy,
    )


def create_job(api: Api, namespace: str, job: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = api.request(
        "POST", f"{GROUP_PATH}/namespaces/{namespace}/mxjobs", body=job
    )
    return created


def get_job(api: Api, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        job: dict[str, Any] = api.request(
            "GET", f"{GROUP_PATH}/namespaces/{namespace}/mxjobs/{name}"
        )
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    return job


def patch_job(api: Api, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    patched: dict[str, Any] = api.request(
        "PATCH",
        f"{GROUP_PATH}/namespaces/{namespace}/mxjobs/{name}",
        body=patch,
        content_type="application/merge-patch+json",
    )
    return patched


def status(api: Api, namespace: str, name: str) -> dict[str, Any]:
    job = get_job(api, namespace, name)
    return dict((job or {}).get("status") or {})


def condition(job_status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for item in job_status.get("conditions") or []:
        if item.get("type") == ctype:
            return dict(item)
    return None


def wait_state(
    api: Api, namespace: str, name: str, state: str, *, timeout: float = 30
) -> dict[str, Any]:
    """Wait until ``status.state`` is ``state``; return the status."""

    return wait_for(
        f"MXJob {name} state {state}",
        lambda: status(api, namespace, name),
        lambda current: current.get("state") == state,
        timeout=timeout,
    )


def pods(api: Api, namespace: str, *, job: str | None = None) -> dict[str, dict[str, Any]]:
    """The operator's pods in ``namespace`` (of one job), by name."""
    selector = SELECTOR + (f",training.kubeflow.org/job-name={job}" if job else "")
    items = api.request(
        "GET", f"/api/v1/namespaces/{namespace}/pods", query=[("labelSelector", selector)]
    )["items"]
    return {p["metadata"]["name"]: p for p in items}


def services(api: Api, namespace: str, *, job: str | None = None) -> dict[str, dict[str, Any]]:
    selector = SELECTOR + (f",training.kubeflow.org/job-name={job}" if job else "")
    items = api.request(
        "GET", f"/api/v1/namespaces/{namespace}/services", query=[("labelSelector", selector)]
    )["items"]
    return {s["metadata"]["name"]: s for s in items}


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def wait_pods_running(
    api: Api, namespace: str, job: str, names: set[str], *, timeout: float = 30
) -> dict[str, dict[str, Any]]:
    """Wait until exactly ``names`` exist (not terminating) and all are Running."""

    def live() -> dict[str, dict[str, Any]]:
        return {
            n: p
            for n, p in pods(api, namespace, job=job).items()
            if not p["metadata"].get("deletionTimestamp")
        }

    return wait_for(
        f"pods {sorted(names)} Running",
        live,
        lambda found: set(found) == names and all(phase(p) == "Running" for p in found.values()),
        timeout=timeout,
    )


def names(job: str, *replicas: str) -> set[str]:
    """``names("j", "scheduler-0", "worker-1")`` → {"j-scheduler-0", "j-worker-1"}."""
    return {f"{job}-{replica}" for replica in replicas}


def kubectl_state(plane: ControlPlane, namespace: str, name: str) -> str:
    """The STATE column of ``kubectl get mxjobs`` for one job."""
    out = plane.kubectl("get", "mxjobs", "-n", namespace, "--no-headers").stdout
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == name:
            return fields[1] if len(fields) > 1 else ""
    raise AssertionError(f"{name} not in kubectl get mxjobs:\n{out}")


def events(api: Api, namespace: str, name: str) -> list[dict[str, Any]]:
    """Events recorded on the MXJob ``name``."""
    items = api.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/events",
        query=[("fieldSelector", f"involvedObject.name={name},involvedObject.kind=MXJob")],
    )["items"]
    return list(items)


def event_reasons(api: Api, namespace: str, name: str) -> set[str]:
    return {e["reason"] for e in events(api, namespace, name)}


def lease_holder(api: Api, namespace: str, name: str = "mxjob-controller") -> str | None:
    try:
        lease = api.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        )
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    holder = (lease.get("spec") or {}).get("holderIdentity")
    return str(holder) if holder else None


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True)
