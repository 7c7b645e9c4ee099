"""Item 1: the admission webhook under load, against the ceiling of its own server stack.

The production server (``mxjob-webhook`` with the Deployment's flags: gunicorn gthread, 1 worker
x 8 threads, TLS, JSON logs at info) answers mutate and validate reviews of two realistic MXJobs;
the baseline is the same server configuration answering a constant review
(``bench.constant_webhook``). The load generator is several spawned processes
(``bench.loadgen``), each with one keep-alive TLS connection, on loopback.

For every target: reviews/s at saturation (closed loop), then p50/p99 latency at 25 %, 50 % and
75 % of that target's own saturation (open loop, latency from each review's due time).

The two jobs ("3" and "12" templates' worth):

- ``3``: an MXTrain job with Scheduler, Server (2) and Worker (4), each template one realistic
  ``mxnet`` container (command, args, 6 env vars including a Secret reference, resources, two
  volume mounts) with volumes, node selector and tolerations: 3 container templates.
- ``12``: the same three replica types, each template with four such containers (``mxnet`` plus
  data-prefetch, log-shipper and metrics-exporter sidecars): 12 container templates, the bulk of
  a large job (an MXJob has at most three replica types per mode, so "12 replica types' worth"
  is measured as 12 templates' worth of containers).

The mutate review carries the job as a user wrote it (the webhook validates, defaults and
patches); the validate review carries it defaulted, as the API server sends it after mutation.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import shutil
import ssl
import statistics
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench import loadgen
from bench.common import BENCH_DIR, emit, machine, percentile, ratio
from certs import CertificateAuthority
from localkube.base import programs
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from shared.defaults import apply_defaults
from tests.webhook.reviews_samples import admission_review
from webhook.app import MUTATE_PATH, VALIDATE_PATH

FRACTIONS = (0.25, 0.5, 0.75)
TARGET_RATIO = 0.7
TARGET_P99_MS_AT_HALF = 5.0


# -- the jobs -----------------------------------------------------------------------------------
def _container(name: str, image: str, role: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python", f"/opt/mxjob/{name}.py"],
        "args": ["--role", role, "--log-interval", "50", "--data-dir", "/data/imagenet"],
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "MXNET_KVSTORE_BIGARRAY_BOUND", "value": "1000000"},
            {"name": "OMP_NUM_THREADS", "value": "4"},
            {"name": "DATA_BUCKET", "value": "s3://datasets/imagenet/train"},
            {"name": "EXPERIMENT", "value": "resnet50-dist"},
            {
                "name": "AWS_SECRET_ACCESS_KEY",
                "valueFrom": {"secretKeyRef": {"name": "s3-credentials", "key": "secret"}},
            },
        ],
        "resources": {
            "requests": {"cpu": "2", "memory": "4Gi"},
            "limits": {"cpu": "4", "memory": "8Gi"},
        },
        "volumeMounts": [
            {"name": "data", "mountPath": "/data", "readOnly": True},
            {"name": "scratch", "mountPath": "/scratch"},
        ],
    }


SIDECARS = ("data-prefetch", "log-shipper", "metrics-exporter")


def _template(role: str, containers_per_template: int) -> dict[str, Any]:
    containers = [_container("mxnet", "mxjob/mxnet:1.9.1-cpu", role)]
    containers += [
        _container(sidecar, f"mxjob/{sidecar}:1.0", role)
        for sidecar in SIDECARS[: containers_per_template - 1]
    ]
    return {
        "metadata": {
            "labels": {"team": "vision", "experiment": "resnet50-dist"},
            "annotations": {"prometheus.io/scrape": "true"},
        },
        "spec": {
            "containers": containers,
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet"}},
                {"name": "scratch", "emptyDir": {"sizeLimit": "10Gi"}},
            ],
            "nodeSelector": {"node.kubernetes.io/instance-type": "c5.4xlarge"},
            "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "training"}],
        },
    }


def bench_job(name: str, *, templates: int) -> dict[str, Any]:
    """The "3" or "12" job described in the module docstring."""
    if templates not in (3, 12):
        raise ValueError("templates must be 3 or 12")
    per_template = templates // 3
    replicas = {
        "Scheduler": {"replicas": 1, "template": _template("scheduler", per_template)},
        "Server": {"replicas": 2, "template": _template("server", per_template)},
        "Worker": {"replicas": 4, "template": _template("worker", per_template)},
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MXJob",
        "metadata": {"name": name, "namespace": "bench", "labels": {"team": "vision"}},
        "spec": {
            "jobMode": "MXTrain",
            "mxReplicaSpecs": replicas,
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 3},
        },
    }


def review_bodies(endpoint: str, *, templates: int, count: int) -> tuple[bytes, ...]:
    """``count`` distinct reviews (uid and name differ) as the API server would send them."""
    bodies = []
    for number in range(count):
        job = bench_job(f"bench-{templates}-{number}", templates=templates)
        obj = job if endpoint == "mutate" else apply_defaults(job)
        review = admission_review(obj, uid=f"00000000-0000-4000-8000-{number:012d}")
        bodies.append(json.dumps(review, separators=(",", ":")).encode())
    return tuple(bodies)


# -- servers ------------------------------------------------------------------------------------
def make_certificates(directory: Path) -> Path:
    """A CA and a serving certificate for 127.0.0.1; returns the CA file for the clients."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create(common_name="mxjob-bench-ca")
    serving = ca.issue_serving(hosts=("127.0.0.1", "localhost"))
    (directory / "tls.crt").write_bytes(serving.cert_pem)
    (directory / "tls.key").write_bytes(serving.key_pem)
    (directory / "tls.key").chmod(0o600)
    (directory / "ca.crt").write_bytes(ca.pair.cert_pem)
    return directory / "ca.crt"


