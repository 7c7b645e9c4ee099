"""This operator's install before and after one call per CREATE and v1 alone, against
training-operator v1.8.1 at its best, side by side on one control plane.

Three candidates measured on the same jobs (``lifecycle_job``) with phases A and B of
``bench.controller_scale_phases`` (every pod and Service created; every job Running, then
Succeeded and cleaned up), in the order before, after, peer, after, before (A B C B A), so a
drift over the run falls on both sides of the comparison; each of ours is the mean of its two
segments. One plane per size, fresh.

- ``before``: the install as it was: ``v1beta1`` served (a conversion review per MXJob write),
  the validating webhook judging CREATE too (``components/validate-on-create``), the webhook
  writing a line per review (``--log-level=debug``: the line it wrote at INFO before).
- ``after``: the default install now.
- ``training-operator-best``: v1.8.1 with its client limits raised and four threads
  (``bench.controller_scale``), with its own CRD and validating webhook.

Each segment starts once the API server has been quiet for a few seconds (``settle``: the
garbage collector's work on the previous segment's objects is not charged to the next), and is
checked to run as its candidate says before it is measured: a probe job must be
reviewed by that candidate's webhook process, with exactly the calls it configures and
conversions only where it serves ``v1beta1``. Beside the wall times: CPU of kube-apiserver,
etcd, the webhook (gunicorn and its worker) and the controller during phase A, and the machine's
load averages at each segment's start and end.

Nothing here needs root: the control plane, the webhook, both controllers and the test kubelet
are processes of the user who runs it. ``--submit-threads`` and ``--peer-threads`` let a machine
with more cores give the API server and both controllers more to work with.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import os
import statistics
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.admission_cost import group_cpu, v1beta1_served, webhook_calls
from bench.admission_overhead import scale_job, webhook_reviews
from bench.apiserver_profile import areas, profiled
from bench.common import BENCH_DIR, apiserver_requests, bench_plane, emit, machine, ratio
from bench.controller_scale import SizeRun, measure_peer, ours_side
from controller.runtime.client import KubeClient, mxjobs_path
from localkube.base.api import ensure_namespace
from localkube.base.processes import stop_process
from localkube.plane.controlplane import ControlPlane
from localkube.plane.install_choices import InstallChoices
from localkube.plane.operator import LocalOperator
from localkube.thirdparty.training_operator import LocalTrainingOperator

PEER: Final = "training-operator-best"
ORDER: Final = ("before", "after", PEER, "after", "before")
SIZES: Final = (100, 500)


@dataclass(frozen=True)
class Ours:
    """One of this operator's two candidates: its install options and its webhook process."""

    name: str
    choices: InstallChoices
    webhook_pid: int
    webhook_port: int


def _start_candidates(plane: ControlPlane) -> dict[str, Ours]:
    """A webhook process per candidate, with the log level that candidate logs at."""
    before_choices = InstallChoices(v1beta1=True, validate_on_create=True)
    operator = LocalOperator(plane)
    before_pid, before_port = operator.start_webhook(
        log_level="debug", log_name="webhook-before.log"
    )
    after_pid, after_port = operator.start_webhook(log_name="webhook-after.log")
    return {
        "before": Ours("before", before_choices, before_pid, before_port),
        "after": Ours("after", InstallChoices(), after_pid, after_port),
    }


def _configure(
    plane: ControlPlane, client: KubeClient, ours: Ours, other: Ours, *, namespace: str
) -> int:
    """Install ``ours`` (CRD and configurations pointed at its webhook) and probe until the API
    server acts as it says; the number of probes it took."""
    operator = LocalOperator(plane, choices=ours.choices)
    operator.install_crd(webhook_port=ours.webhook_port)
    operator.register_webhooks(webhook_port=ours.webhook_port)
    wanted = collections.Counter({"mutate CREATE": 1})
    if ours.choices.validate_on_create:
        wanted["validate CREATE"] = 1
    deadline = time.monotonic() + 180
    attempt = 0
    while True:
        attempt += 1
        name = f"probe-{ours.name}-{attempt}"
        calls_before = webhook_calls(plane)
        reviews = (webhook_reviews(operator, ours.webhook_port),
                   webhook_reviews(operator, other.webhook_port))  # fmt: skip
        client.request("POST", mxjobs_path(namespace), body=scale_job(name))
        served = v1beta1_served(client, namespace)
        client.request("DELETE", mxjobs_path(namespace, name))
        calls = webhook_calls(plane) - calls_before
        converted = calls.pop("convert", 0) > 0
        mine = webhook_reviews(operator, ours.webhook_port) - reviews[0]
        theirs = webhook_reviews(operator, other.webhook_port) - reviews[1]
        if (
            +calls == wanted
            and mine == sum(wanted.values())
            and theirs == 0
            and served == converted == ours.choices.v1beta1
        ):
            return attempt
        if time.monotonic() > deadline:
            raise TimeoutError(f"{ours.name}: calls {dict(calls)}, served {served}, reviews "
                               f"{mine} here and {theirs} at the other webhook")  # fmt: skip
        time.sleep(0.5)


