"""``make demo``: the operator running a real MXNet (or TVM) job end to end on this machine.

``python -m localkube.demo [--job FILE]`` starts what ``make dev-up`` starts (control plane, CRD,
webhook over TLS, controller), runs an exec-mode test kubelet so the job's pods become real local
processes, applies the example with the real ``kubectl``, and shows the job's state, each
replica's phase and the pods' output while it runs. It exits 0 when the MXJob Succeeded.

The kubelet is a background process (:mod:`localkube.kubelet_daemon`) recorded with the
operator's, so like the controller and the webhook it keeps running after the demo, and
``kubectl logs`` of the job's pods keeps working until ``make dev-down``. Running the demo again
replaces it.

The fidelity tests use the same helpers (:func:`load_job`, :func:`on_free_ports`,
:func:`examples_kubelet`), so what they prove is what a newcomer sees.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import itertools
import json
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import yaml

from localkube import kubelet_daemon
from localkube.api import Api, NotFound, ensure_namespace
from localkube.cluster import (
    PROJECT_ROOT,
    ControlPlane,
    ControlPlaneError,
    ControlPlaneSettings,
)
from localkube.kubelet import ExecSettings, TestKubelet
from localkube.kubelet_daemon import DaemonSettings, Spawned
from localkube.operator import LocalOperator, OperatorError
from localkube.ports import free_port

EXAMPLES = PROJECT_ROOT / "examples"
SCRIPTS = EXAMPLES / "scripts"
DEFAULT_JOB = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu.yaml"
DEMO_NAMESPACE = "mxjob-demo"
JOB_LABEL = "training.kubeflow.org/job-name"
PORT_NAME = "mxjob-port"
MAIN_CONTAINER = "mxnet"
DEMO_NODE = "demo-node"
KUBELET_LOG = "demo-kubelet.log"
"""The background test kubelet's own log, beside the controller's and the webhook's."""
LOG_TAIL = 5
"""Lines of each pod's output the summary shows with ``kubectl logs --tail``."""


# -- what tests and the demo share ------------------------------------------------------------
def load_job(path: Path) -> dict[str, Any]:
    """The one MXJob in an example file."""
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    if len(documents) != 1 or documents[0].get("kind") != "MXJob":
        raise ValueError(f"{path} must hold exactly one MXJob")
    job: dict[str, Any] = documents[0]
    return job


