"""Items 3 and 4 (and 5, by running it at several sizes): the controller at scale, and its economy.

On the benchmark's own control plane, with the webhook registered as installed:

1. Baseline: a client creates the same pods and Services the controller will create (built by
   ``controller.job.desired`` from the same defaulted jobs, without owner references so the garbage
   collector leaves them alone), from several threads, as fast as the API server accepts them:
   the API server's own limit on this machine. Its clock stops, as phase A's does, when the
   driver's watches have seen every object: both sides carry the same observer.
   The raw baseline does the same with the MXJobs too (defaulted, as the mutating webhook would
   store them), without webhooks registered: the API server's limit for every object a user and
   the operator create, without admission webhooks or controllers. It runs on a warm API server
   (after a warm-up run of a fifth of the jobs, not counted) and twice, before the baseline and
   again after this controller's phases, so that a drift over the run falls on both sides of
   phase A alike; its figure is the mean of the two.
2. Phase A: ``mxjob-controller`` runs (watching the run's namespace); ``jobs`` MXJobs of
   1 scheduler, 1 server and 2 workers are submitted at once from several threads; the clock
   stops when every pod and Service exists (seen through the driver's own watches, never a
   LIST). No kubelet runs yet, so this is the creation path alone.
3. Phase B: the test kubelet binds and starts every pod; once every job is Running, every
   scheduler exits 0; the clock stops when every job is Succeeded and its running pods are gone
   (``cleanPodPolicy: Running``, the default: the finished schedulers stay).

4. The peer: kubeflow training-operator v1.8.1 (``localkube.thirdparty.training_operator``), the
   operator users migrate from, on the same plane and the same jobs (``lifecycle_job``), phases
   A and B again, with its own CRD and validating webhook: once as released (client limited to
   20 requests/s, burst 30, hard-coded; one reconcile thread) and once at its best (built with
   ``hack/training-operator/patches/client-rate-limits.patch``, four threads). Each controller
   has a namespace of its own, deleted before the next starts.

Economy: ``apiserver_request_total`` by verb and resource before and after each phase. The
driver and the test kubelet count their own requests (``CountingClient``); what remains is the
controller's (kube-controller-manager's garbage collector and namespace controller have nothing
to do here). Controller CPU seconds and peak RSS come from ``/proc/<pid>``.

Phases A and B are in ``bench.controller_scale_phases``, the baselines in
``bench.controller_scale_baselines``; this module runs them in the order above, at each size on a
fresh plane.
"""

from __future__ import annotations

import argparse
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.admission_overhead import wait_registered
from bench.common import CountingClient, bench_plane, emit, machine, ratio
from bench.controller_scale_baselines import (
    baseline_objects,
    combine_raw,
    measure_baseline,
    raw_baseline,
)
from bench.controller_scale_phases import Side, delete_namespace, lifecycle_job, measure
from controller.runtime.client import KubeClient, pods_path, services_path
from localkube.base.api import ensure_namespace
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator
from localkube.thirdparty.training_operator import LocalTrainingOperator

__all__ = [  # what ``python -m bench`` and tests/bench use
    "PEERS",
    "PEER_PATCH",
    "baseline_objects",
    "lifecycle_job",
    "main",
    "run",
]

TARGET_RATIO = 1.5
PEERS: Final = ("training-operator", "training-operator-best")
PEER_PATCH: Final = "client-rate-limits.patch"
PEER_BEST_THREADS: Final = 4
"""``--controller-threads`` of the peer at its best: as many as this controller's workers."""


PEER_DROPPED_EVENT: Final = "too many queued events, dropped event"
"""What client-go's event recorder (``tools/record``) logs for each Event its queue drops."""


def _dropped_in_log(log: Path) -> Callable[[], int]:
    def count() -> int:
        with log.open(errors="replace") as lines:
            return sum(PEER_DROPPED_EVENT in line for line in lines)

    return count


def dropped_in_metrics(ports: Mapping[str, int]) -> Callable[[], int]:
    """``mxjob_controller_events_dropped_total`` (every reason) of the controller on ``ports``."""

    def count() -> int:
        url = f"http://127.0.0.1:{ports['metrics']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:
            text = reply.read().decode()
        return int(
            sum(
                float(line.rsplit(" ", 1)[1])
                for line in text.splitlines()
                if line.startswith("mxjob_controller_events_dropped_total{")
            )
        )

    return count


