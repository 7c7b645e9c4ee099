"""Items 3 and 4 (and 5, by running it at several sizes): the controller at scale, and its economy.

On the benchmark's own control plane, with the webhook registered as installed:

1. Baseline: a client creates the same pods and Services the controller will create (built by
   ``controller.desired`` from the same defaulted jobs, without owner references so the garbage
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
operator
   users migrate from, on the same plane and the same jobs (``lifecycle_job``), phases A and B
   again, with its own CRD and validating webhook: once as released (client limited to 20
   requests/s, burst 30, hard-coded; one reconcile thread) and once at its best (built with
   ``hack/training-operator/patches/client-rate-limits.patch``, four threads). Each controller
   has a namespace of its own, deleted before the next starts.

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
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.admission_overhead import scale_job, wait_registered
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
from controller.kube import ApiError, KubeClient, mxjobs_path, pods_path, services_path
from localkube.base.api import ensure_namespace
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator, stop_process
from localkube.thirdparty.training_operator import LocalTrainingOperator
from shared.defaults import apply_defaults

TARGET_RATIO = 1.5
TARGET_EXTRA_WRITES = 3
TARGET_RSS_MIB = 200.0
OBJECTS_PER_JOB = 8  # 4 pods + 4 Services
RESOURCES = ("pods", "services", "events", "mxjobs")


def baseline_objects(namespace: str, jobs: int) -> list[tuple[str, dict[str, Any]]]:
    """The pods and Services the controller makes for ``jobs`` jobs, minus owner references.

    And minus the pods' tracking finalizer: no controller runs to remove it, and the namespace
    is deleted after the baseline.
    """
    objects: list[tuple[str, dict[str, Any]]] = []
    for number in range(jobs):
        job = apply_defaults(lifecycle_job(f"job-{number}"))
        job["metadata"].update(namespace=namespace, uid=str(uuid.uuid4()))
        for slot in desired_slots(job):
            for path, built in (
                (pods_path(namespace), build_pod(job, slot)),
                (services_path(namespace), build_service(job, slot)),
            ):
                body = copy.deepcopy(built)
                body["metadata"].pop("ownerReferences", None)
                body["metadata"].pop("finalizers", None)  # nothing would remove them
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


def lifecycle_job(name: str) -> dict[str, Any]:
    """``scale_job`` with what both controllers must be told to act alike.

    ``cleanPodPolicy: Running`` is this operator's default but not training-operator's (None);
    ``terminationGracePeriodSeconds: 0`` because this operator gives a finished job's running
    pods their grace period to end by themselves before deleting them (training-operator deletes
    them at once): with 0 both clean up as soon as they can, so "Succeeded and cleaned" measures
    the controllers, not a grace period.
    """
    job = scale_job(name)
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "Running"}
    for spec in job["spec"]["mxReplicaSpecs"].values():
        spec["template"]["spec"]["terminationGracePeriodSeconds"] = 0
    return job


def submit_jobs(client: KubeClient, namespace: str, names: Sequence[str], *, threads: int) -> None:
    """POST a ``lifecycle_job`` of each name from ``threads`` threads at once, as users would."""
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(
            pool.map(
                lambda name: client.request(
                    "POST", mxjobs_path(namespace), body=lifecycle_job(name)
                ),
                names,
            )
        )


def _condition(job: Mapping[str, Any], kind: str) -> bool:
    """Whether the job has condition ``kind`` True (both operators write the same conditions)."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


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


@dataclass(frozen=True)
class Side:
    """One controller measured on the same jobs: a name, and how to start and stop it."""

    name: str
    start: Callable[[str], int]
    """Given the namespace to watch, start the controller (ready) and return its pid."""
    stop: Callable[[int], None]
    events_dropped: Callable[[], int]
    """Events the running controller gave up on so far, by its own account."""


