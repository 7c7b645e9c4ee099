"""Start one role of a TVM tuning job (MXTune) from the env the operator injects.

``MX_CONFIG`` says which replica this process is (``task``) and lists every replica's Service
name and port (``cluster``); ``TVM_TRACKER_HOST``, ``TVM_TRACKER_PORT`` and (for the servers and
the tuner) ``TVM_TRACKER_KEY`` say where the tracker is and which key the servers register under,
in the form TVM's own clients read. The roles:

- ``tunertracker``: ``python -m tvm.exec.rpc_tracker`` on the port MX_CONFIG lists for it;
- ``tunerserver``: ``python -m tvm.exec.rpc_server`` registered with the tracker under the key;
  servers that share a host (every pod of the local test kubelet does) search a port range
  upwards from their own port, so they never collide;
- ``tuner``: tunes a small matrix multiplication with MetaSchedule, every candidate timed on a
  server the tracker hands out (:mod:`tune_kernel`), checks the best kernel against NumPy and
  prints the trials, the best time and the speed-up over the untuned kernel; exits 0.

Each process binds the address its own Service name resolves to: the pod's IP in a cluster,
127.0.0.1 under the local test kubelet. Run it with ``python -m start_tune`` (the example image
puts ``examples/scripts`` on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import runpy
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVER_PORT_SEARCH = 100
"""How many ports above its own a TunerServer may try when its port is taken on a shared host."""


@dataclass(frozen=True)
class Task:
    """This replica, as ``MX_CONFIG`` describes it."""

    role: str
    index: int
    cluster: dict[str, list[dict[str, Any]]]
    labels: dict[str, str]

    def address(self, role: str, index: int = 0) -> tuple[str, int]:
        entry = self.cluster[role][index]
        return str(entry["url"]), int(entry["port"])

    @property
    def own(self) -> tuple[str, int]:
        return self.address(self.role, self.index)


def read_task(environ: dict[str, str] | None = None) -> Task:
    """Parse ``MX_CONFIG``; a missing or malformed value is a bug in how the pod was made."""
    raw = (environ if environ is not None else dict(os.environ)).get("MX_CONFIG")
    if not raw:
        raise SystemExit("MX_CONFIG is not set: this script runs in a pod of an MXTune job")
    config = json.loads(raw)
    task = config["task"]
    return Task(
        role=str(task["type"]),
        index=int(task["index"]),
        cluster=config["cluster"],
        labels=config.get("labels", {}),
    )


def resolve(host: str, timeout: float = 120) -> str:
    """The address of a Service name, waiting while cluster DNS catches up with new Services."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return socket.gethostbyname(host)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_for_port(host: str, port: int, timeout: float = 120) -> None:
    """Wait until the tracker accepts connections.

    TVM's own clients retry every 5 s; waiting here in small steps starts the servers and the
    tuner as soon as the tracker is up.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run_module(module: str, *args: str) -> None:
    """Run ``python -m module args`` in this process: its exit code is the pod's.

    Not exec'd: the tracker and the servers would then be their container's PID 1 with no
    SIGTERM handler (TVM installs none), and the kernel spares PID 1 the signal's default action,
    so every delete (the job's cleanup once the tuner is done, ``kubectl delete``, a drain) would
    wait out the grace period. Run here, they keep :func:`main`'s handler."""
    print("running: python -m", module, *args, flush=True)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def run_tracker(task: Task) -> None:
    _, port = task.own
    host = resolve(task.own[0])
    # port-end is exclusive: the tracker binds exactly the port the others were told.
    run_module("tvm.exec.rpc_tracker", f"--host={host}", f"--port={port}", f"--port-end={port + 1}")


def run_server(task: Task) -> None:
    """Register with the tracker the operator names in TVM_TRACKER_*, under its key."""
    tracker_host, tracker_port = os.environ["TVM_TRACKER_HOST"], os.environ["TVM_TRACKER_PORT"]
    own_url, port = task.own
    host = resolve(own_url)
    wait_for_port(resolve(tracker_host), int(tracker_port))
    run_module(
        "tvm.exec.rpc_server",
        f"--host={host}",
        f"--port={port}",
        f"--port-end={port + SERVER_PORT_SEARCH}",
        f"--tracker={tracker_host}:{tracker_port}",
        f"--key={os.environ['TVM_TRACKER_KEY']}",
    )


# -- the tuner ----------------------------------------------------------------------------------
def run_tuner(task: Task, args: argparse.Namespace) -> int:
    """Tune with :mod:`tune_kernel`, imported here: the tracker and the servers never need it
    (nor NumPy)."""
    tune_kernel = importlib.import_module("tune_kernel")
    work_dir: Path = args.work_dir or tune_kernel.default_work_dir()
    wanted = os.environ.get("TUNE_WORK_DIR")
    if wanted and Path(wanted) != work_dir:
        print(f"TUNE_WORK_DIR={wanted} is no directory (no volume there): the database", end=" ")
        print("ends with the pod", end="; ")
    print(f"tuning database in {work_dir}", flush=True)
    code: int = tune_kernel.tune(
        tune_kernel.TuneSettings(
            size=args.size,
            trials=args.trials,
            trials_per_iter=args.trials_per_iter,
            target=args.target or tune_kernel.default_target(),
            work_dir=work_dir,
            servers=len(task.cluster.get("tunerserver", [])),
            retry_seconds=args.retry_seconds,
            session_timeout=args.session_timeout,
        )
    )
    return code


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="start_tune", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128, help="matrix size of the workload")
    parser.add_argument("--trials", type=int, default=16, help="candidates measured in all")
    parser.add_argument(
        "--trials-per-iter", type=int, default=8, help="candidates built and measured per round"
    )
    parser.add_argument(
        "--target",
        default=None,
        help="TVM target of the servers: a kind, a tag or a JSON object "
        "(default $TUNE_TARGET, else this host's CPU)",
    )
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the tuning database goes (default $TUNE_WORK_DIR when it is a directory)",
    )
    parser.add_argument(
        "--session-timeout", type=int, default=60, help="seconds an RPC session may last"
    )
    parser.add_argument(
        "--retry-seconds",
        type=float,
        default=120,
        help="how long opening a session is retried while the tracker or servers are away",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A container's PID 1 ignores SIGTERM without a handler: stop at once instead, as killed by
    # SIGTERM (143), so deleting the job never waits out the grace period (see run_module).
    signal.signal(signal.SIGTERM, lambda *_: os._exit(143))
    task = read_task()
    print(
        f"task {task.role} {task.index}: cluster {task.cluster}, labels {task.labels}; "
        + ", ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("TVM_")),
        flush=True,
    )
    if task.role == "tunertracker":
        run_tracker(task)
    elif task.role == "tunerserver":
        run_server(task)
    elif task.role == "tuner":
        return run_tuner(task, args)
    print(f"unknown task type {task.role!r} in MX_CONFIG", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
