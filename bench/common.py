"""What every benchmark shares: the machine's description, process accounting from ``/proc``,
the API server's request counters, request counting on our own clients, and percentiles.

The machine is noisy (2 cores shared by etcd, the API server, the operator and the load
generator), so every benchmark reports ratios against a baseline measured in the same run; the
helpers here only measure, they never judge.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from controller.runtime.client import KubeClient, Query, WatchStream
from localkube.base.paths import PROJECT_ROOT
from localkube.plane.controlplane import ControlPlane
from localkube.plane.settings import ControlPlaneSettings

BENCH_DIR = PROJECT_ROOT / ".local" / "bench"
"""Every benchmark's own control planes and servers live under here (never a test's plane)."""

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

# Writes as the API server's metrics name them (WATCH/LIST/GET are reads).
WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION"})


def emit(report: dict[str, Any], output: Path | None) -> dict[str, Any]:
    """Write a benchmark's report as JSON to ``output``, or print it; return it unchanged."""
    text = json.dumps(report, indent=2)
    if output:
        output.write_text(text + "\n")
    else:
        print(text)
    return report


class JobsRun(Protocol):
    """A benchmark's ``run``: ``jobs`` MXJobs from ``threads`` client threads on ``plane``."""

    def __call__(self, *, plane: ControlPlane, jobs: int, threads: int) -> dict[str, Any]: ...


def jobs_main(
    argv: Sequence[str] | None,
    *,
    module: str,
    description: str,
    plane_name: str,
    run: JobsRun,
    default_threads: int,
    jobs_help: str,
) -> dict[str, Any]:
    """The command line of a benchmark that measures ``--jobs`` MXJobs from ``--threads`` client
    threads on one fresh plane (``bench_plane(plane_name)``), down again afterwards; the report
    gets the machine and the command that reproduces it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", type=int, default=500, help=jobs_help)
    parser.add_argument("--threads", type=int, default=default_threads, help="client threads")
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    plane = bench_plane(plane_name)
    try:
        report = run(plane=plane, jobs=args.jobs, threads=args.threads)
        report["machine"] = machine(plane)
    finally:
        plane.down()
    report["command"] = f".venv/bin/python -m {module} --jobs {args.jobs} --threads {args.threads}"
    return emit(report, args.output)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile by nearest rank (0 for no values): no interpolation to hide
    how few samples the tail has."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``, or infinity when the baseline is zero (never a division error)."""
    return value / baseline if baseline else float("inf")


# -- the machine ------------------------------------------------------------------------------
def _first_line(argv: Sequence[str]) -> str:
    try:
        result = subprocess.run(list(argv), capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0].strip() if lines else "unavailable"


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return 0.0


def machine(plane: ControlPlane | None = None) -> dict[str, Any]:
    """Cores, memory and the versions of everything measured, for the report's header."""
    versions = {
        "python": platform.python_version(),
        **{
            package: metadata.version(package)
            for package in ("gunicorn", "flask", "urllib3", "kubernetes")
        },
    }
    if plane is not None and plane.kubectl_path.exists():
        state = plane.state()
        if state is not None:
            bin_dir = Path(state.bin_dir)
            versions["kube-apiserver"] = _first_line([str(bin_dir / "kube-apiserver"), "--version"])
            versions["etcd"] = _first_line([str(bin_dir / "etcd"), "--version"])
    return {
        "cores": os.cpu_count() or 0,
        "cpu": _cpu_model(),
        "memory_gib": _memory_gib(),
        "kernel": platform.release(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "versions": versions,
    }


# -- processes --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProcessSample:
    """One look at a process in ``/proc``: CPU seconds so far, resident and peak memory."""

    cpu_seconds: float
    rss_mib: float
    peak_rss_mib: float


def sample_process(pid: int) -> ProcessSample:
    """``utime + stime`` from ``/proc/<pid>/stat`` and ``VmRSS``/``VmHWM`` from ``status``.

    ``VmHWM`` is the kernel's own high-water mark, so the peak is exact even between samples.
    """
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # Fields after the command: state is index 0, so utime (field 14) is index 11.
    cpu = (int(stat[11]) + int(stat[12])) / CLOCK_TICKS
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) / 1024
    return ProcessSample(cpu, values.get("VmRSS", 0.0), values.get("VmHWM", 0.0))


