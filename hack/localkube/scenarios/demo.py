"""``make demo``: the operator running a real MXNet (or TVM) job end to end on this machine.

``python -m localkube.scenarios.demo [--job FILE]`` starts what ``make dev-up`` starts (control
plane, CRD, webhook over TLS, controller), runs an exec-mode test kubelet so the job's pods become
real local processes, applies the example with the real ``kubectl``, and shows the job's state, each
replica's phase, the pods' output and the job's progress while it runs. It exits 0 when the MXJob
Succeeded.

The progress is reported as in a cluster: the kubelet gives each pod the token and CA of its
``mxjob-status`` volume at the mount path (:mod:`localkube.kubelet.jobmounts`) and points the
progress Service's name at 127.0.0.1, where this demo's controller takes the reports on the URL's
port, 8444, with a certificate for that name (``LocalOperator.up(progress_port=...)``). Another
demo's controller holding that port is an error naming it, before anything starts.

The kubelet is a background process (:mod:`localkube.kubelet.daemon`) recorded with the
operator's, so like the controller and the webhook it keeps running after the demo, and
``kubectl logs`` of the job's pods keeps working until ``make dev-down``. Running the demo again
replaces it.

The fidelity tests use the same helpers (:func:`load_job`, :func:`on_free_ports`,
:func:`examples_kubelet`), so what they prove is what a newcomer sees.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from localkube.base.api import Api, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet import daemon as kubelet_daemon
from localkube.kubelet.core import ExecSettings, TestKubelet
from localkube.kubelet.daemon import DaemonSettings, Spawned
from localkube.plane.controlplane import ControlPlane, ControlPlaneError
from localkube.plane.operator import LocalOperator, OperatorError
from localkube.plane.settings import ControlPlaneSettings
from localkube.realnode.cluster import REAL_NODE_SUBDIR
from localkube.scenarios import checkpoints, node_demo
from localkube.scenarios.jobwatch import (
    DEFAULT_JOB,
    DEMO_NAMESPACE,
    SCRIPTS,
    SDK,
    LogFollower,
    Progress,
    delete_previous,
    inspect_commands,
    load_job,
    on_free_ports,
    print_outcome,
    stop_command,
    watch_job,
)
from shared.progress import PORT as PROGRESS_PORT

DEMO_NODE = "demo-node"
KUBELET_LOG = "demo-kubelet.log"
"""The background test kubelet's own log, beside the controller's and the webhook's."""


def example_exec_settings(log_dir: Path) -> ExecSettings:
    """How the exec-mode kubelet runs the examples: the env the example image would carry.

    The image puts ``examples/scripts`` on PYTHONPATH, installs the progress reporter and its
    python (with mxnet and TVM) first
    on PATH. ``DMLC_INTERFACE=lo`` belongs to this node, not to the job: every pod here shares
    the host's loopback, and ps-lite would otherwise announce the host's first non-loopback
    address; in a cluster the pod's own interface is the right one, so the examples do not set it.
    """
    return ExecSettings(
        log_dir=log_dir,
        path_prefix=(str(Path(sys.executable).parent),),
        extra_env={"PYTHONPATH": os.pathsep.join((str(SCRIPTS), str(SDK))), "DMLC_INTERFACE": "lo"},
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
    local.record_kubelet(spawned.pid, module=kubelet_daemon.MODULE)
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
    kill_worker: bool = False,
) -> int:
    progress = Progress(out)
    progress.event("starting the control plane, the webhook and the controller (make dev-up)")
    plane = ControlPlane(
        ControlPlaneSettings(state_dir=state_dir, workload_scheduling=real_scheduling)
    )
    local = LocalOperator(plane)
    try:
        # The port of the progress URL the webhook gives the pods, whose Service name the
        # exec-mode kubelet points at 127.0.0.1: the controller takes their reports there.
        operator = local.up(progress_port=PROGRESS_PORT)
    except (ControlPlaneError, OperatorError) as error:
        progress.line(f"dev-up failed: {error}")
        return 1
    progress.event(
        f"operator ready: webhook https://127.0.0.1:{operator.webhook_port}, controller pid "
        f"{operator.controller_pid} (progress reports on https://127.0.0.1:{PROGRESS_PORT}), "
        f"logs in {plane.logs}/"
    )
    job = on_free_ports(load_job(job_file))
    moved = "ports moved to free loopback ports"
    if checkpoints.claims_of(job):
        directory = checkpoints.fresh_directory(plane.dir / "demo" / "checkpoints")
        job = checkpoints.on_host_directory(job, directory)
        moved += f", its claim's mount given as {directory}"
    if kill_worker:
        job = checkpoints.with_killed_worker(job)
        moved += f", worker rank 1 killed in epoch {checkpoints.KILL_EPOCH}"
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
    progress.event(f"kubectl apply -f {shown} ({moved})")
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
    parser = argparse.ArgumentParser(prog="python -m localkube.scenarios.demo", description=__doc__)
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
    parser.add_argument(
        "--kill-worker",
        action="store_true",
        help="a worker of train_dist ends itself (SIGKILL) in epoch 3, once: the job restarts "
        "as a whole and resumes from its checkpoint (the resumable example)",
    )
    args = parser.parse_args(argv)
    if args.real_node:
        return node_demo.run(
            args.job.resolve(),
            state_dir=args.state_dir / REAL_NODE_SUBDIR,
            namespace=args.namespace,
            timeout=args.timeout,
            out=sys.stdout,
            kill_worker=args.kill_worker,
        )
    state_dir = args.state_dir / "real-scheduling" if args.real_scheduling else args.state_dir
    return run(
        args.job.resolve(),
        state_dir=state_dir,
        namespace=args.namespace,
        timeout=args.timeout,
        out=sys.stdout,
        real_scheduling=args.real_scheduling,
        kill_worker=args.kill_worker,
    )


if __name__ == "__main__":
    sys.exit(main())
