"""Following one MXJob to its end, as the demos show it: its pods' phases, their processes' output,
the final state, and the commands to look further. Shared by :mod:`localkube.scenarios.demo`
(exec mode) and :mod:`localkube.scenarios.node_demo` (the real node)."""

from __future__ import annotations

import contextlib
import copy
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

import yaml

from localkube.base.api import Api, NotFound
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.plane.controlplane import ControlPlane
from localkube.scenarios.trainer_line import trainer_line

EXAMPLES = PROJECT_ROOT / "examples"


SCRIPTS = EXAMPLES / "scripts"


SDK = PROJECT_ROOT / "sdk"
"""The progress reporter the scripts import (``mxjob_progress``); the example images install it."""


DEFAULT_JOB = EXAMPLES / "v1" / "train" / "mx_job_dist_cpu.yaml"


DEMO_NAMESPACE = "mxjob-demo"


JOB_LABEL = "training.kubeflow.org/job-name"


PORT_NAME = "mxjob-port"


MAIN_CONTAINER = "mxnet"


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


FINAL_REPORT_WAIT = 7.0
"""Seconds the watch goes on after a job that reported Succeeded below 100 %, for its final
report: the controller writes a job's reports at most once per 5 s (controller/progress/
settings.py, ``write_interval``), and the last worker sends its final one as it ends, so that
one can land after the job already Succeeded."""


def awaits_final_report(status: dict[str, Any]) -> bool:
    """Whether a finished job's final report may be on its way: it Succeeded, and reported, but
    not 100 % yet. A job that never reported, or failed, is not waited for."""
    trainer = status.get("trainerStatus")
    return (
        status.get("state") == "Succeeded"
        and isinstance(trainer, dict)
        and trainer.get("progressPercentage") != 100
    )


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
    """Report state, pod phases, progress and pod output until the job finishes; return its
    status. The progress (``status.trainerStatus``) is in the live line, and a line of its own
    whenever it changes, the final report included (:data:`FINAL_REPORT_WAIT`)."""
    last_state: str | None = None
    last_progress = ""
    last_pods: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    finished_at: float | None = None
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
        reported = trainer_line(status)
        if reported and reported != last_progress:
            progress.event(f"progress  | {reported}")
            last_progress = reported
        if state in ("Succeeded", "Failed"):
            finished_at = finished_at or time.monotonic()
            waited = time.monotonic() - finished_at
            if not awaits_final_report(status) or waited > FINAL_REPORT_WAIT:
                progress.done()
                return status
        if finished_at is None and time.monotonic() > deadline:
            progress.done()
            progress.event(f"gave up after {timeout:.0f} s: the MXJob is still {state}")
            return status
        progress.tick(f"MXJob {name} {state} {last_progress}".rstrip())
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