def server_argv(
    kind: str, *, port: int, cert_dir: Path, worker: str = "webhook", log_level: str = "info"
) -> list[str]:
    """The production webhook (flags of ``manifests/base/webhook.yaml``) or the baseline.

    ``worker`` picks the baseline's gunicorn worker (``bench.constant_webhook.WORKERS``).
    """
    flags = [
        f"--bind=127.0.0.1:{port}",
        f"--cert-dir={cert_dir}",
        "--graceful-timeout=20",
        "--log-format=json",
        f"--log-level={log_level}",
    ]
    if kind == "webhook":
        return [str(Path(sys.executable).parent / "mxjob-webhook"), *flags]
    return [sys.executable, "-m", "bench.constant_webhook", f"--worker={worker}", *flags]


def start_server(
    kind: str, *, work_dir: Path, cafile: Path, worker: str = "webhook", log_level: str = "info"
) -> tuple[programs.Running, int]:
    """Start the ``kind`` server on a free port; return it once ``/readyz`` answers over TLS."""
    port = free_port()
    argv = server_argv(kind, port=port, cert_dir=cafile.parent, worker=worker, log_level=log_level)
    running = programs.start(
        programs.Program(
            name=f"{kind} server",
            argv=argv,
            log=work_dir / f"{kind}-{log_level}.log",
            cwd=PROJECT_ROOT,  # `python -m bench.constant_webhook` imports from the checkout
        )
    )
    context = ssl.create_default_context(cafile=str(cafile))
    try:
        programs.wait_ready(
            running,
            lambda: programs.answers_200(f"https://127.0.0.1:{port}/readyz", context=context),
            what=f"the {kind} server's /readyz",
            timeout=30,
        )
    except programs.ProgramError:
        running.stop()
        raise
    return running, port


def check_answer(port: int, cafile: Path, path: str, body: bytes, *, expect_patch: bool) -> None:
    """One review before the load: the benchmark must measure admissions, not refusals."""
    context = ssl.create_default_context(cafile=str(cafile))
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}{path}",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        answer = json.loads(response.read())["response"]
    if not answer.get("allowed"):
        raise RuntimeError(f"{path} refused the benchmark job: {answer.get('status')}")
    if expect_patch and "patch" not in answer:
        raise RuntimeError(f"{path} allowed the benchmark job without defaulting it")