def component_cpu(plane: ControlPlane) -> dict[str, float]:
    """CPU seconds used so far by etcd, kube-apiserver and kube-controller-manager."""
    state = plane.state()
    if state is None:
        return {}
    used: dict[str, float] = {}
    for name, pid in state.pids.items():
        with contextlib.suppress(OSError, IndexError, ValueError):
            used[name] = sample_process(pid).cpu_seconds
    return used


# -- control planes ---------------------------------------------------------------------------
def bench_plane(
    name: str,
    *,
    extra_apiserver_args: tuple[str, ...] = (),
    scheduler: bool = False,
    extra_scheduler_args: tuple[str, ...] = (),
    scheduler_config: Mapping[str, Any] | None = None,
) -> ControlPlane:
    """A fresh control plane of the benchmarks' own under ``.local/bench/<name>``.

    With ``scheduler``, kube-scheduler runs too (without the alpha gang features), configured by
    ``scheduler_config`` when given (``ControlPlaneSettings.scheduler_config``).

    Fresh: what a previous run left in etcd would make the first and the last measurement of a
    growth series differ for a reason that is not the code.
    """
    state_dir = BENCH_DIR / name
    plane = ControlPlane(
        ControlPlaneSettings(
            state_dir=state_dir,
            extra_apiserver_args=extra_apiserver_args,
            scheduler=scheduler,
            extra_scheduler_args=extra_scheduler_args,
            scheduler_config=scheduler_config,
        )
    )
    plane.down()
    shutil.rmtree(state_dir, ignore_errors=True)
    plane.up()
    return plane


# -- API request accounting -------------------------------------------------------------------
RequestKey = tuple[str, str]
"""``(VERB, resource[/subresource])`` as the API server's ``apiserver_request_total`` names it."""

_SERIES = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def apiserver_metrics(plane: ControlPlane) -> str:
    """kube-apiserver's ``/metrics``, in Prometheus' text format."""
    state = plane.state()
    if state is None:
        raise RuntimeError("the control plane is not running")
    with urllib.request.urlopen(
        f"{state.server}/metrics", context=plane.ssl_context(), timeout=30
    ) as response:
        return str(response.read().decode())


def apiserver_requests(
    plane: ControlPlane, *, groups: Collection[str] | None = None
) -> collections.Counter[RequestKey]:
    """``apiserver_request_total`` summed by verb and resource (subresources kept apart).

    ``groups`` keeps only the API groups named (``""`` is the core group): e.g. the core
    ``events`` a controller writes apart from kube-scheduler's ``events.k8s.io`` ones.
    """
    text = apiserver_metrics(plane)
    totals: collections.Counter[RequestKey] = collections.Counter()
    for line in text.splitlines():
        match = _SERIES.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        if groups is not None and labels.get("group", "") not in groups:
            continue
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource = f"{resource}/{labels['subresource']}"
        totals[(labels.get("verb", ""), resource)] += int(float(match["value"]))
    return totals


def _resource_of(path: str) -> str:
    """The resource (and subresource) a request path names, as the API server counts it."""
    parts = [p for p in path.split("?", maxsplit=1)[0].split("/") if p]
    # /api/v1/... or /apis/<group>/<version>/...
    rest = parts[2:] if parts and parts[0] == "api" else parts[3:]
    if len(rest) >= 2 and rest[0] == "namespaces":
        rest = rest[2:]
    if not rest:
        return "namespaces" if "namespaces" in parts else ""
    resource = rest[0]
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    return resource


def _verb_of(method: str, path: str, query: Query | None, *, watch: bool) -> str:
    if watch:
        return "WATCH"
    if method == "GET":
        parts = [p for p in path.split("/") if p]
        rest = parts[2:] if parts and parts[0] == "api" else parts[3:]
        if len(rest) >= 2 and rest[0] == "namespaces":
            rest = rest[2:]
        return "GET" if len(rest) >= 2 else "LIST"
    return method.upper()


