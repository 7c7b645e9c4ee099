"""``make demo DEMO_ARGS=--real-node``: the same demo, with the operator and the job in containers.

``python -m localkube.scenarios.demo --real-node`` builds (or finds) the project's images, starts
the control plane with the real node (``RealCluster``, as ``make dev-up DEV_ARGS=--real-node``
does, or reuses the one running), installs the operator with ``kubectl apply -k`` of the image
overlay, and runs the example MXJob: every replica a container with its own address, finding
the others through their Services and CoreDNS. What the pods print is read from the kubelet's
own container logs as they are written; at the end, ``kubectl logs`` shows each pod's output as
kube-apiserver fetches it from the real kubelet. The time of each step is printed.

The example is applied as written except for its resource requests, which are scaled down when
they do not fit the node (the CPU example asks for 2.5 CPUs; this machine may have 2): a job
whose pods cannot be scheduled would show nothing. The functions that decide it are pure
(:func:`fit_requests`, :func:`missing_images`), tested apart.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

from controller.integrations.gang import quantity
from localkube.base.api import Api, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.images.build import ImageBuildError, ProjectImages, ensure_images
from localkube.kubelet import crilog
from localkube.plane.controlplane import ControlPlaneError
from localkube.realnode.cluster import SYSTEM_NAMESPACE, RealCluster
from localkube.realnode.settings import RealNodeError
from localkube.scenarios import checkpoints
from localkube.scenarios.jobwatch import (
    MAIN_CONTAINER,
    Progress,
    delete_previous,
    inspect_commands,
    load_job,
    print_outcome,
    watch_job,
)

FITTED_RESOURCES = ("cpu", "memory")
HEADROOM = Fraction(9, 10)
"""Share of the node's free capacity a fitted job may ask for (the rest stays for the system)."""
MINIMUM = {"cpu": Fraction(1, 100), "memory": Fraction(64 * 2**20)}
"""No request is scaled below 10m CPU or 64Mi: MXNet does not start in less memory."""
STEP = {"cpu": Fraction(1, 1000), "memory": Fraction(2**20)}
"""Scaled amounts are rounded down to whole millicores and mebibytes, as a person writes them."""
DEFAULT_REGISTRY = "docker.io"
REPLICA = re.compile(r"^[a-z]+-\d+$")
"""What follows ``<job>-`` in the name of the job's pod: ``<replica type>-<index>``."""


# -- pure decisions ----------------------------------------------------------------------------
def normalized_image(reference: str) -> str:
    """An image reference as containerd names it: ``mxjob/x:1`` is ``docker.io/mxjob/x:1``,
    ``python`` is ``docker.io/library/python:latest`` (the rules of ``docker pull``)."""
    name, _, digest = reference.partition("@")
    first, slash, _ = name.partition("/")
    has_registry = bool(slash) and ("." in first or ":" in first or first == "localhost")
    if not has_registry:
        name = f"{DEFAULT_REGISTRY}/{name if slash else 'library/' + name}"
    if not digest and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