def _peer_starter(
    peer: LocalTrainingOperator, extra: tuple[str, ...], *, patches: tuple[str, ...], log_name: str
) -> Callable[[str], int]:
    def start(namespace: str) -> int:
        process = peer.start(f"--namespace={namespace}", *extra, patches=patches, log_name=log_name)
        time.sleep(1.0)  # its MXJob controller registers right after /readyz
        return process.pid

    return start


@dataclass(frozen=True)
class SizeRun:
    """What every measurement at one size shares, so that each step names only what differs."""

    plane: ControlPlane
    client: KubeClient
    jobs: int
    baseline_threads: int
    submit_threads: int
    lifecycle: bool
    timeout: float

    def measure(self, side: Side) -> dict[str, Any]:
        """Phase A and (with ``lifecycle``) phase B of ``side`` on this size's jobs."""
        return measure(
            side,
            plane=self.plane,
            client=self.client,
            jobs=self.jobs,
            submit_threads=self.submit_threads,
            lifecycle=self.lifecycle,
            timeout=self.timeout,
        )

    def raw(self, jobs: int) -> dict[str, Any]:
        """One run of the raw baseline on ``jobs`` jobs (fewer for the warm-up)."""
        return raw_baseline(
            plane=self.plane,
            client=self.client,
            jobs=jobs,
            threads=self.baseline_threads,
            timeout=self.timeout,
        )


def _baseline(size: SizeRun, driver: CountingClient, namespace: str) -> dict[str, Any]:
    """The pods and Services alone, POSTed by a client into ``namespace``, which is then emptied.

    The namespace is made again, empty, for the probes of ``wait_registered`` later on.
    """
    ensure_namespace(driver, namespace)
    baseline = measure_baseline(
        plane=size.plane,
        client=size.client,
        namespace=namespace,
        objects=baseline_objects(namespace, size.jobs),
        paths=(pods_path(namespace), services_path(namespace)),
        threads=size.baseline_threads,
        timeout=size.timeout,
    )
    delete_namespace(size.client, namespace, timeout=size.timeout)
    ensure_namespace(driver, namespace)  # for the probes of ``wait_registered``
    return baseline


def ours_side(operator: LocalOperator, *, log_name: str) -> Side:
    """This controller as a measured side: started for the segment's namespace, ready once its
    informers have synced (/readyz, not merely a serving process), its dropped Events counted
    from its metrics."""
    ports: dict[str, int] = {}

    def start(namespace: str) -> int:
        process, ports["metrics"], _ = operator.start_controller(
            f"--namespace={namespace}",
            "--log-format=json",
            log_name=log_name,
            ready_path="/readyz",
            ready_timeout=60,
        )
        return process.pid

    return Side("mxjob-operator", start, stop_process, dropped_in_metrics(ports))


def _ours(size: SizeRun, operator: LocalOperator, *, baseline_s: float) -> dict[str, Any]:
    """This controller (webhooks registered, as installed); phase A judged against the baseline."""
    ours = size.measure(ours_side(operator, log_name=f"controller-{size.jobs}.log"))
    phase_a = ours["phase_a"]
    phase_a["ratio_to_baseline"] = round(ratio(phase_a["seconds"], baseline_s), 3)
    phase_a["meets_target"] = ratio(phase_a["seconds"], baseline_s) <= TARGET_RATIO
    return ours


def measure_peer(
    size: SizeRun, peer: LocalTrainingOperator, name: str, *, threads: int = PEER_BEST_THREADS
) -> dict[str, Any]:
    """training-operator as ``name`` says: as released, or at its best (``...-best``, with
    ``threads`` reconcile threads)."""
    best = name.endswith("-best")
    extra = (f"--controller-threads={threads}",) if best else ()
    patches = (PEER_PATCH,) if best else ()
    log_name = f"{name}-{size.jobs}-{uuid.uuid4().hex[:6]}.log"
    start_peer = _peer_starter(peer, extra, patches=patches, log_name=log_name)
    dropped = _dropped_in_log(size.plane.logs / log_name)
    return {
        "patches": list(patches),
        "flags": list(extra),
        **size.measure(Side(name, start_peer, stop_process, dropped)),
    }


