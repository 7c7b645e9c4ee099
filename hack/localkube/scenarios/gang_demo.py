"""``make demo-gang``: two GPU jobs compete for six GPUs, without and with gang scheduling.

The stage: a control plane with kube-scheduler and the ``scheduling.k8s.io/v1alpha2`` API
(``ControlPlaneSettings.workload_scheduling``), three test-kubelet nodes with two
``nvidia.com/gpu`` each (the kubelets only run pods; kube-scheduler binds them), the operator
(CRD, webhook, controller). Two MXJobs each need one Scheduler (no GPU) and four one-GPU Workers.
The nodes are labelled by rack (``RACK_LABEL``: two nodes in ``rack-a``, one in ``rack-b``) for
the topology-aware gangs of tests/e2e/test_gang_scheduling.py.

Their pods arrive interleaved, one of A then one of B, the worst case for a scheduler that
places pods one at a time: the order is made exact by creating every pod behind a scheduling
gate (``spec.schedulingGates``, part of the job's template) and lifting the gates in that order.

- ``--gang-scheduler=none``: each job ends up with three of its four GPUs, and neither runs.
- ``--gang-scheduler=native``: job A's five pods are bound together, B's stay Pending as a
  whole; when A finishes (the kubelets end its pods), B's are bound and B succeeds.

The e2e test ``tests/e2e/test_gang_scheduling.py`` drives the same helpers and asserts what the
demo prints.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from localkube.base.api import Api, NotFound, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.base.processes import stop_process
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator
from localkube.plane.settings import ControlPlaneSettings
from localkube.scenarios.jobwatch import job_pods
from shared.constants import LABEL_REPLICA_TYPE

GPU = "nvidia.com/gpu"
GATE = "mxjob.kubeflow.org/release"
"""The scheduling gate the scene lifts pod by pod to fix the order in which pods arrive."""
JOB_LABEL = "training.kubeflow.org/job-name"
NODE_GPUS = 2
NODES = 3
RACK_LABEL = "topology.kubernetes.io/rack"
RACKS = {"gpu-node-0": "rack-a", "gpu-node-1": "rack-a", "gpu-node-2": "rack-b"}
"""Two racks of unequal size, for ``runPolicy.schedulingPolicy.topologyKey``: the nodes are
labelled as a cluster labels its racks."""


@dataclass
class Scene:
    """A running stage: plane, operator (webhook + CRD), GPU nodes; controllers come and go."""

    plane: ControlPlane
    operator: LocalOperator
    api: Api
    kubelets: tuple[TestKubelet, ...]
    webhook_pid: int

    def start_controller(self, *, gang_scheduler: str, namespace: str) -> int:
        process, _, _ = self.operator.start_controller(
            f"--gang-scheduler={gang_scheduler}",
            f"--namespace={namespace}",
            "--workers=2",
            log_name=f"controller-{namespace}.log",
        )
        return process.pid

    def finish_pods(self, namespace: str, job: str) -> None:
        """The job's containers all exit 0, the Scheduler's last: its exit decides the job's
        success, after which the controller may delete the job's other pods (a pod deleted
        meanwhile has nothing left to finish)."""
        pods = sorted(job_pods(self.api, namespace, job).items(), key=_scheduler_last)
        for name, pod in pods:
            node = pod.get("spec", {}).get("nodeName")
            kubelet = next(k for k in self.kubelets if k.node_name == node)
            with contextlib.suppress(NotFound):
                kubelet.terminate(namespace, name, exit_code=0)


def _scheduler_last(item: tuple[str, dict[str, Any]]) -> tuple[bool, str]:
    labels = item[1].get("metadata", {}).get("labels", {})
    return labels.get(LABEL_REPLICA_TYPE, "").lower() == "scheduler", item[0]


@contextlib.contextmanager
def scene(state_dir: Path) -> Iterator[Scene]:
    """Start the stage in ``state_dir``; stop everything on the way out."""
    plane = ControlPlane(ControlPlaneSettings(state_dir=state_dir, workload_scheduling=True))
    plane.up()
    operator = LocalOperator(plane)
    webhook_pid = 0
    kubelets: list[TestKubelet] = []
    try:
        webhook_pid, port = operator.start_webhook()
        operator.install_crd(webhook_port=port)
        operator.register_webhooks(webhook_port=port)
        # kube-controller-manager's garbage collector learns of new kinds (MXJob) only at its
        # next discovery, up to 30 s away; started now, it knows them at once, so a deleted
        # job's pods, Workload and PodGroup go in seconds.
        plane.restart_component("kube-controller-manager")
        api = Api.from_kubeconfig(plane.kubeconfig)
        for number in range(NODES):
            kubelet = TestKubelet(
                api,
                node_name=f"gpu-node-{number}",
                bind=False,
                capacity={"cpu": "16", "memory": "64Gi", "pods": "110", GPU: str(NODE_GPUS)},
            )
            kubelets.append(kubelet.start())
            label_node(api, kubelet.node_name, {RACK_LABEL: RACKS[kubelet.node_name]})
        yield Scene(plane, operator, api, tuple(kubelets), webhook_pid)
    finally:
        for kubelet in kubelets:
            kubelet.stop()
        stop_process(webhook_pid)
        plane.down()


def gpu_job(name: str, *, workers: int = 4, gated: bool = True) -> dict[str, Any]:
    """An MXTrain job: one Scheduler without GPU, ``workers`` Workers with one GPU each."""

    def template(command: str, gpus: int) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": "mxnet",
            "image": "mxjob/mxnet:gpu",
            "command": ["python", command],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        }
        if gpus:
            container["resources"]["limits"] = {GPU: str(gpus)}
        spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 1}
        if gated:
            spec["schedulingGates"] = [{"name": GATE}]
        return {"spec": spec}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name},
        "spec": {
            "jobMode": "MXTrain",
            "mxReplicaSpecs": {
                "Scheduler": {"replicas": 1, "template": template("scheduler.py", 0)},
                "Worker": {"replicas": workers, "template": template("worker.py", 1)},
            },
        },
    }


def label_node(api: Api, node: str, labels: dict[str, str]) -> None:
    api.request(
        "PATCH",
        f"/api/v1/nodes/{node}",
        body={"metadata": {"labels": labels}},
        content_type="application/merge-patch+json",
    )


def racks(api: Api, namespace: str, job: str) -> dict[str, str]:
    """``pod → rack`` of one job's bound pods (the ``RACK_LABEL`` of the node it is on)."""
    nodes = {
        n["metadata"]["name"]: n["metadata"].get("labels", {}).get(RACK_LABEL, "-")
        for n in api.request("GET", "/api/v1/nodes")["items"]
    }
    return {
        name: nodes.get(pod["spec"]["nodeName"], "-")
        for name, pod in sorted(job_pods(api, namespace, job).items())
        if pod.get("spec", {}).get("nodeName")
    }


