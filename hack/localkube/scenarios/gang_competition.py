"""``make demo-gang-50``: many GPU jobs compete for the same six GPUs under native gang scheduling.

The stage is :func:`localkube.scenarios.gang_demo.scene` (kube-scheduler, three two-GPU test-kubelet
nodes). ``jobs`` MXJobs are submitted at once, one Scheduler and two, three or four one-GPU
Workers each (in turn), far more than fit. The driver plays the training: once all of a job's
pods run, it ends them (exit 0), which frees their GPUs for the next gang.

What is measured, by listing the namespace's pods back to back in a
thread of its own (tens of times a second):

- every job succeeds;
- no job holds part of the GPUs while waiting: a job is "bound in part" when some of its pods are
  on a node and running while others are still unplaced. kube-scheduler binds a gang's pods with
  one API call each, so a listing may fall between two of them; then the GPUs the rest will take
  are still free. A job bound in part while fewer GPUs are free than its unplaced Workers need is
  one that holds GPUs while waiting for more: there must be none
  (``tests/e2e/test_gang_scheduling.py`` runs a small version and asserts it).

``python -m localkube.scenarios.gang_competition --jobs 50`` prints the figures; ``--gang-scheduler
none`` runs the same without gangs, to see the measurement catch what gangs prevent.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localkube.base.api import NotFound, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.base.processes import stop_process
from localkube.scenarios.gang_demo import JOB_LABEL, NODE_GPUS, NODES, Scene, clear, gpu_job, scene

WORKER_CYCLE = (2, 3, 4)
ENDED = ("Succeeded", "Failed")


@dataclass
class Competition:
    """What one run saw."""

    jobs: int
    seconds: float = 0.0
    succeeded: int = 0
    samples: int = 0
    """Listings of the namespace's pods by the sampler."""
    partial_seconds: dict[str, float] = field(default_factory=dict)
    """Per job, the longest run of consecutive samples in which it held part of the GPUs."""
    most_gpus_in_use: int = 0
    held_while_waiting: set[str] = field(default_factory=set)
    """Jobs seen half-bound while the free GPUs were too few for their unplaced Workers: holding
    part of the GPUs while waiting for the rest. (Half-bound with enough GPUs free is a gang
    between two bind calls: kube-scheduler has reserved the rest for it.)"""

    @property
    def longest_partial(self) -> float:
        return max(self.partial_seconds.values(), default=0.0)


def job_names(count: int) -> list[str]:
    return [f"job-{number:02d}" for number in range(count)]


def _pods_by_job(scene_: Scene, namespace: str) -> dict[str, list[dict[str, Any]]]:
    items = scene_.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
    found: dict[str, list[dict[str, Any]]] = {}
    for pod in items:
        job = (pod["metadata"].get("labels") or {}).get(JOB_LABEL)
        if job:
            found.setdefault(job, []).append(pod)
    return found


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _holds_part(pods: list[dict[str, Any]], expected: int) -> bool:
    """Some pods placed and not ended while others are not placed (or not created yet)."""
    placed_live = [p for p in pods if p["spec"].get("nodeName") and _phase(p) not in ENDED]
    unplaced = len([p for p in pods if not p["spec"].get("nodeName")]) + expected - len(pods)
    return bool(placed_live) and unplaced > 0


def _workers_unplaced(pods: list[dict[str, Any]], expected: int) -> int:
    """One-GPU Workers not on a node, counting those not created yet (all but the Scheduler)."""
    placed = sum(
        1 for p in pods if p["spec"].get("nodeName") and "-worker-" in p["metadata"]["name"]
    )
    return expected - 1 - placed


def _gpus_in_use(pods: list[dict[str, Any]]) -> int:
    return sum(
        1
        for p in pods
        if p["spec"].get("nodeName")
        and _phase(p) not in ENDED
        and "-worker-" in p["metadata"]["name"]
    )


def _states(scene_: Scene, namespace: str) -> dict[str, str]:
    items = scene_.api.request("GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs")
    return {
        j["metadata"]["name"]: str((j.get("status") or {}).get("state") or "")
        for j in items["items"]
    }


def _finish(scene_: Scene, namespace: str, pods: list[dict[str, Any]]) -> None:
    """The job's containers exit 0, Workers first: the Scheduler's exit makes the job succeed,
    after which the controller may delete what still runs (a pod already gone is skipped)."""
    for pod in sorted(pods, key=lambda p: "-scheduler-" in p["metadata"]["name"]):
        kubelet = next(k for k in scene_.kubelets if k.node_name == pod["spec"]["nodeName"])
        with contextlib.suppress(NotFound):
            kubelet.terminate(namespace, pod["metadata"]["name"], exit_code=0)