def run(
    *,
    plane: ControlPlane,
    jobs: int = 500,
    baseline_threads: int = 8,
    submit_threads: int = 8,
    lifecycle: bool = True,
    peers: Sequence[str] = PEERS,
) -> dict[str, Any]:
    """The baseline, this controller, then each of ``peers`` on the same jobs, on ``plane``."""
    timeout = 120 + jobs * 2.0
    client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=max(baseline_threads, 8) + 4)
    size = SizeRun(
        plane=plane,
        client=client,
        jobs=jobs,
        baseline_threads=baseline_threads,
        submit_threads=submit_threads,
        lifecycle=lifecycle,
        timeout=timeout,
    )
    driver = CountingClient(client)
    operator = LocalOperator(plane)
    webhook_pid, port = operator.start_webhook()
    peer = LocalTrainingOperator(plane)
    baseline_namespace = f"baseline-{uuid.uuid4().hex[:6]}"
    report: dict[str, Any] = {"benchmark": "controller_scale", "jobs": jobs}
    try:
        operator.install_crd(webhook_port=port)
        # -- raw baseline: the jobs too, without webhooks (warm-up, then the first of two) ---
        raw_runs = [size.raw(n) for n in (max(1, jobs // 5), jobs)]
        # -- baseline, then this controller (webhooks registered, as installed) --------------
        operator.register_webhooks(webhook_port=port)
        report["baseline"] = _baseline(size, driver, baseline_namespace)
        ours = _ours(size, operator, baseline_s=report["baseline"]["seconds"])
        report.update({k: v for k, v in ours.items() if k != "controller"})
        # -- raw baseline again, after this controller: A B A around phase A ----------------
        operator.unregister_webhooks()
        wait_registered(client, operator, port, baseline_namespace, registered=False)
        raw_runs.append(size.raw(jobs))
        report["raw_baseline"] = combine_raw(raw_runs[1:], warmup=raw_runs[0])
        phase_a = ours["phase_a"]
        phase_a["ratio_to_raw"] = round(
            ratio(phase_a["seconds"], report["raw_baseline"]["seconds"]), 3
        )
        # -- training-operator v1.8.1 on its own CRD and webhook (ours unregistered above) ----
        if peers:
            peer.replace_crd()
        report["peers"] = {name: measure_peer(size, peer, name) for name in peers}
    finally:
        if peers:
            peer.uninstall_webhook()
            operator.install_crd(webhook_port=port)
        operator.unregister_webhooks()
        stop_process(webhook_pid)
    return report


def command_line(*, jobs: Sequence[int], lifecycle: bool) -> str:
    sizes = " ".join(str(n) for n in jobs)
    extra = "" if lifecycle else " --no-lifecycle"
    return f".venv/bin/python -m bench.controller_scale --jobs {sizes}{extra}"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="The controller at scale, and its economy.")
    parser.add_argument(
        "--jobs", type=int, nargs="+", default=[500], help="sizes (one fresh plane each)"
    )
    parser.add_argument("--baseline-threads", type=int, default=8)
    parser.add_argument("--submit-threads", type=int, default=8)
    parser.add_argument(
        "--lifecycle", action=argparse.BooleanOptionalAction, default=True, help="run phase B"
    )
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    runs = []
    info: dict[str, Any] = {}
    for size in args.jobs:
        plane = bench_plane(f"scale-{size}")
        try:
            runs.append(
                run(
                    plane=plane,
                    jobs=size,
                    baseline_threads=args.baseline_threads,
                    submit_threads=args.submit_threads,
                    lifecycle=args.lifecycle,
                )
            )
            info = info or machine(plane)
        finally:
            plane.down()
    report = {
        "benchmark": "controller_scale",
        "runs": runs,
        "machine": info,
        "command": command_line(jobs=args.jobs, lifecycle=args.lifecycle),
    }
    return emit(report, args.output)


if __name__ == "__main__":
    main()