def on_free_ports(job: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``job`` whose replica types each listen on a free loopback port.

    In a cluster every pod has its own IP and all can use 9091; here every pod shares the host's
    loopback, so two jobs at once (a demo and a test run, or two test runs) would collide on the
    scheduler's or tracker's port. The operator reads the port from the ``mxjob-port`` of the
    ``mxnet`` container, so that is the only thing changed.
    """
    moved = copy.deepcopy(job)
    for replica in (moved.get("spec", {}).get("mxReplicaSpecs") or {}).values():
        containers = replica.get("template", {}).get("spec", {}).get("containers") or []
        container = next(
            (c for c in containers if c.get("name") == MAIN_CONTAINER),
            containers[0] if len(containers) == 1 else None,
        )
        if container is None:
            continue
        ports = container.setdefault("ports", [])
        port = next((p for p in ports if p.get("name") == PORT_NAME), None)
        if port is None:
            ports.append({"name": PORT_NAME, "containerPort": free_port()})
        else:
            port["containerPort"] = free_port()
    return moved


def example_exec_settings(log_dir: Path) -> ExecSettings:
    """How the exec-mode kubelet runs the examples: the env the example image would carry.

    The image puts ``examples/scripts`` on PYTHONPATH and its python (with mxnet and TVM) first
    on PATH. ``DMLC_INTERFACE=lo`` belongs to this node, not to the job: every pod here shares
    the host's loopback, and ps-lite would otherwise announce the host's first non-loopback
    address; in a cluster the pod's own interface is the right one, so the examples do not set it.
    """
    return ExecSettings(
        log_dir=log_dir,
        path_prefix=(str(Path(sys.executable).parent),),
        extra_env={"PYTHONPATH": str(SCRIPTS), "DMLC_INTERFACE": "lo"},
    )


@contextlib.contextmanager
def examples_kubelet(
    api: Api, *, node_name: str, namespace: str, log_dir: Path, bind: bool = True
) -> Iterator[TestKubelet]:
    """An exec-mode test kubelet running the pods of ``namespace`` as the example image would.

    ``bind=False`` where kube-scheduler runs (``ControlPlaneSettings.workload_scheduling``): the
    kubelet then runs only what the scheduler placed on its node.
    """
    with TestKubelet(
        api,
        node_name=node_name,
        namespaces=(namespace,),
        exec_settings=example_exec_settings(log_dir),
        bind=bind,
    ) as kubelet:
        yield kubelet


def demo_kubelet_settings(
    plane: ControlPlane, *, namespace: str, log_dir: Path, bind: bool = True
) -> DaemonSettings:
    """The background kubelet of ``make demo``: :func:`example_exec_settings` on its own node."""
    exec_settings = example_exec_settings(log_dir)
    return DaemonSettings(
        kubeconfig=plane.kubeconfig,
        node_name=DEMO_NODE,
        namespaces=(namespace,),
        log_dir=log_dir,
        path_prefix=exec_settings.path_prefix,
        extra_env=exec_settings.extra_env,
        bind=bind,
    )


def pod_log(log_dir: Path, namespace: str, pod: str) -> Path:
    """Where the exec-mode kubelet writes a pod's output."""
    return log_dir / f"{namespace}_{pod}.log"


def job_path(namespace: str, name: str) -> str:
    return f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs/{name}"


def job_pods(api: Api, namespace: str, job: str) -> dict[str, dict[str, Any]]:
    items = api.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/pods",
        query=[("labelSelector", f"{JOB_LABEL}={job}")],
    )["items"]
    return {p["metadata"]["name"]: p for p in items}


def pod_summary(pod: dict[str, Any]) -> str:
    """Phase, with the ``mxnet`` container's exit code once it terminated."""
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if container.get("name") == MAIN_CONTAINER and terminated:
            return f"{phase} (exit {terminated.get('exitCode')})"
    return phase


# -- progress ---------------------------------------------------------------------------------
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
HEARTBEAT = 15.0


@dataclass
class Progress:
    """Prints what changed, and a spinner with the elapsed time on a terminal.

    Without a terminal (CI, a pipe) there is no carriage-return line to redraw, so it prints a
    heartbeat line every few seconds instead of the spinner.
    """

    out: TextIO
    started: float = field(default_factory=time.monotonic)
    tty: bool = False
    _spin: Iterator[str] = field(default_factory=lambda: itertools.cycle(SPINNER))
    _last_heartbeat: float = field(default_factory=time.monotonic)
    _spinner_shown: bool = False

    def __post_init__(self) -> None:
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _clear(self) -> None:
        if self._spinner_shown:
            self.out.write("\r\033[K")
            self._spinner_shown = False

    def line(self, text: str) -> None:
        self._clear()
        self.out.write(text + "\n")
        self.out.flush()
        self._last_heartbeat = time.monotonic()

    def event(self, text: str) -> None:
        self.line(f"[{self.elapsed():6.1f}s] {text}")

    def tick(self, status: str) -> None:
        if self.tty:
            self._clear()
            self.out.write(f"{next(self._spin)} {self.elapsed():6.1f}s  {status}")
            self.out.flush()
            self._spinner_shown = True
        elif time.monotonic() - self._last_heartbeat >= HEARTBEAT:
            self.event(f"... {status}")

    def done(self) -> None:
        self._clear()
        self.out.flush()


class LineSource(Protocol):
    """Where the demo reads the job's pods' output as it is written."""

    def new_lines(self) -> Iterator[tuple[str, str]]:
        """``(replica, line)`` for each complete line written since the last call."""
        ...