class _Sampler(threading.Thread):
    """Lists the namespace's pods back to back and records who holds part of the GPUs."""

    def __init__(
        self, scene_: Scene, namespace: str, sizes: dict[str, int], result: Competition
    ) -> None:
        super().__init__(daemon=True)
        self.scene, self.namespace, self.sizes, self.result = scene_, namespace, sizes, result
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        partial_since: dict[str, float] = {}
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                pods = _pods_by_job(self.scene, self.namespace)
                self.result.samples += 1
                in_use = sum(_gpus_in_use(p) for p in pods.values())
                self.result.most_gpus_in_use = max(self.result.most_gpus_in_use, in_use)
                free = NODES * NODE_GPUS - in_use
                for name, size in self.sizes.items():
                    mine = pods.get(name, [])
                    if _holds_part(mine, size) and _workers_unplaced(mine, size) > free:
                        self.result.held_while_waiting.add(name)
                    if _holds_part(mine, size):
                        since = partial_since.setdefault(name, now)
                        self.result.partial_seconds[name] = max(
                            self.result.partial_seconds.get(name, 0.0), now - since
                        )
                    else:
                        partial_since.pop(name, None)
        except BaseException as error:  # reported by compete()
            self.error = error


def compete(
    scene_: Scene, namespace: str, *, jobs: int, timeout: float, interval: float = 0.1
) -> Competition:
    """Submit ``jobs`` jobs, end each once it runs whole, until all succeeded; a sampler thread
    watches the pods meanwhile."""
    names = job_names(jobs)
    sizes = {name: 1 + WORKER_CYCLE[i % len(WORKER_CYCLE)] for i, name in enumerate(names)}
    result = Competition(jobs=jobs)
    sampler = _Sampler(scene_, namespace, sizes, result)
    started = time.monotonic()
    sampler.start()
    try:
        for name in names:
            body = gpu_job(name, workers=sizes[name] - 1, gated=False)
            scene_.api.request(
                "POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs", body=body
            )
        ended: set[str] = set()
        while result.succeeded < jobs:
            if time.monotonic() - started > timeout:
                break  # what happened so far is the result: not every job succeeded
            if sampler.error is not None:
                raise RuntimeError("the sampler failed") from sampler.error
            pods = _pods_by_job(scene_, namespace)
            for name in names:
                mine = pods.get(name, [])
                whole = len(mine) == sizes[name] and all(_phase(p) == "Running" for p in mine)
                if whole and name not in ended:
                    _finish(scene_, namespace, mine)
                    ended.add(name)
            states = _states(scene_, namespace)
            result.succeeded = sum(1 for name in names if states.get(name) == "Succeeded")
            time.sleep(interval)
        result.seconds = time.monotonic() - started
        return result
    finally:
        sampler.stop.set()
        sampler.join()


def run(scene_: Scene, *, jobs: int, timeout: float, gang_scheduler: str = "native") -> Competition:
    """One competition in a namespace of its own; the jobs are deleted afterwards (while the
    controller runs: it lifts its pods' finalizer). ``gang_scheduler="none"`` shows what the
    measurement catches: jobs holding part of the GPUs, and some never finishing."""
    namespace = f"compete-{jobs}-{gang_scheduler}"
    ensure_namespace(scene_.api, namespace)
    pid = scene_.start_controller(gang_scheduler=gang_scheduler, namespace=namespace)
    try:
        try:
            return compete(scene_, namespace, jobs=jobs, timeout=timeout)
        finally:
            clear(scene_.api, namespace, job_names(jobs))
    finally:
        stop_process(pid)


def describe(result: Competition) -> str:
    return (
        f"{result.succeeded} of {result.jobs} jobs (1 Scheduler + 2-4 one-GPU Workers) "
        f"succeeded on 6 GPUs in {result.seconds:.1f} s; {result.samples} samples; "
        f"most GPUs in use at once: {result.most_gpus_in_use}; jobs seen "
        f"bound in part: {len(result.partial_seconds)}, longest "
        f"{result.longest_partial:.2f} s; of them holding GPUs while waiting for more: "
        f"{len(result.held_while_waiting)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.gang_competition", description=__doc__
    )
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--gang-scheduler", choices=["native", "none"], default="native")
    parser.add_argument(
        "--state-dir", type=Path, default=PROJECT_ROOT / ".local" / "gang-competition"
    )
    args = parser.parse_args(argv)
    with scene(args.state_dir) as setup:
        result = run(
            setup, jobs=args.jobs, timeout=args.timeout, gang_scheduler=args.gang_scheduler
        )
        print(f"--gang-scheduler={args.gang_scheduler}: {describe(result)}")
    return 0 if result.succeeded == result.jobs and not result.held_while_waiting else 1


if __name__ == "__main__":
    sys.exit(main())