def measure(
    side: Side,
    *,
    plane: ControlPlane,
    client: KubeClient,
    jobs: int,
    submit_threads: int,
    lifecycle: bool,
    timeout: float,
) -> dict[str, Any]:
    """Phase A and (with ``lifecycle``) phase B of ``side``, in a namespace of its own.

    The namespace is deleted afterwards (and its deletion awaited), so the next side starts on
    an API server and etcd holding what they held before this one.
    """
    driver = CountingClient(client)
    suffix = uuid.uuid4().hex[:6]
    namespace = f"scale-{suffix}"
    ensure_namespace(driver, namespace)
    kubelet: TestKubelet | None = None
    pid = side.start(namespace)
    report: dict[str, Any] = {"controller": side.name}
    try:
        start_sample = sample_process(pid)
        planes_cpu_0 = component_cpu(plane)
        requests_0 = apiserver_requests(plane)
        driver_0 = driver.snapshot()
        with watching(
            driver, pods_path(namespace), services_path(namespace), mxjobs_path(namespace)
        ) as (pods, services, mxjobs):
            time.sleep(0.5)  # the watches are open before the first job
            names = [f"job-{number}" for number in range(jobs)]
            started = time.monotonic()
            submit_jobs(driver, namespace, names, threads=submit_threads)
            submitted = time.monotonic()
            wanted = jobs * 4
            pods.wait(lambda o: len(o) >= wanted, timeout=timeout, what=f"{wanted} pods")
            services.wait(lambda o: len(o) >= wanted, timeout=timeout, what=f"{wanted} services")
            last_seen = max(*pods.first_seen.values(), *services.first_seen.values())
            created_s = last_seen - started
            time.sleep(1.0)  # let status writes and events of the last jobs land
            a_sample = sample_process(pid)
            requests_a = apiserver_requests(plane)
            driver_a = driver.snapshot()
            planes_cpu_a = component_cpu(plane)
            controller_a = _attributed(delta(requests_a, requests_0), delta(driver_a, driver_0))
            report["phase_a"] = {
                "submit_threads": submit_threads,
                "submit_seconds": round(submitted - started, 3),
                "seconds": round(created_s, 3),
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
            if not lifecycle:
                return report

            # -- phase B: run to Succeeded and clean up -----------------------------------------
            kubelet_client = CountingClient(client)
            kubelet = TestKubelet(
                kubelet_client, node_name=f"bench-node-{suffix}", namespaces=(namespace,)
            )
            b_started = time.monotonic()
            kubelet.start()
            mxjobs.wait(
                lambda o: len(o) == jobs and all(_condition(j, "Running") for j in o.values()),
                timeout=timeout,
                what="every job Running",
            )
            running_s = time.monotonic() - b_started
            terminate_started = time.monotonic()
            node = kubelet
            with concurrent.futures.ThreadPoolExecutor(submit_threads) as pool:
                list(
                    pool.map(
                        lambda name: node.terminate(namespace, f"{name}-scheduler-0", exit_code=0),
                        names,
                    )
                )
            mxjobs.wait(
                lambda o: all(_condition(j, "Succeeded") for j in o.values()),
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
            b_sample = sample_process(pid)
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
                "events_dropped": side.events_dropped(),
            }
    finally:
        if kubelet is not None:
            kubelet.stop()
        try:
            # While the controller runs: this one lets go of its pods' tracking finalizers.
            delete_namespace(client, namespace, timeout=timeout)
        finally:
            side.stop(pid)
    return report


def delete_namespace(client: KubeClient, namespace: str, *, timeout: float) -> None:
    """Delete ``namespace`` and wait until it is gone (its objects with it)."""
    client.request("DELETE", f"/api/v1/namespaces/{namespace}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            client.request("GET", f"/api/v1/namespaces/{namespace}")
        except ApiError as error:
            if error.status == 404:
                return
            raise
        time.sleep(0.5)
    raise TimeoutError(f"namespace {namespace} still there after {timeout:.0f} s")


PEERS: Final = ("training-operator", "training-operator-best")
PEER_PATCH: Final = "client-rate-limits.patch"
PEER_BEST_THREADS: Final = 4
"""``--controller-threads`` of the peer at its best: as many as this controller's workers."""


def _measure_baseline(
    *,
    plane: ControlPlane,
    client: KubeClient,
    namespace: str,
    objects: Sequence[tuple[str, Any]],
    paths: Sequence[str],
    threads: int,
    timeout: float,
) -> dict[str, Any]:
    """POST ``objects`` from ``threads`` threads; the clock stops when watches on ``paths`` saw all.

    Observed exactly as phase A is: the clock stops when the driver's watches have seen every
    object, so both sides pay for the same watch streams on the same two cores.
    """
    wanted = collections.Counter(path for path, _ in objects)
    with watching(CountingClient(client), *paths) as counters:
        time.sleep(0.5)  # the watches are open before the first object
        cpu_0 = component_cpu(plane)
        started = time.monotonic()
        posted_s = create_all(client, objects, threads=threads)
        for path, counter in zip(paths, counters, strict=True):
            count = wanted[path]
            counter.wait(lambda o, n=count: len(o) >= n, timeout=timeout, what=f"{count} objects")
        seconds = max(t for counter in counters for t in counter.first_seen.values()) - started
        cpu = component_cpu(plane)
    return {
        "objects": len(objects),
        "threads": threads,
        "seconds": round(seconds, 3),
        "posted_seconds": round(posted_s, 3),
        "objects_per_s": round(len(objects) / seconds, 1),
        "control_plane_cpu_s": {k: round(v - cpu_0.get(k, 0.0), 2) for k, v in cpu.items()},
    }


PEER_DROPPED_EVENT: Final = "too many queued events, dropped event"
"""What client-go's event recorder (``tools/record``) logs for each Event its queue drops."""


def _dropped_in_log(log: Path) -> Callable[[], int]:
    def count() -> int:
        with log.open(errors="replace") as lines:
            return sum(PEER_DROPPED_EVENT in line for line in lines)

    return count


def _dropped_in_metrics(ports: Mapping[str, int]) -> Callable[[], int]:
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


def raw_baseline(
    *, plane: ControlPlane, client: KubeClient, jobs: int, threads: int, timeout: float
) -> dict[str, Any]:
    """Every object a user and the operator create for ``jobs`` jobs, POSTed without webhooks.

    The MXJobs (defaulted, as stored with the webhooks), then their pods and Services, from
    ``threads`` threads, in a namespace of its own that is deleted afterwards.
    """
    namespace = f"raw-{uuid.uuid4().hex[:6]}"
    ensure_namespace(client, namespace)
    objects = [
        (mxjobs_path(namespace), apply_defaults(lifecycle_job(f"job-{number}")))
        for number in range(jobs)
    ] + baseline_objects(namespace, jobs)
    try:
        return _measure_baseline(
            plane=plane,
            client=client,
            namespace=namespace,
            objects=objects,
            paths=(mxjobs_path(namespace), pods_path(namespace), services_path(namespace)),
            threads=threads,
            timeout=timeout,
        )
    finally:
        delete_namespace(client, namespace, timeout=timeout)


def combine_raw(runs: Sequence[Mapping[str, Any]], *, warmup: Mapping[str, Any]) -> dict[str, Any]:
    """The raw baseline's figures: the mean of ``runs`` (each kept under ``runs``)."""
    count = len(runs)
    seconds = sum(r["seconds"] for r in runs) / count
    components = sorted({k for r in runs for k in r["control_plane_cpu_s"]})
    return {
        "objects": runs[0]["objects"],
        "threads": runs[0]["threads"],
        "seconds": round(seconds, 3),
        "posted_seconds": round(sum(r["posted_seconds"] for r in runs) / count, 3),
        "objects_per_s": round(runs[0]["objects"] / seconds, 1),
        "control_plane_cpu_s": {
            k: round(sum(r["control_plane_cpu_s"].get(k, 0.0) for r in runs) / count, 2)
            for k in components
        },
        "runs": list(runs),
        "warmup": dict(warmup),
    }


def _peer_starter(
    peer: LocalTrainingOperator, extra: tuple[str, ...], *, patches: tuple[str, ...], log_name: str
) -> Callable[[str], int]:
    def start(namespace: str) -> int:
        process = peer.start(f"--namespace={namespace}", *extra, patches=patches, log_name=log_name)
        time.sleep(1.0)  # its MXJob controller registers right after /readyz
        return process.pid

    return start


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
    driver = CountingClient(client)
    operator = LocalOperator(plane)
    webhook_pid, port = operator.start_webhook()
    peer = LocalTrainingOperator(plane)
    baseline_namespace = f"baseline-{uuid.uuid4().hex[:6]}"
    report: dict[str, Any] = {"benchmark": "controller_scale", "jobs": jobs}
    try:
        operator.install_crd(webhook_port=port)
        # -- raw baseline: the jobs too, without webhooks (warm-up, then the first of two) ---
        raw_runs = [
            raw_baseline(
                plane=plane, client=client, jobs=size, threads=baseline_threads, timeout=timeout
            )
            for size in (max(1, jobs // 5), jobs)
        ]

        # -- baseline -----------------------------------------------------------------------
        operator.register_webhooks(webhook_port=port)
        ensure_namespace(driver, baseline_namespace)
        report["baseline"] = _measure_baseline(
            plane=plane,
            client=client,
            namespace=baseline_namespace,
            objects=baseline_objects(baseline_namespace, jobs),
            paths=(pods_path(baseline_namespace), services_path(baseline_namespace)),
            threads=baseline_threads,
            timeout=timeout,
        )
        baseline_s = report["baseline"]["seconds"]
        delete_namespace(client, baseline_namespace, timeout=timeout)
        ensure_namespace(driver, baseline_namespace)  # for the probes of ``wait_registered``

        # -- this controller (webhooks registered, as installed) ------------------------------
        ports: dict[str, int] = {}

        def start_ours(namespace: str) -> int:
            # Measured from informers synced (/readyz), not merely from a serving process.
            process, ports["metrics"], _ = operator.start_controller(
                f"--namespace={namespace}",
                "--log-format=json",
                log_name=f"controller-{jobs}.log",
                ready_path="/readyz",
                ready_timeout=60,
            )
            return process.pid

        ours = measure(
            Side("mxjob-operator", start_ours, stop_process, _dropped_in_metrics(ports)),
            plane=plane,
            client=client,
            jobs=jobs,
            submit_threads=submit_threads,
            lifecycle=lifecycle,
            timeout=timeout,
        )
        phase_a = ours["phase_a"]
        phase_a["ratio_to_baseline"] = round(ratio(phase_a["seconds"], baseline_s), 3)
        phase_a["meets_target"] = ratio(phase_a["seconds"], baseline_s) <= TARGET_RATIO
        report.update({k: v for k, v in ours.items() if k != "controller"})

        # -- raw baseline again, after this controller: A B A around phase A ----------------
        operator.unregister_webhooks()
        wait_registered(client, operator, port, baseline_namespace, registered=False)
        raw_runs.append(
            raw_baseline(
                plane=plane, client=client, jobs=jobs, threads=baseline_threads, timeout=timeout
            )
        )
        report["raw_baseline"] = combine_raw(raw_runs[1:], warmup=raw_runs[0])
        phase_a["ratio_to_raw"] = round(
            ratio(phase_a["seconds"], report["raw_baseline"]["seconds"]), 3
        )

        # -- training-operator v1.8.1 on its own CRD and webhook (ours unregistered above) ----
        if peers:
            peer.replace_crd()
        report["peers"] = {}
        for name in peers:
            best = name.endswith("-best")
            extra = (f"--controller-threads={PEER_BEST_THREADS}",) if best else ()
            patches = (PEER_PATCH,) if best else ()
            log_name = f"{name}-{jobs}-{uuid.uuid4().hex[:6]}.log"
            start_peer = _peer_starter(peer, extra, patches=patches, log_name=log_name)
            report["peers"][name] = {
                "patches": list(patches),
                "flags": list(extra),
                **measure(
                    Side(name, start_peer, stop_process, _dropped_in_log(plane.logs / log_name)),
                    plane=plane,
                    client=client,
                    jobs=jobs,
                    submit_threads=submit_threads,
                    lifecycle=lifecycle,
                    timeout=timeout,
                ),
            }
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
