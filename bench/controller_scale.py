"""Items 3 and 4 (and 5, by running it at several sizes): the controller at scale, and its economy.

On the benchmark's own control plane, with the webhook registered as installed:

1. Baseline: a client creates the same pods and Services the controller will create (built by
   ``controller.desired`` from the same defaulted jobs, without owner references so the garbage
   collector leaves them alone), from several threads, as fast as the API server accepts them:
   the API server's own limit on this machine. Its clock stops, as phase A's does, when the
   driver's watches have seen every object: both sides carry the same observer.
2. Phase A: ``mxjob-controller`` runs (watching the run's namespace); ``jobs`` MXJobs of
   1 scheduler, 1 server and 2 workers are submitted at once from several threads; the clock
   stops when every pod and Service exists (seen through the driver's own watches, never a
   LIST). No kubelet runs yet, so this is the creation path alone.
3. Phase B: the test kubelet binds and starts every pod; once every job is Running, every
   scheduler exits 0; the clock stops when every job is Succeeded and its running pods are gone
   (``cleanPodPolicy: Running``, the default: the finished schedulers stay).

Economy: ``apiserver_request_total`` by verb and resource before and after each phase. The
driver and the test kubelet count their own requests (``CountingClient``); what remains is the
controller's (kube-controller-manager's garbage collector and namespace controller have nothing
to do here). Controller CPU seconds and peak RSS come from ``/proc/<pid>``.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import copy
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.admission_overhead import scale_job
from bench.common import (
    WRITE_VERBS,
    CountingClient,
    RequestKey,
    apiserver_requests,
    bench_plane,
    component_cpu,
    delta,
    emit,
    keyed,
    machine,
    ratio,
    sample_process,
    subtract,
    watching,
)
from controller.desired import build_pod, build_service, desired_slots
from controller.kube import KubeClient, mxjobs_path, pods_path, services_path
from localkube.api import ensure_namespace
from localkube.cluster import ControlPlane
from localkube.kubelet import TestKubelet
from localkube.operator import LocalOperator, stop_process
from shared.defaults import apply_defaults

TARGET_RATIO = 1.5
TARGET_EXTRA_WRITES = 3
TARGET_RSS_MIB = 200.0
OBJECTS_PER_JOB = 8  # 4 pods + 4 Services
RESOURCES = ("pods", "services", "events", "mxjobs")


def baseline_objects(namespace: str, jobs: int) -> list[tuple[str, dict[str, Any]]]:
    """The pods and Services the controller makes for ``jobs`` jobs, minus owner references."""
    objects: list[tuple[str, dict[str, Any]]] = []
    for number in range(jobs):
        job = apply_defaults(scale_job(f"job-{number}"))
        job["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()))
        for slot in desired_slots(job):
            for path, built in (
                (pods_path(namespace), build_pod(job, slot)),
                (services_path(namespace), build_service(job, slot)),
            ):
                body = copy.deepcopy(built)
                body["metadata"].pop("ownerReferences", None)
                objects.append((path, body))
    return objects


def create_all(client: KubeClient, requests: Sequence[tuple[str, Any]], *, threads: int) -> float:
    """POST every ``(path, body)`` from ``threads`` threads; return the wall time."""

    def post(item: tuple[str, Any]) -> None:
        client.request("POST", item[0], body=item[1])

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(post, requests))
    return time.perf_counter() - started


def _state(job: Mapping[str, Any]) -> str:
    return str((job.get("status") or {}).get("state") or "")


def _attributed(
    total: Mapping[RequestKey, int], *clients: Mapping[RequestKey, int]
) -> collections.Counter[RequestKey]:
    """The API server's count minus what our own clients asked for."""
    return subtract(total, *clients)


def _writes(counts: Mapping[RequestKey, int]) -> int:
    return sum(
        n
        for (verb, res), n in counts.items()
        if verb in WRITE_VERBS and res.split("/")[0] in RESOURCES
    )


def _lists(counts: Mapping[RequestKey, int]) -> int:
    return sum(n for (verb, res), n in counts.items() if verb == "LIST" and res in RESOURCES)