class CountingClient(KubeClient):
    """A :class:`KubeClient` that counts its own requests the way the API server does.

    The benchmark's driver and the test kubelet use it, so that what they asked for can be
    subtracted from ``apiserver_request_total`` and the rest attributed to the controller.
    """

    def __init__(self, inner: KubeClient) -> None:
        super().__init__(inner.client)
        self._lock = threading.Lock()
        self.counts: collections.Counter[RequestKey] = collections.Counter()

    def _count(self, key: RequestKey) -> None:
        with self._lock:
            self.counts[key] += 1

    def snapshot(self) -> collections.Counter[RequestKey]:
        with self._lock:
            return collections.Counter(self.counts)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Query | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Any:
        self._count((_verb_of(method, path, query, watch=False), _resource_of(path)))
        return super().request(
            method, path, body=body, query=query, content_type=content_type, timeout=timeout
        )

    def open_watch(self, path: str, *, query: Query, timeout: float = 90) -> WatchStream:
        self._count(("WATCH", _resource_of(path)))
        return super().open_watch(path, query=query, timeout=timeout)


def subtract(
    total: Mapping[RequestKey, int], *others: Mapping[RequestKey, int]
) -> collections.Counter[RequestKey]:
    """``total`` minus every counter in ``others``, keeping only positive counts."""
    result: collections.Counter[RequestKey] = collections.Counter(total)
    for other in others:
        result.subtract(other)
    return collections.Counter({k: v for k, v in result.items() if v > 0})


def delta(
    after: Mapping[RequestKey, int], before: Mapping[RequestKey, int]
) -> collections.Counter[RequestKey]:
    return subtract(after, before)


def keyed(counts: Mapping[RequestKey, int], resources: Sequence[str]) -> dict[str, int]:
    """``{"VERB resource": n}`` for the given resources (and their subresources), sorted."""
    wanted = tuple(resources)
    return {
        f"{verb} {resource}": count
        for (verb, resource), count in sorted(counts.items())
        if resource.split("/")[0] in wanted and count
    }


# -- waiting on a watch -----------------------------------------------------------------------
class WatchCounter:
    """Follows one resource in one namespace with a watch and keeps the latest of each object.

    The driver must not LIST while it waits (a LIST during the run would be counted against the
    controller's "no LIST after start-up"), so it watches from the (empty) namespace's start.
    """

    def __init__(self, client: KubeClient, path: str) -> None:
        self.client = client
        self.path = path
        self.objects: dict[str, dict[str, Any]] = {}
        self.first_seen: dict[str, float] = {}
        self.changed = threading.Condition()
        self._stream: WatchStream | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch-{path}")

    def start(self) -> WatchCounter:
        self._thread.start()
        return self

    def _run(self) -> None:
        resource_version = ""
        while not self._stop.is_set():
            query: Query = [("allowWatchBookmarks", "true"), ("timeoutSeconds", "3600")]
            if resource_version:
                query.append(("resourceVersion", resource_version))
            try:
                self._stream = self.client.open_watch(self.path, query=query, timeout=3700)
                for event in self._stream:
                    obj = event.get("object") or {}
                    meta = obj.get("metadata") or {}
                    resource_version = str(meta.get("resourceVersion") or resource_version)
                    kind = event.get("type")
                    if kind not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    name = str(meta.get("name"))
                    with self.changed:
                        if kind == "DELETED":
                            self.objects.pop(name, None)
                        else:
                            self.objects[name] = obj
                            self.first_seen.setdefault(name, time.monotonic())
                        self.changed.notify_all()
            except Exception:
                if self._stop.is_set():
                    return
                time.sleep(0.2)

    def wait(self, predicate: Any, *, timeout: float, what: str) -> float:
        """Wait until ``predicate(objects)`` holds; return the monotonic time it first did."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate(self.objects):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
                self.changed.wait(min(left, 1.0))
            return time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()


@contextlib.contextmanager
def watching(client: KubeClient, *paths: str) -> Iterator[list[WatchCounter]]:
    counters = [WatchCounter(client, path).start() for path in paths]
    try:
        yield counters
    finally:
        for counter in counters:
            counter.stop()


def python_command(module: str, *args: str) -> list[str]:
    """``python -m <module> args`` with this interpreter (the project's virtualenv)."""
    return [sys.executable, "-m", module, *args]