SETTLED_FOR: Final = 3.0
"""Seconds without a request from anyone but the segment's own clients before a segment starts."""
BACKGROUND: Final = (("GET", "pods"), ("GET", "services"), ("DELETE", "pods"),
                     ("DELETE", "services"), ("GET", "mxjobs"))  # fmt: skip


def settle(plane: ControlPlane, *, timeout: float = 300) -> float:
    """Until the API server has answered none of ``BACKGROUND`` for ``SETTLED_FOR`` seconds; the
    seconds it took.

    After a segment's namespace is gone, kube-controller-manager's garbage collector still works
    through its queue of the namespace's objects, a GET per object already deleted (measured: a
    thousand GETs of Services into the next segment at 500 jobs). Counted by the API server, they
    would be charged to the next candidate's controller and CPU; the first segment of a run never
    pays them. Nothing of the benchmark runs meanwhile, so any such request is background work.
    """
    started = time.monotonic()
    quiet_since = started

    def background() -> int:
        counts = apiserver_requests(plane)
        return sum(counts[key] for key in BACKGROUND)

    last = background()
    while time.monotonic() - quiet_since < SETTLED_FOR:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"the API server still busy after {timeout:.0f} s")
        time.sleep(0.5)
        now = background()
        if now != last:
            last, quiet_since = now, time.monotonic()
    return round(time.monotonic() - started, 1)


@dataclass(frozen=True)
class Profiling:
    """A CPU profile of kube-apiserver over each segment's first ``seconds`` (0: none)."""

    seconds: int = 0
    directory: Path = BENCH_DIR / "profiles"

    @property
    def apiserver_args(self) -> tuple[str, ...]:
        """The plane turns the profiler off (``localkube.plane.components``); this turns it on."""
        return ("--profiling=true",) if self.seconds else ()


def _segment(
    name: str,
    *,
    webhooks: Sequence[int],
    measure: Callable[[], dict[str, Any]],
    plane: ControlPlane,
    profiling: Profiling,
    index: int,
) -> dict[str, Any]:
    """One segment's report, with the machine's load and the webhooks' CPU around it, and where
    kube-apiserver's CPU went when ``profiling`` asks."""
    load_start = os.getloadavg()
    cpu_start = sum(group_cpu(pid) for pid in webhooks)
    if not profiling.seconds:
        report = measure()
    else:
        profile = profiling.directory / f"{index}-{name}.pprof"
        with profiled(plane, seconds=profiling.seconds, path=profile):
            report = measure()
        report["apiserver_profile"] = {"path": str(profile), "cpu_s": areas(profile)}
    report["webhook_cpu_s"] = round(sum(group_cpu(pid) for pid in webhooks) - cpu_start, 2)
    report["load_average"] = {"start": [round(x, 2) for x in load_start],
                              "end": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip
    report["candidate"] = name
    return report


def run(
    *,
    plane: ControlPlane,
    jobs: int,
    submit_threads: int = 8,
    peer_threads: int = 4,
    lifecycle: bool = True,
    profiling: Profiling = Profiling(),
) -> dict[str, Any]:
    """The five segments of ``ORDER`` on ``plane`` at ``jobs`` jobs each."""
    timeout = 120 + jobs * 2.0
    client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=submit_threads + 8)
    size = SizeRun(plane=plane, client=client, jobs=jobs, baseline_threads=submit_threads,
                   submit_threads=submit_threads, lifecycle=lifecycle, timeout=timeout)  # fmt: skip
    candidates = _start_candidates(plane)
    peer = LocalTrainingOperator(plane)
    probes = f"probes-{uuid.uuid4().hex[:6]}"
    ensure_namespace(client, probes)
    segments: list[dict[str, Any]] = []
    webhook_pids = [c.webhook_pid for c in candidates.values()]
    profiling = dataclasses.replace(profiling, directory=profiling.directory / str(jobs))
    try:
        for index, name in enumerate(ORDER):
            settled = settle(plane)
            where = functools.partial(
                _segment, plane=plane, index=index, webhooks=webhook_pids, profiling=profiling
            )
            if name == PEER:
                LocalOperator(plane).unregister_webhooks()
                peer.replace_crd()
                measure = functools.partial(measure_peer, size, peer, name, threads=peer_threads)
                try:
                    segments.append(where(name, measure=measure))
                finally:
                    peer.uninstall_webhook()
                segments[-1]["settled_s"] = settled
                continue
            ours = candidates[name]
            other = next(c for c in candidates.values() if c is not ours)
            probed = _configure(plane, client, ours, other, namespace=probes)
            log_name = f"controller-{ours.name}-{jobs}-{uuid.uuid4().hex[:6]}.log"
            side = ours_side(LocalOperator(plane, choices=ours.choices), log_name=log_name)
            measure = functools.partial(size.measure, side)
            segment = where(name, measure=measure)
            segment["probes_to_configure"] = probed
            segment["settled_s"] = settled
            segments.append(segment)
    finally:
        LocalOperator(plane).unregister_webhooks()
        for pid in webhook_pids:
            stop_process(pid)
    return {"jobs": jobs, "order": list(ORDER), "segments": segments,
            "candidates": summarise(segments)}  # fmt: skip