def run(
    *,
    plane: ControlPlane,
    jobs: int = 500,
    baseline_threads: int = 8,
    submit_threads: int = 8,
    lifecycle: bool = True,
) -> dict[str, Any]:
    """Run the baseline, phase A and (with ``lifecycle``) phase B on ``plane``."""
    timeout = 120 + jobs * 0.5
    client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=max(baseline_threads, 8) + 4)
    driver = CountingClient(client)
    operator = LocalOperator(plane)
    webhook_pid, port = operator.start_webhook()
    controller = None
    kubelet: TestKubelet | None = None
    kubelet_client: CountingClient | None = None
    suffix = uuid.uuid4().hex[:6]
    namespace, baseline_namespace = f"scale-{suffix}", f"baseline-{suffix}"
    report: dict[str, Any] = {"benchmark": "controller_scale", "jobs": jobs}
    try:
        operator.install_crd(webhook_port=port)
        operator.register_webhooks(webhook_port=port)
        ensure_namespace(driver, baseline_namespace)
        ensure_namespace(driver, namespace)

        # -- baseline -----------------------------------------------------------------------
        objects = baseline_objects(baseline_namespace, jobs)
        # Observed exactly as phase A is: the clock stops when the driver's watches have seen
        # every object, so both sides pay for the same watch streams on the same two cores.
        with watching(driver, pods_path(baseline_namespace), services_path(baseline_namespace)) as (
            baseline_pods,
            baseline_services,
        ):
            time.sleep(0.5)  # the watches are open before the first object
            baseline_cpu_0 = component_cpu(plane)
            baseline_started = time.monotonic()
            posted_s = create_all(client, objects, threads=baseline_threads)
            per_kind = jobs * 4  # pods, and as many Services
            for counter in (baseline_pods, baseline_services):
                counter.wait(
                    lambda o: len(o) >= per_kind, timeout=timeout, what=f"{per_kind} objects"
                )
            baseline_s = (
                max(*baseline_pods.first_seen.values(), *baseline_services.first_seen.values())
                - baseline_started
            )
            baseline_cpu = component_cpu(plane)
        report["baseline"] = {
            "objects": len(objects),
            "threads": baseline_threads,
            "seconds": round(baseline_s, 3),
            "posted_seconds": round(posted_s, 3),
            "objects_per_s": round(len(objects) / baseline_s, 1),
            "control_plane_cpu_s": {
                k: round(v - baseline_cpu_0.get(k, 0.0), 2) for k, v in baseline_cpu.items()
            },
        }

        # -- phase A: creation --------------------------------------------------------------
        # Measured from informers synced (/readyz), not merely from a serving process.
        process, _, _ = operator.start_controller(
            f"--namespace={namespace}",
            "--log-format=json",
            log_name=f"controller-{jobs}.log",
            ready_path="/readyz",
            ready_timeout=60,
        )
        controller = process
        start_sample = sample_process(controller.pid)
        planes_cpu_0 = component_cpu(plane)
        requests_0 = apiserver_requests(plane)
        driver_0 = driver.snapshot()
        with watching(
            driver, pods_path(namespace), services_path(namespace), mxjobs_path(namespace)
        ) as (pods, services, mxjobs):
            time.sleep(0.5)  # the watches are open before the first job
            names = [f"job-{number}" for number in range(jobs)]
            started = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(submit_threads) as pool:
                list(
                    pool.map(
                        lambda name: driver.request(
                            "POST", mxjobs_path(namespace), body=scale_job(name)
                        ),
                        names,
                    )
                )
            submitted = time.monotonic()
            wanted = jobs * 4
            pods.wait(lambda o: len(o) >= wanted, timeout=timeout, what=f"{wanted} pods")
            services.wait(lambda o: len(o) >= wanted, timeout=timeout, what=f"{wanted} services")
            last_seen = max(*pods.first_seen.values(), *services.first_seen.values())
            created_s = last_seen - started
            time.sleep(1.0)  # let status writes and events of the last jobs land
            a_sample = sample_process(controller.pid)
            requests_a = apiserver_requests(plane)
            driver_a = driver.snapshot()
            planes_cpu_a = component_cpu(plane)
            controller_a = _attributed(delta(requests_a, requests_0), delta(driver_a, driver_0))
            report["phase_a"] = {
                "submit_threads": submit_threads,
                "submit_seconds": round(submitted - started, 3),
                "seconds": round(created_s, 3),
                "ratio_to_baseline": round(ratio(created_s, baseline_s), 3),
                "meets_target": ratio(created_s, baseline_s) <= TARGET_RATIO,
                "controller_requests": keyed(controller_a, RESOURCES),
                "controller_writes_per_job": round(_writes(controller_a) / jobs, 2),
                "objects_created_per_job": OBJECTS_PER_JOB,
                "meets_write_target": _writes(controller_a) / jobs
                <= OBJECTS_PER_JOB + TARGET_EXTRA_WRITES,
                "controller_lists": _lists(controller_a),
                "controller_cpu_s": round(a_sample.cpu_seconds - start_sample.cpu_seconds, 2),
                "controller_cpu_ms_per_job": round(
                    (a_sample.cpu_seconds - start_sample.cpu_seconds) / jobs * 1000, 2
                ),
                "controller_rss_mib": round(a_sample.rss_mib, 1),
                "controller_peak_rss_mib": round(a_sample.peak_rss_mib, 1),
                "meets_rss_target": a_sample.peak_rss_mib <= TARGET_RSS_MIB,
                "pods_cached": wanted,
                "control_plane_cpu_s": {
                    k: round(v - planes_cpu_0.get(k, 0.0), 2) for k, v in planes_cpu_a.items()
                },
            }

            # -- phase B: run to Succeeded and clean up -------------------------------------
            if lifecycle:
                kubelet_client = CountingClient(client)
                kubelet = TestKubelet(
                    kubelet_client, node_name=f"bench-node-{suffix}", namespaces=(namespace,)
                )
                b_started = time.monotonic()
                kubelet.start()
                mxjobs.wait(
                    lambda o: len(o) == jobs and all(_state(j) == "Running" for j in o.values()),
                    timeout=timeout,
                    what="every job Running",
                )
                running_s = time.monotonic() - b_started
                terminate_started = time.monotonic()
                node = kubelet
                with concurrent.futures.ThreadPoolExecutor(submit_threads) as pool:
                    list(
                        pool.map(
                            lambda name: node.terminate(
                                namespace, f"{name}-scheduler-0", exit_code=0
                            ),
                            names,
                        )
                    )
                mxjobs.wait(
                    lambda o: all(_state(j) == "Succeeded" for j in o.values()),
                    timeout=timeout,
                    what="every job Succeeded",
                )
                pods.wait(
                    lambda o: len(o) == jobs and all(name.endswith("-scheduler-0") for name in o),
                    timeout=timeout,
                    what="only the schedulers left",
                )
                finished = time.monotonic()
                time.sleep(1.0)
                b_sample = sample_process(controller.pid)
                requests_b = apiserver_requests(plane)
                driver_b = driver.snapshot()
                kubelet_counts = kubelet_client.snapshot()
                controller_b = _attributed(
                    delta(requests_b, requests_a), delta(driver_b, driver_a), kubelet_counts
                )
                controller_all = _attributed(
                    delta(requests_b, requests_0), delta(driver_b, driver_0), kubelet_counts
                )
                report["phase_b"] = {
                    "all_running_s": round(running_s, 3),
                    "succeeded_and_cleaned_s": round(finished - terminate_started, 3),
                    "total_s": round(finished - b_started, 3),
                    "kubelet_requests": keyed(kubelet_counts, (*RESOURCES, "nodes")),
                    "controller_requests": keyed(controller_b, RESOURCES),
                    "controller_writes_per_job": round(_writes(controller_b) / jobs, 2),
                    "controller_lists": _lists(controller_b),
                    "controller_cpu_s": round(b_sample.cpu_seconds - a_sample.cpu_seconds, 2),
                    "controller_peak_rss_mib": round(b_sample.peak_rss_mib, 1),
                }
                report["whole_run"] = {
                    "controller_requests": keyed(controller_all, RESOURCES),
                    "controller_writes_per_job": round(_writes(controller_all) / jobs, 2),
                    "controller_lists_after_start": _lists(controller_all),
                    "controller_cpu_s": round(b_sample.cpu_seconds - start_sample.cpu_seconds, 2),
                    "controller_peak_rss_mib": round(b_sample.peak_rss_mib, 1),
                    "meets_rss_target": b_sample.peak_rss_mib <= TARGET_RSS_MIB,
                }
    finally:
        if kubelet is not None:
            kubelet.stop()
        if controller is not None:
            stop_process(controller.pid)
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