def job_containers(job: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every container (and init container) of every replica type of ``job``."""
    for replica in (job.get("spec", {}).get("mxReplicaSpecs") or {}).values():
        spec = (replica or {}).get("template", {}).get("spec", {})
        yield from spec.get("initContainers") or []
        yield from spec.get("containers") or []


def missing_images(job: Mapping[str, Any], *, available: Iterable[str]) -> list[str]:
    """The images ``job`` names that the node does not have (it has no registry to pull from)."""
    have = {normalized_image(ref) for ref in available}
    wanted = {str(c.get("image", "")) for c in job_containers(job)}
    return sorted(ref for ref in wanted if normalized_image(ref) not in have)


def _replicas(replica: Mapping[str, Any]) -> int:
    return int(replica.get("replicas", 1) or 0)


def requested(job: Mapping[str, Any], resource: str) -> Fraction:
    """What all of ``job``'s pods ask for of ``resource`` together (replicas x containers)."""
    total = Fraction(0)
    for replica in (job.get("spec", {}).get("mxReplicaSpecs") or {}).values():
        containers = (replica or {}).get("template", {}).get("spec", {}).get("containers") or []
        for container in containers:
            request = ((container.get("resources") or {}).get("requests") or {}).get(resource)
            if request is not None:
                total += quantity.parse(str(request)).value * _replicas(replica)
    return total


@dataclass(frozen=True)
class Fit:
    """How :func:`fit_requests` changed a job: the factor per resource it scaled."""

    job: dict[str, Any]
    factors: dict[str, Fraction] = field(default_factory=dict)

    def describe(self) -> str:
        scaled = [f"{name} x{float(f):.2f}" for name, f in self.factors.items() if f != 1]
        return ", ".join(scaled) or "as written"


def fit_requests(job: Mapping[str, Any], *, free: Mapping[str, Fraction]) -> Fit:
    """A copy of ``job`` whose requests of each resource in ``free`` fit in ``HEADROOM`` of it,
    scaled by one factor per resource so the replicas keep their proportions; a job that
    fits is left as it is. Limits are scaled too, so no request ends above its limit."""
    fitted = copy.deepcopy(dict(job))
    factors: dict[str, Fraction] = {}
    for resource, capacity in free.items():
        total = requested(job, resource)
        budget = capacity * HEADROOM
        factor = min(Fraction(1), budget / total) if total > 0 else Fraction(1)
        factors[resource] = factor
        if factor == 1:
            continue
        for container in job_containers(fitted):
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                amounts = resources.get(kind) or {}
                if resource in amounts:
                    value = quantity.parse(str(amounts[resource]))
                    step = STEP.get(resource, Fraction(1))
                    rounded = (value.value * factor // step) * step
                    scaled = max(rounded, MINIMUM.get(resource, Fraction(0)))
                    amounts[resource] = quantity.format_quantity(
                        quantity.Quantity(scaled, value.binary)
                    )
    return Fit(fitted, factors)


def free_capacity(
    node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> dict[str, Fraction]:
    """The node's allocatable CPU and memory less what its running pods request."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    free = {r: quantity.parse(str(allocatable.get(r, "0"))).value for r in FITTED_RESOURCES}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            requests = (container.get("resources") or {}).get("requests") or {}
            for resource in FITTED_RESOURCES:
                if resource in requests:
                    free[resource] -= quantity.parse(str(requests[resource])).value
    return {resource: max(amount, Fraction(0)) for resource, amount in free.items()}


# -- the pods' output, from the kubelet's container logs ----------------------------------------
@dataclass
class ContainerLogFollower:
    """New complete lines of a job's ``mxnet`` containers, read from the kubelet's ``podLogsDir``
    (``<namespace>_<pod>_<uid>/<container>/<restart>.log``, in the CRI log format)."""

    pod_logs: Path
    namespace: str
    job: str
    _offsets: dict[Path, int] = field(default_factory=dict)
    _partial: dict[Path, bytes] = field(default_factory=dict)

    def _files(self) -> Iterator[tuple[str, Path]]:
        prefix = f"{self.namespace}_{self.job}-"
        for pod_dir in sorted(self.pod_logs.glob(f"{prefix}*")):
            pod = pod_dir.name[len(self.namespace) + 1 :].rsplit("_", 1)[0]
            replica = pod[len(self.job) + 1 :]
            if not REPLICA.match(replica):  # a pod of another job whose name starts like this one
                continue
            for path in sorted((pod_dir / MAIN_CONTAINER).glob("*.log")):
                yield replica, path

    def new_lines(self) -> Iterator[tuple[str, str]]:
        for replica, path in self._files():
            offset = self._offsets.get(path, 0)
            with contextlib.suppress(OSError), path.open("rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
                end = chunk.rfind(b"\n") + 1
                self._offsets[path] = offset + end
                for raw in chunk[:end].splitlines():
                    entry = crilog.parse(raw)
                    if entry is None:
                        continue
                    text = self._partial.pop(path, b"") + entry.text
                    if entry.partial:
                        self._partial[path] = text
                    elif text.strip():
                        yield replica, text.decode(errors="replace")


# -- the demo ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Timings:
    """Seconds each step of the demo took, printed at its end."""

    images: float
    cluster: float
    install: float
    job: float
    resumed: bool


def start_cluster(state_dir: Path, *, progress: Progress) -> tuple[RealCluster, float, float]:
    """The images, then the running plane and node of ``state_dir`` or new ones, with the
    operator installed; the cluster and the seconds of the first two steps."""
    mark = time.monotonic()
    progress.event("images: building what changed (make images; the first build takes ~2 min)")
    images = ensure_images(log=lambda line: progress.event(f"  {line}"))
    images_seconds = time.monotonic() - mark
    progress.event(f"images ready in {images_seconds:.1f} s: {describe_images(images)}")
    mark = time.monotonic()
    cluster = RealCluster.resume(state_dir, images=images)
    if cluster is not None:
        progress.event(f"reusing the real node running in {state_dir}")
    else:
        progress.event("starting the control plane and the real node (containerd, kubelet, ...)")
        cluster = RealCluster.start(
            state_dir, images=images, log=lambda line: progress.event(f"  {line}")
        )
    return cluster, images_seconds, time.monotonic() - mark


def describe_images(images: ProjectImages) -> str:
    return ", ".join(
        f"{image.ref.rsplit('/', 1)[-1]} {image.size_bytes / 2**20:.0f} MiB"
        for image in (images.webhook, images.controller, images.examples)
    )


def node_fit(cluster: RealCluster, job: dict[str, Any], *, share: Fraction = Fraction(1)) -> Fit:
    """``job`` fitted into ``share`` of what the node has free now: jobs that run side by side
    each take their share, fitted before any of them is created."""
    api = Api.from_kubeconfig(cluster.plane.kubeconfig)
    name = cluster.node.settings.node_name
    node = api.request("GET", f"/api/v1/nodes/{name}")
    pods = api.request("GET", "/api/v1/pods", query=[("fieldSelector", f"spec.nodeName={name}")])[
        "items"
    ]
    free = free_capacity(node, pods)
    return fit_requests(job, free={resource: amount * share for resource, amount in free.items()})


def run_job(
    cluster: RealCluster,
    job_file: Path,
    *,
    namespace: str,
    timeout: float,
    progress: Progress,
    out: TextIO,
    kill_worker: bool = False,
    volumes: Path | None = None,
) -> tuple[dict[str, Any], float]:
    """Apply ``job_file`` (fitted to the node) in ``namespace``, follow it to its end, print
    its outcome; the job's status and the seconds from ``kubectl apply`` to its end.

    The claims the job mounts are made from ``examples/volumes`` on directories under
    ``volumes`` (:mod:`localkube.scenarios.checkpoints`); ``kill_worker``: a worker ends itself
    once mid-training."""
    job = load_job(job_file)
    if kill_worker:
        job = checkpoints.with_killed_worker(job)
    available = [image.ref for image in cluster.images.all()]
    missing = missing_images(job, available=available)
    if missing:
        raise ValueError(
            f"the real node has no registry to pull from, and {', '.join(missing)} is not among "
            f"the images make images builds ({', '.join(sorted(available))})"
        )
    plane, name = cluster.plane, str(job["metadata"]["name"])
    api = Api.from_kubeconfig(plane.kubeconfig)
    ensure_namespace(api, namespace)
    if delete_previous(api, namespace, name):
        progress.event(f"deleted the MXJob {name} of a previous run")
    if checkpoints.claims_of(job):
        root = volumes or cluster.node.settings.state_dir.parent / "volumes"
        made = checkpoints.make_claims(plane, api, job=job, namespace=namespace, root=root)
        progress.event(f"claims {', '.join(made)} bound to fresh directories under {root}")
    fit = node_fit(cluster, job)
    inside = job_file.is_relative_to(PROJECT_ROOT)
    shown = job_file.relative_to(PROJECT_ROOT) if inside else job_file
    progress.event(f"kubectl apply -f {shown} (requests: {fit.describe()}, to fit the node)")
    started = time.monotonic()
    plane.kubectl("apply", "-n", namespace, "-f", "-", input_text=json.dumps(fit.job))
    lines = ContainerLogFollower(cluster.node.paths.pod_logs, namespace, name)
    status = watch_job(api, namespace, name, lines=lines, progress=progress, timeout=timeout)
    seconds = time.monotonic() - started
    pods = print_outcome(plane, namespace, name, status, out=out)
    print(inspect_commands(plane, namespace, name, pods), file=out)
    return status, seconds


def print_timings(timings: Timings, *, out: TextIO) -> None:
    cluster = "reused (already running)" if timings.resumed else f"{timings.cluster:.1f} s"
    print(
        "\nTimes on the real node:\n"
        f"  images (make images)                      {timings.images:6.1f} s\n"
        f"  control plane + node Ready + DNS, proxy   {cluster:>8}\n"
        f"  operator installed and rolled out         {timings.install:6.1f} s\n"
        f"  MXJob, kubectl apply to its end           {timings.job:6.1f} s",
        file=out,
    )


def stop_command(state_dir: Path) -> str:
    parent = state_dir.parent.resolve()
    if parent == (PROJECT_ROOT / ".local").resolve():
        return "make dev-down"
    return f"python -m localkube dev-down --state-dir {parent}"


def run(
    job_file: Path,
    *,
    state_dir: Path,
    namespace: str,
    timeout: float,
    out: TextIO,
    kill_worker: bool = False,
) -> int:
    """The whole demo on the real node; 0 when the MXJob Succeeded."""
    progress = Progress(out)
    try:
        cluster, images_seconds, cluster_seconds = start_cluster(state_dir, progress=progress)
        resumed = cluster.seconds_to_ready == 0.0
        progress.event("kubectl apply -k (the in-cluster overlay naming the built images)")
        install_seconds = cluster.install_operator(state_dir / "install")
        progress.event(
            f"operator rolled out in {install_seconds:.1f} s: 2 webhook and 2 controller"
            f" containers in namespace {SYSTEM_NAMESPACE}"
        )
        status, job_seconds = run_job(
            cluster, job_file, namespace=namespace, timeout=timeout, progress=progress, out=out,
            kill_worker=kill_worker, volumes=state_dir / "volumes",
        )  # fmt: skip
    except (ImageBuildError, RealNodeError, ControlPlaneError, ValueError) as error:
        progress.line(f"the demo on the real node failed: {error}")
        return 1
    except KeyboardInterrupt:
        progress.line(f"interrupted; `{stop_command(state_dir)}` stops the real node")
        return 130
    timings = Timings(images_seconds, cluster_seconds, install_seconds, job_seconds, resumed)
    print_timings(timings, out=out)
    print(
        "\nThe control plane, the real node and the operator's containers keep running (so you"
        f" can look); `{stop_command(state_dir)}` stops them and removes every container,"
        " mount, bridge and nftables table the node made.",
        file=out,
    )
    return 0 if status.get("state") == "Succeeded" else 1