FIGURES: Final = {
    "submit_s": ("phase_a", "submit_seconds"),
    "pods_and_services_s": ("phase_a", "seconds"),
    "all_running_s": ("phase_b", "all_running_s"),
    "succeeded_and_cleaned_s": ("phase_b", "succeeded_and_cleaned_s"),
    "controller_cpu_s_phase_a": ("phase_a", "controller_cpu_s"),
    "controller_writes_per_job": ("whole_run", "controller_writes_per_job"),
}
"""Each figure of a candidate: where a segment's report holds it."""


def _figures(segment: Mapping[str, Any]) -> dict[str, float]:
    figures = {
        name: float(segment[part][key])
        for name, (part, key) in FIGURES.items()
        if part in segment and key in segment[part]
    }
    cpu = segment["phase_a"]["control_plane_cpu_s"]
    figures["apiserver_cpu_s_phase_a"] = float(cpu.get("kube-apiserver", 0.0))
    figures["etcd_cpu_s_phase_a"] = float(cpu.get("etcd", 0.0))
    figures["webhook_cpu_s"] = float(segment["webhook_cpu_s"])
    return figures


def summarise(segments: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per candidate: the mean of each figure over its segments, and the segments' spread."""
    by_name: dict[str, list[dict[str, float]]] = collections.defaultdict(list)
    for segment in segments:
        by_name[segment["candidate"]].append(_figures(segment))
    summary: dict[str, dict[str, Any]] = {}
    for name, runs in by_name.items():
        keys = [k for k in runs[0] if all(k in r for r in runs)]
        summary[name] = {
            "segments": len(runs),
            "mean": {k: round(statistics.fmean(r[k] for r in runs), 3) for k in keys},
            "range": {k: [min(r[k] for r in runs), max(r[k] for r in runs)] for k in keys},
        }
    return summary


def ratios(candidates: Mapping[str, Mapping[str, Any]], over: str, under: str) -> dict[str, float]:
    """``over``'s mean figures divided by ``under``'s (below 1: ``over`` is better)."""
    top, bottom = candidates[over]["mean"], candidates[under]["mean"]
    return {k: round(ratio(top[k], bottom[k]), 3) for k in top if k in bottom}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=list(SIZES),
                        help="sizes, one fresh plane each (e.g. 100 500 2000)")  # fmt: skip
    parser.add_argument("--submit-threads", type=int, default=8, help="client threads")
    parser.add_argument("--peer-threads", type=int, default=4,
                        help="training-operator's --controller-threads at its best")  # fmt: skip
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    parser.add_argument("--profile-seconds", type=int, default=0,
                        help="profile kube-apiserver's CPU over each segment's first seconds "
                        "(bench.apiserver_profile; needs go)")  # fmt: skip
    args = parser.parse_args(argv)
    # A directory per run: a later run does not overwrite the profiles a report names.
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    profiling = Profiling(seconds=args.profile_seconds, directory=BENCH_DIR / "profiles" / stamp)
    runs: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    started = time.monotonic()
    for jobs in args.jobs:
        plane = bench_plane(f"compare-{jobs}", extra_apiserver_args=profiling.apiserver_args)
        try:
            runs.append(run(plane=plane, jobs=jobs, submit_threads=args.submit_threads,
                            peer_threads=args.peer_threads, profiling=profiling))  # fmt: skip
            info = info or machine(plane)
        finally:
            plane.down()
    sizes = " ".join(map(str, args.jobs))
    report = {
        "benchmark": "creation_compare",
        "runs": runs,
        "machine": info,
        "seconds": round(time.monotonic() - started),
        "command": f".venv/bin/python -m bench.creation_compare --jobs {sizes} "
        f"--submit-threads {args.submit_threads} --peer-threads {args.peer_threads}"
        + (f" --profile-seconds {args.profile_seconds}" if args.profile_seconds else ""),
    }
    return emit(report, args.output)


if __name__ == "__main__":
    main()