@dataclass
class LogFollower:
    """Emits the new complete lines of the exec-mode kubelet's pod log files, by replica."""

    log_dir: Path
    namespace: str
    job: str
    _offsets: dict[Path, int] = field(default_factory=dict)

    def new_lines(self) -> Iterator[tuple[str, str]]:
        prefix = f"{self.namespace}_{self.job}-"
        for path in sorted(self.log_dir.glob(f"{prefix}*.log")):
            offset = self._offsets.get(path, 0)
            with path.open("rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
            end = chunk.rfind(b"\n") + 1
            if end == 0:
                continue
            self._offsets[path] = offset + end
            replica = path.name[len(prefix) : -len(".log")]
            for raw in chunk[:end].decode(errors="replace").splitlines():
                if raw.strip():
                    yield replica, raw


# -- the demo ---------------------------------------------------------------------------------
def delete_previous(api: Api, namespace: str, name: str, timeout: float = 60) -> bool:
    """Delete an MXJob of the same name and wait until it, its pods and services are gone.

    The garbage collector would remove the pods and services too, but only after its next pass;
    deleting them by label at once lets the new job (same pod and service names) start at once.
    """
    try:
        api.request("DELETE", job_path(namespace, name), body={"propagationPolicy": "Background"})
    except NotFound:
        return False
    selector = [("labelSelector", f"{JOB_LABEL}={name}")]
    for kind in ("pods", "services"):
        with contextlib.suppress(NotFound):
            api.request("DELETE", f"/api/v1/namespaces/{namespace}/{kind}", query=selector)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        services = api.request("GET", f"/api/v1/namespaces/{namespace}/services", query=selector)
        if not services["items"] and not job_pods(api, namespace, name):
            with contextlib.suppress(NotFound):
                api.request("GET", job_path(namespace, name))
                time.sleep(0.2)
                continue
            return True
        time.sleep(0.2)
    raise TimeoutError(f"the previous MXJob {name} was not deleted within {timeout:.0f} s")


def watch_job(
    api: Api,
    namespace: str,
    name: str,
    *,
    lines: LineSource,
    progress: Progress,
    timeout: float,
) -> dict[str, Any]:
    """Report state, pod phases and pod output until the job finishes; return its status."""
    last_state: str | None = None
    last_pods: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while True:
        job = api.request("GET", job_path(namespace, name))
        status = job.get("status") or {}
        state = str(status.get("state") or "(no status yet)")
        pods = {
            pod_name.removeprefix(f"{name}-"): pod_summary(pod)
            for pod_name, pod in sorted(job_pods(api, namespace, name).items())
        }
        # A pod that disappeared was cleaned up (cleanPodPolicy) or is being recreated.
        shown = {**{k: "deleted" for k in last_pods if k not in pods}, **pods}
        # Output first: what a process printed before it exited precedes the state it caused.
        for replica, text in lines.new_lines():
            progress.line(f"          {replica:>14} | {text}")
        if state != last_state or shown != last_pods:
            replicas = "  ".join(f"{k}: {v}" for k, v in sorted(shown.items())) or "no pods yet"
            progress.event(f"MXJob {state:<9} | {replicas}")
            last_state, last_pods = state, {k: v for k, v in shown.items() if v != "deleted"}
        if state in ("Succeeded", "Failed"):
            progress.done()
            return status
        if time.monotonic() > deadline:
            progress.done()
            progress.event(f"gave up after {timeout:.0f} s: the MXJob is still {state}")
            return status
        progress.tick(f"MXJob {name} {state}")
        time.sleep(0.25)


def stop_command(plane: ControlPlane) -> str:
    if plane.dir == (PROJECT_ROOT / ".local").resolve():
        return "make dev-down"
    return f"python -m localkube dev-down --state-dir {plane.dir}"


def print_outcome(
    plane: ControlPlane, namespace: str, name: str, status: dict[str, Any], *, out: TextIO
) -> list[str]:
    """The job's state and conditions, ``kubectl get mxjobs``, its events and the tail of each
    pod's ``kubectl logs``; the names of its pods."""

    def kubectl(*args: str) -> str:
        result = plane.kubectl(*args, "-n", namespace, check=False)
        return (result.stdout or result.stderr).rstrip()

    state = status.get("state", "unknown")
    print(f"\nMXJob {namespace}/{name}: {state}", file=out)
    for condition in status.get("conditions") or []:
        if condition.get("status") == "True":
            print(f"  {condition['type']}: {condition.get('message', '')}", file=out)
    print(
        f"\n$ kubectl get mxjobs -n {namespace} -o wide\n{kubectl('get', 'mxjobs', '-o', 'wide')}",
        file=out,
    )
    events = kubectl(
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={name}",
        "--sort-by=.lastTimestamp",
    )
    print(f"\n$ kubectl get events -n {namespace} (of the MXJob)\n{events}", file=out)
    pods = sorted(job_pods(Api.from_kubeconfig(plane.kubeconfig), namespace, name))
    for pod in pods:
        print(f"\n$ kubectl logs -n {namespace} {pod} --tail={LOG_TAIL}", file=out)
        print(kubectl("logs", pod, f"--tail={LOG_TAIL}") or "(no output)", file=out)
    if not pods:
        print("\n(the job's pods were deleted at the end: runPolicy.cleanPodPolicy)", file=out)
    return pods


def inspect_commands(plane: ControlPlane, namespace: str, name: str, pods: list[str]) -> str:
    """The commands that look further at the job, with the plane's kubeconfig and kubectl."""
    worker = next((p for p in pods if "-worker-" in p), pods[0] if pods else f"{name}-worker-0")
    return (
        "\nInspect it yourself:\n"
        f"  export KUBECONFIG={plane.kubeconfig} PATH={plane.kubectl_path.parent}:$PATH\n"
        f"  kubectl get mxjobs -n {namespace}\n"
        f"  kubectl describe mxjob {name} -n {namespace}\n"
        f"  kubectl get mxjob {name} -n {namespace} -o yaml     # the injected env, the status\n"
        f"  kubectl get pods,services -n {namespace} -L training.kubeflow.org/replica-type\n"
        f"  kubectl logs -n {namespace} {worker}    # or -f, or --tail=N, --timestamps"
    )


def print_summary(
    plane: ControlPlane,
    namespace: str,
    name: str,
    status: dict[str, Any],
    *,
    log_dir: Path,
    kubelet: Spawned,
    out: TextIO,
) -> None:
    pods = print_outcome(plane, namespace, name, status, out=out)
    print(
        f"\nThe test kubelet (pid {kubelet.pid}, log {plane.logs / KUBELET_LOG}) keeps running"
        " after the demo, so `kubectl logs` (and `-f`) of these pods works until"
        f" `{stop_command(plane)}`. Every pod's whole output is also in a file:",
        file=out,
    )
    for path in sorted(log_dir.glob(f"{namespace}_{name}-*.log")):
        print(f"  {path}", file=out)
    print(inspect_commands(plane, namespace, name, pods), file=out)
    print(
        "\nThe control plane, the webhook, the controller and the test kubelet keep running (so"
        f" you can look); `{stop_command(plane)}` stops them.",
        file=out,
    )


def start_kubelet(
    local: LocalOperator, *, namespace: str, log_dir: Path, progress: Progress, bind: bool = True
) -> Spawned | None:
    """Replace a previous demo's background kubelet with a fresh one for ``namespace``.

    The kubelet is a process of its own, recorded with the operator's (``make dev-down`` stops
    it), so ``kubectl logs`` of the demo's pods keeps working after the demo exits. A previous
    run's kubelet is stopped rather than reused: it still holds that run's log files, which are
    removed so the output shown is this run's only.
    """
    local.stop_kubelet()
    shutil.rmtree(log_dir, ignore_errors=True)
    log_file = local.logs / KUBELET_LOG
    try:
        spawned = kubelet_daemon.spawn(
            demo_kubelet_settings(local.plane, namespace=namespace, log_dir=log_dir, bind=bind),
            log_file=log_file,
        )
    except kubelet_daemon.KubeletDaemonError as error:
        progress.line(f"the test kubelet did not start: {error}")
        return None
    local.record_kubelet(spawned.pid)
    binder = "it binds" if bind else "kube-scheduler binds"
    progress.event(
        f"test kubelet (exec mode, pid {spawned.pid}) runs the pods of namespace {namespace}"
        f" ({binder} them) and serves their logs on https://127.0.0.1:{spawned.log_port}"
    )
    return spawned


def run(
    job_file: Path,
    *,
    state_dir: Path,
    namespace: str,
    timeout: float,
    out: TextIO,
    real_scheduling: bool = False,
) -> int:
    progress = Progress(out)
    progress.event("starting the control plane, the webhook and the controller (make dev-up)")
    plane = ControlPlane(
        ControlPlaneSettings(state_dir=state_dir, workload_scheduling=real_scheduling)
    )
    local = LocalOperator(plane)
    try:
        operator = local.up()
    except (ControlPlaneError, OperatorError) as error:
        progress.line(f"dev-up failed: {error}")
        return 1
    progress.event(
        f"operator ready: webhook https://127.0.0.1:{operator.webhook_port}, controller pid "
        f"{operator.controller_pid}, logs in {plane.logs}/"
    )
    job = on_free_ports(load_job(job_file))
    name = str(job["metadata"]["name"])
    api = Api.from_kubeconfig(plane.kubeconfig)
    ensure_namespace(api, namespace)
    log_dir = plane.dir / "demo" / "logs"
    kubelet = start_kubelet(
        local, namespace=namespace, log_dir=log_dir, progress=progress, bind=not real_scheduling
    )
    if kubelet is None:
        return 1
    if delete_previous(api, namespace, name):
        progress.event(f"deleted the MXJob {name} of a previous run")
    shown = (
        job_file.relative_to(PROJECT_ROOT) if job_file.is_relative_to(PROJECT_ROOT) else job_file
    )
    progress.event(f"kubectl apply -f {shown} (ports moved to free loopback ports)")
    applied = plane.kubectl(
        "apply", "-n", namespace, "-f", "-", input_text=json.dumps(job), check=False
    )
    if applied.returncode != 0:
        progress.line(f"kubectl apply failed:\n{applied.stderr}")
        return 1
    progress.line(f"          {applied.stdout.strip()}")
    try:
        status = watch_job(
            api,
            namespace,
            name,
            lines=LogFollower(log_dir, namespace, name),
            progress=progress,
            timeout=timeout,
        )
    except KeyboardInterrupt:
        progress.line("interrupted: stopping the test kubelet and the pods' processes")
        local.stop_kubelet()
        return 130
    print_summary(plane, namespace, name, status, log_dir=log_dir, kubelet=kubelet, out=out)
    return 0 if status.get("state") == "Succeeded" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localkube.demo", description=__doc__)
    parser.add_argument(
        "--job", type=Path, default=DEFAULT_JOB, help="the MXJob to run (default: the CPU train)"
    )
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / ".local")
    parser.add_argument("--namespace", default=DEMO_NAMESPACE)
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for the job")
    parser.add_argument(
        "--real-scheduling",
        action="store_true",
        help="run kube-scheduler (with native gang scheduling) on a control plane of its own",
    )
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="run the operator and the job in containers on the real node (needs root)",
    )
    args = parser.parse_args(argv)
    if args.real_node:
        # Imported here: localkube.node.demo builds on this module's helpers.
        from localkube.node import demo as node_demo  # noqa: PLC0415
        from localkube.node.cluster import REAL_NODE_SUBDIR  # noqa: PLC0415

        return node_demo.run(
            args.job.resolve(),
            state_dir=args.state_dir / REAL_NODE_SUBDIR,
            namespace=args.namespace,
            timeout=args.timeout,
            out=sys.stdout,
        )
    state_dir = args.state_dir / "real-scheduling" if args.real_scheduling else args.state_dir
    return run(
        args.job.resolve(),
        state_dir=state_dir,
        namespace=args.namespace,
        timeout=args.timeout,
        out=sys.stdout,
        real_scheduling=args.real_scheduling,
    )


if __name__ == "__main__":
    sys.exit(main())
