"""``make demo-multikueue``: an MXJob queued in one cluster and run by MultiKueue in another.

The worker is the real node's cluster (``RealCluster`` in ``<state dir>/real-node``, as
``make demo-node`` starts or reuses it) with Kueue v0.19.2 installed from its own ``config/``
and the operator with the ``kueue-workloads`` component. The manager is a control plane of its own
(``localkube.thirdparty.multikueue.ManagerCluster``) running Kueue v0.19.2 and the operator with
the same component, connected to the worker by a MultiKueueCluster. The example job is applied
on the manager with ``spec.managedBy: kueue.x-k8s.io/multikueue`` and a queue label: the
manager's controller writes its Workload, Kueue dispatches a copy to the worker, whose
controller runs it in containers, and the status comes back to the manager. Each step is printed
with its time, from both clusters' point of view. The manager is stopped at the end; the real
node keeps running, as after ``make demo-node`` (``make dev-down`` stops it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from localkube.base.api import Api, NotFound, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import ImageBuildError
from localkube.plane.controlplane import ControlPlaneError
from localkube.realnode.cluster import REAL_NODE_SUBDIR, RealCluster
from localkube.realnode.settings import RealNodeError
from localkube.scenarios.jobwatch import Progress, load_job
from localkube.scenarios.node_demo import node_fit, start_cluster
from localkube.thirdparty import kueue, multikueue

NAMESPACE = "multikueue-demo"
QUEUE = "multikueue-lq"
COMPONENT = "kueue-workloads"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
DEMO_PODS_READY = kueue.PodsReady(timeout="5m")


def dispatched(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` queued on the manager's LocalQueue and handed to MultiKueue."""
    labels = job.setdefault("metadata", {}).setdefault("labels", {})
    labels["kueue.x-k8s.io/queue-name"] = QUEUE
    job["spec"]["managedBy"] = MULTIKUEUE
    return job


def read_state(api: Api, name: str) -> str:
    """The job's ``status.state`` in one cluster: "absent", "-" before any status."""
    try:
        job = api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/mxjobs/{name}")
    except NotFound:
        return "absent"
    return str((job.get("status") or {}).get("state") or "-")


def follow(
    manager: Api, worker: Api, name: str, *, progress: Progress, timeout: float
) -> dict[str, float]:
    """Print each change of the job's state on either side until the manager shows its end;
    the seconds from now to the first sighting of each (side, state)."""
    started = time.monotonic()
    seen: dict[str, float] = {}
    last = ("", "")
    while time.monotonic() - started < timeout:
        now = (read_state(manager, name), read_state(worker, name))
        if now != last:
            progress.event(f"manager: {now[0]:<10} worker: {now[1]}")
            for side, state in zip(("manager", "worker"), now, strict=True):
                seen.setdefault(f"{side} {state}", time.monotonic() - started)
            last = now
        if now[0] in ("Succeeded", "Failed"):
            break
        progress.tick(f"manager: {now[0]}, worker: {now[1]}")
        time.sleep(0.5)
    progress.done()
    return seen


def set_up(state_dir: Path, *, progress: Progress) -> tuple[RealCluster, multikueue.ManagerCluster]:
    """The worker (real node, Kueue, the operator with the component) and the manager."""
    cluster, _, _ = start_cluster(state_dir / REAL_NODE_SUBDIR, progress=progress)
    work = state_dir / "multikueue"
    progress.event("worker: installing Kueue v0.19.2 from its config/ (built once, ~3 min)")
    seconds = kueue.CURRENT.install(cluster, work / "kueue", pods_ready=DEMO_PODS_READY)
    progress.event(f"worker: Kueue ready in {seconds:.1f} s; the operator with {COMPONENT}")
    cluster.install_operator(work / "install", components=(COMPONENT,))
    progress.event("manager: a control plane of its own with Kueue and the operator")
    manager = multikueue.ManagerCluster(
        work / "manager", components=(f"components/{COMPONENT}",), pods_ready=DEMO_PODS_READY
    ).start()
    progress.event(
        f"manager: operator in {manager.seconds_operator_ready:.1f} s, Kueue in "
        f"{manager.seconds_kueue_ready:.1f} s; connecting MultiKueue to the worker"
    )
    for plane in (manager.plane, cluster.plane):
        ensure_namespace(Api.from_kubeconfig(plane.kubeconfig), NAMESPACE)
    multikueue.connect_workers(
        manager, {"worker": cluster.plane}, namespace=NAMESPACE,
        quota={"cpu": "2", "memory": "8Gi"}, local_queue=QUEUE,
    )  # fmt: skip
    return cluster, manager


def run(job_file: Path, *, state_dir: Path, timeout: float, out: TextIO) -> int:
    """The whole demo; 0 when the job Succeeded and the manager says so."""
    progress = Progress(out)
    manager: multikueue.ManagerCluster | None = None
    try:
        cluster, manager = set_up(state_dir, progress=progress)
        job = dispatched(node_fit(cluster, load_job(job_file)).job)
        name = str(job["metadata"]["name"])
        progress.event(f"manager: kubectl apply -f {job_file.name} (managedBy {MULTIKUEUE})")
        manager.plane.kubectl("apply", "-n", NAMESPACE, "-f", "-", input_text=json.dumps(job))
        seen = follow(
            manager.api, Api.from_kubeconfig(cluster.plane.kubeconfig), name,
            progress=progress, timeout=timeout,
        )  # fmt: skip
        state = read_state(manager.api, name)
    except (ImageBuildError, RealNodeError, ControlPlaneError, kueue.KueueError) as error:
        progress.line(f"the MultiKueue demo failed: {error}")
        return 1
    finally:
        if manager is not None:
            manager.down()
    print("\nSeconds after kubectl apply on the manager:", file=out)
    for what, seconds in sorted(seen.items(), key=lambda item: item[1]):
        print(f"  {what:<24} {seconds:6.1f} s", file=out)
    print("\nThe real node keeps running; `make dev-down` stops it.", file=out)
    return 0 if state == "Succeeded" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localkube.scenarios.multikueue_demo")
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / ".local")
    parser.add_argument(
        "--job", type=Path, default=PROJECT_ROOT / "examples/v1/train/mx_job_dist_cpu.yaml"
    )
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args(argv)
    return run(args.job, state_dir=args.state_dir, timeout=args.timeout, out=sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