def phases(api: Api, namespace: str, job: str) -> dict[str, str]:
    """``pod → phase`` of one job's pods, Pending pods marked bound or not."""
    found = {}
    for name, pod in sorted(job_pods(api, namespace, job).items()):
        phase = pod.get("status", {}).get("phase", "Pending")
        if phase == "Pending" and pod.get("spec", {}).get("nodeName"):
            phase = "Pending(bound)"
        found[name] = phase
    return found


def bound(api: Api, namespace: str, job: str) -> int:
    return sum(1 for p in job_pods(api, namespace, job).values() if p["spec"].get("nodeName"))


def wait_until(probe: Callable[[], bool], *, timeout: float, what: str) -> float:
    """Poll ``probe``; return the seconds it took, or fail after ``timeout``."""
    started = time.monotonic()
    while not probe():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what}: not after {timeout:g} s")
        time.sleep(0.05)
    return time.monotonic() - started


def release_interleaved(api: Api, namespace: str, jobs: Sequence[str], *, pods_each: int) -> None:
    """Lift the scheduling gate of one pod of each job in turn (A, B, A, B...): the order in
    which pods reach kube-scheduler. Waits until every job has all its pods first."""
    wait_until(
        lambda: all(len(job_pods(api, namespace, j)) == pods_each for j in jobs),
        timeout=90,  # the controller's start, a Volcano enqueue session, then 10 pods
        what="every pod created",
    )
    ordered = [sorted(job_pods(api, namespace, j)) for j in jobs]
    # The Scheduler pods sort after the workers by name; release them first, as created.
    ordered = [sorted(names, key=lambda n: "-scheduler-" not in n) for names in ordered]
    for turn in range(pods_each):
        for names in ordered:
            api.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{names[turn]}",
                body=[{"op": "remove", "path": "/spec/schedulingGates"}],
                content_type="application/json-patch+json",
            )
            time.sleep(0.05)  # one at a time, as a busy cluster's pods arrive