# -- load -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Endpoint:
    """Where the load goes: a server's port, the CA that signed it, a path and the reviews."""

    port: int
    cafile: Path
    path: str
    bodies: tuple[bytes, ...]


class LoadGenerator:
    """A pool of spawned ``bench.loadgen`` processes, reused for every measurement; each
    measurement is ``warmup`` unmeasured seconds, then ``duration`` measured ones."""

    def __init__(self, processes: int, *, warmup: float, duration: float) -> None:
        self.processes = processes
        self.warmup = warmup
        self.duration = duration
        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=processes, mp_context=multiprocessing.get_context("spawn")
        )
        # Spawn every process before any measurement, not during the first one.
        list(self.pool.map(loadgen.ready, range(processes)))

    def run(self, endpoint: Endpoint, *, rate: float | None) -> dict[str, float]:
        """One measurement: closed loop when ``rate`` is None, else that many reviews/s."""
        start_at = time.time() + 0.3 + self.warmup
        per_process = None if rate is None else rate / self.processes
        bodies = endpoint.bodies
        specs = [
            loadgen.LoadSpec(
                host="127.0.0.1",
                port=endpoint.port,
                cafile=str(endpoint.cafile),
                path=endpoint.path,
                bodies=bodies[number:] + bodies[:number],  # processes start at different reviews
                start_at=start_at,
                warmup=self.warmup,
                duration=self.duration,
                rate_per_second=per_process,
            )
            for number in range(self.processes)
        ]
        results = list(self.pool.map(loadgen.run, specs))
        latencies = [value for result in results for value in result.latencies]
        completed = sum(result.completed for result in results)
        return {
            "achieved_rps": round(completed / self.duration, 1),
            "errors": sum(result.errors for result in results),
            "p50_ms": round(percentile(latencies, 0.50) * 1000, 3),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 3),
            "reviews": completed,
        }

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)


def measure_target(load: LoadGenerator, endpoint: Endpoint) -> dict[str, Any]:
    """Saturation, then the three fixed offered rates relative to it."""
    saturation = load.run(endpoint, rate=None)
    points = []
    for fraction in FRACTIONS:
        offered = saturation["achieved_rps"] * fraction
        point = load.run(endpoint, rate=offered)
        points.append({"fraction": fraction, "offered_rps": round(offered, 1), **point})
    return {
        "saturation_rps": saturation["achieved_rps"],
        "saturation_p50_ms": saturation["p50_ms"],
        "saturation_p99_ms": saturation["p99_ms"],
        "errors": saturation["errors"] + sum(int(p["errors"]) for p in points),
        "request_bytes": len(endpoint.bodies[0]),
        "points": points,
    }


WORKER_ORDER: Final = ("webhook", "gthread", "gthread", "webhook")
"""The A/B of the baseline's two gunicorn workers, each measured twice, in A B B A order so
that a drift of the machine during the run weighs on both alike."""


def worker_ab(
    load: LoadGenerator,
    *,
    work_dir: Path,
    cafile: Path,
    bodies: tuple[bytes, ...],
    offered_rps: float,
) -> dict[str, Any]:
    """The ceiling served by ``webhook.worker``'s subclass and by gunicorn's own ``gthread``.

    Each segment starts a fresh server and measures its saturation (closed loop) and its
    latency at one offered rate, the same for both workers; the figure of a worker is the mean
    of its two segments, and ``webhook_over_gthread`` says what the subclass costs.
    """
    segments: list[dict[str, Any]] = []
    for worker in WORKER_ORDER:
        process, port = start_server("constant", work_dir=work_dir, cafile=cafile, worker=worker)
        endpoint = Endpoint(port=port, cafile=cafile, path=MUTATE_PATH, bodies=bodies)
        try:
            saturation = load.run(endpoint, rate=None)
            point = load.run(endpoint, rate=offered_rps)
        finally:
            process.stop()
        segments.append(
            {
                "worker": worker,
                "saturation_rps": saturation["achieved_rps"],
                "p50_ms": point["p50_ms"],
                "p99_ms": point["p99_ms"],
                "errors": saturation["errors"] + point["errors"],
            }
        )
    summary = {
        worker: {
            figure: round(
                statistics.fmean(float(s[figure]) for s in segments if s["worker"] == worker), 3
            )
            for figure in ("saturation_rps", "p50_ms", "p99_ms")
        }
        for worker in dict.fromkeys(WORKER_ORDER)
    }
    return {
        "offered_rps": round(offered_rps, 1),
        "segments": segments,
        "workers": summary,
        "webhook_over_gthread": {
            figure: round(ratio(summary["webhook"][figure], summary["gthread"][figure]), 3)
            for figure in ("saturation_rps", "p50_ms", "p99_ms")
        },
    }


def run(
    *,
    duration: float = 5.0,
    warmup: float = 1.0,
    processes: int = 4,
    bodies_per_target: int = 512,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    """Measure the ceiling and the four real targets; return the report section.

    ``bodies_per_target`` distinct jobs (names differ) are sent round-robin: more than the
    MX_CONFIG cache in ``shared.env`` holds, so every review computes its env afresh, as a
    stream of different jobs would.
    """
    work_dir = work_dir or BENCH_DIR / "webhook-load"
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    cafile = make_certificates(work_dir / "certs")
    targets: dict[str, dict[str, Any]] = {}
    load = LoadGenerator(processes, warmup=warmup, duration=duration)
    try:
        ceiling_bodies = review_bodies("mutate", templates=3, count=bodies_per_target)
        process, port = start_server("constant", work_dir=work_dir, cafile=cafile)
        try:
            targets["ceiling"] = measure_target(
                load, Endpoint(port=port, cafile=cafile, path=MUTATE_PATH, bodies=ceiling_bodies)
            )
        finally:
            process.stop()
        workers = worker_ab(
            load,
            work_dir=work_dir,
            cafile=cafile,
            bodies=ceiling_bodies,
            offered_rps=targets["ceiling"]["saturation_rps"] * 0.5,
        )
        process, port = start_server("webhook", work_dir=work_dir, cafile=cafile)
        try:
            for templates in (3, 12):
                for endpoint, path in (("mutate", MUTATE_PATH), ("validate", VALIDATE_PATH)):
                    bodies = review_bodies(endpoint, templates=templates, count=bodies_per_target)
                    check_answer(port, cafile, path, bodies[0], expect_patch=endpoint == "mutate")
                    targets[f"{endpoint}-{templates}"] = measure_target(
                        load, Endpoint(port=port, cafile=cafile, path=path, bodies=bodies)
                    )
        finally:
            process.stop()
    finally:
        load.close()
    ceiling = targets["ceiling"]["saturation_rps"]
    for name, target in targets.items():
        target["ratio_to_ceiling"] = round(ratio(target["saturation_rps"], ceiling), 3)
        half = next(p for p in target["points"] if p["fraction"] == 0.5)
        if name != "ceiling":
            target["meets_throughput_target"] = target["ratio_to_ceiling"] >= TARGET_RATIO
            target["meets_latency_target"] = half["p99_ms"] <= TARGET_P99_MS_AT_HALF
    return {
        "benchmark": "webhook_load",
        "machine": machine(),
        "config": {
            "duration_s": duration,
            "warmup_s": warmup,
            "load_processes": processes,
            "server": "gunicorn gthread, 1 worker x 8 threads, TLS, keep-alive, JSON logs (info)",
        },
        "targets": targets,
        "worker_ab": workers,
        "command": command_line(duration=duration, warmup=warmup, processes=processes),
    }


def command_line(*, duration: float, warmup: float, processes: int) -> str:
    return (
        f".venv/bin/python -m bench.webhook_load --duration {duration:g} --warmup {warmup:g} "
        f"--processes {processes}"
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before")
    parser.add_argument("--processes", type=int, default=4, help="load-generator processes")
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    report = run(duration=args.duration, warmup=args.warmup, processes=args.processes)
    return emit(report, args.output)


if __name__ == "__main__":
    main()