def job_state(api: Api, namespace: str, job: str) -> str:
    found = api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{job}")
    return str(found.get("status", {}).get("state", ""))


# -- the demo -----------------------------------------------------------------------------------
def _show(out: TextIO, api: Api, namespace: str, jobs: Sequence[str], title: str) -> None:
    out.write(f"\n  {title}\n")
    for job in jobs:
        states = phases(api, namespace, job)
        out.write(f"    {job} (state {job_state(api, namespace, job) or '-'}):\n")
        for name, phase in states.items():
            pod = job_pods(api, namespace, job)[name]
            node = pod["spec"].get("nodeName") or "-"
            out.write(f"      {name:24} {phase:16} {node}\n")
    out.flush()


def run_round(setup: Scene, *, gang_scheduler: str, out: TextIO) -> dict[str, float]:
    """One round of the demo in a namespace of its own; returns its timings."""
    namespace = f"gang-{gang_scheduler}"
    ensure_namespace(setup.api, namespace)
    pid = setup.start_controller(gang_scheduler=gang_scheduler, namespace=namespace)
    api, jobs = setup.api, ("job-a", "job-b")
    timings: dict[str, float] = {}
    out.write(
        f"\n== --gang-scheduler={gang_scheduler}: 2 jobs x (1 Scheduler + 4 one-GPU Workers), "
        f"{NODES * NODE_GPUS} GPUs\n"
    )
    try:
        for job in jobs:
            api.request(
                "POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs", body=gpu_job(job)
            )
        release_interleaved(api, namespace, jobs, pods_each=5)
        if gang_scheduler == "none":
            wait_until(
                lambda: bound(api, namespace, "job-a") + bound(api, namespace, "job-b") == 8,
                timeout=60,
                what="6 GPUs taken",
            )
            time.sleep(1)
            _show(out, api, namespace, jobs, "pods placed one by one: each job holds 3 of 4 GPUs")
            return timings
        timings["last gate lifted -> job-a's gang bound"] = wait_until(
            lambda: bound(api, namespace, "job-a") == 5, timeout=60, what="job-a bound"
        )
        wait_until(
            lambda: job_state(api, namespace, "job-a") == "Running",
            timeout=60,
            what="job-a Running",
        )
        time.sleep(1)
        _show(out, api, namespace, jobs, "gang scheduling: job-a placed whole, job-b waits whole")
        finished = time.monotonic()
        setup.finish_pods(namespace, "job-a")
        wait_until(lambda: bound(api, namespace, "job-b") == 5, timeout=60, what="job-b bound")
        timings["A finished -> B bound"] = time.monotonic() - finished
        wait_until(
            lambda: job_state(api, namespace, "job-b") == "Running",
            timeout=60,
            what="job-b Running",
        )
        _show(out, api, namespace, jobs, "job-a finished: job-b's gang placed")
        setup.finish_pods(namespace, "job-b")
        wait_until(
            lambda: job_state(api, namespace, "job-b") == "Succeeded",
            timeout=60,
            what="job-b Succeeded",
        )
        timings["A finished -> B Succeeded"] = time.monotonic() - finished
        _show(out, api, namespace, jobs, "both succeeded")
        return timings
    finally:
        # The pods carry the controller's tracking finalizer: delete while it still runs.
        try:
            clear(api, namespace, jobs)
        finally:
            stop_process(pid)


def clear(api: Api, namespace: str, jobs: Sequence[str]) -> None:
    """Delete the jobs and wait until their pods are gone and the GPUs free again."""
    for job in jobs:
        with contextlib.suppress(NotFound):
            api.request(
                "DELETE",
                f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{job}",
                body={"propagationPolicy": "Background"},
            )
    wait_until(
        lambda: not any(job_pods(api, namespace, job) for job in jobs),
        timeout=60,
        what="the jobs' pods gone",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.gang_demo", description=__doc__
    )
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / ".local" / "gang-demo")
    args = parser.parse_args(argv)
    out = sys.stdout
    with scene(args.state_dir) as setup:
        for mode in ("none", "native"):
            timings = run_round(setup, gang_scheduler=mode, out=out)
            for what, seconds in timings.items():
                out.write(f"  {what}: {seconds:.2f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
