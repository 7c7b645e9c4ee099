"""Start one role of a TVM tuning job (MXTune) from the ``MX_CONFIG`` the operator injects.

Like the seed's ``start-job.py``, the only input is ``MX_CONFIG``: ``cluster`` lists every
replica's Service name and port by type, ``labels`` holds the TunerServer key, and ``task`` says
which replica this process is. The roles:

- ``tunertracker``: ``python -m tvm.exec.rpc_tracker`` on the tracker's own port;
- ``tunerserver``: ``python -m tvm.exec.rpc_server`` registered with the tracker under the
  tuner-server key; servers that share a host (every pod of the local test kubelet does) search a
  port range upwards from their own port, so they never collide;
- ``tuner``: asks the tracker for every TunerServer at once (the tracker hands a server to one
  client at a time, so held sessions are distinct servers), builds a few schedules of a small
  matrix multiplication with TVM, and measures each on a server over RPC after checking its
  result against NumPy; it prints the fastest and exits 0. A server or a tracker replaced
  meanwhile (the operator replaces each MXTune replica alone) costs a retry, not the run: a
  measurement whose session breaks is tried again on a new session the tracker hands out (a
  new tracker connection too), for ``--retry-seconds``.

Each process binds the address its own Service name resolves to: the pod's IP in a cluster,
127.0.0.1 under the local test kubelet. Run it with ``python -m start_tune`` (the example image
puts ``examples/scripts`` on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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

    @property
    def tracker(self) -> tuple[str, int]:
        return self.address("tunertracker")

    @property
    def server_key(self) -> str:
        return self.labels["tunerserver"]


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


def exec_module(module: str, *args: str) -> None:
    """Replace this process by ``python -m module args``: its exit code is the pod's."""
    argv = [sys.executable, "-m", module, *args]
    print("exec:", " ".join(argv), flush=True)
    os.execv(sys.executable, argv)


def run_tracker(task: Task) -> None:
    _, port = task.own
    host = resolve(task.own[0])
    # port-end is exclusive: the tracker binds exactly the port the others were told.
    exec_module(
        "tvm.exec.rpc_tracker", f"--host={host}", f"--port={port}", f"--port-end={port + 1}"
    )


def run_server(task: Task) -> None:
    tracker_url, tracker_port = task.tracker
    own_url, port = task.own
    host = resolve(own_url)
    wait_for_port(resolve(tracker_url), tracker_port)
    exec_module(
        "tvm.exec.rpc_server",
        f"--host={host}",
        f"--port={port}",
        f"--port-end={port + SERVER_PORT_SEARCH}",
        f"--tracker={tracker_url}:{tracker_port}",
        f"--key={task.server_key}",
    )


# -- the tuner ----------------------------------------------------------------------------------
def wait_for_servers(tracker: Any, key: str, count: int, timeout: float) -> dict[str, Any]:
    """Wait until ``count`` servers are free under ``key``; return the tracker's summary."""
    deadline = time.monotonic() + timeout
    while True:
        summary: dict[str, Any] = tracker.summary()
        free = int(summary.get("queue_info", {}).get(key, {}).get("free", 0))
        if free >= count:
            return summary
        if time.monotonic() > deadline:
            raise SystemExit(f"only {free} of {count} servers under key {key!r}: {summary}")
        time.sleep(0.2)


def tvm_module(name: str) -> Any:
    """Import a TVM module when needed: the tracker and the servers exec a fresh interpreter,
    so importing TVM (about a second) in the launcher first would only slow them down."""
    return importlib.import_module(name)


def build_candidates(size: int, tiles: list[int], work_dir: Path) -> list[tuple[str, Path]]:
    """One shared library per schedule of a ``size``x``size`` matmul: the search space."""
    tvm = tvm_module("tvm")
    te, s_tir = tvm_module("tvm.te"), tvm_module("tvm.s_tir")
    a = te.placeholder((size, size), name="A", dtype="float32")
    b = te.placeholder((size, size), name="B", dtype="float32")
    k = te.reduce_axis((0, size), name="k")
    c = te.compute((size, size), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    func = te.create_prim_func([a, b, c])
    built = []
    for tile in tiles:
        schedule = s_tir.Schedule(func)
        if tile > 1:
            i, j, kk = schedule.get_loops(schedule.get_sblock("C"))
            io, ii = schedule.split(i, [None, tile])
            jo, ji = schedule.split(j, [None, tile])
            schedule.reorder(io, jo, kk, ii, ji)
        path = work_dir / f"matmul_tile{tile}.so"
        tvm.compile(schedule.mod, target="llvm").export_library(str(path))
        built.append((f"tile={tile}", path))
    return built


def measure(remote: Any, library: Path, size: int) -> float:
    """Upload, load and run one candidate on a server; check it; return mean seconds per run."""
    tvm = tvm_module("tvm")
    remote.upload(str(library))
    module = remote.load_module(library.name)
    device = remote.cpu()
    rng = np.random.default_rng(0)
    a_np = rng.random((size, size), dtype="float32")
    b_np = rng.random((size, size), dtype="float32")
    a = tvm.runtime.tensor(a_np, device)
    b = tvm.runtime.tensor(b_np, device)
    c = tvm.runtime.tensor(np.zeros((size, size), dtype="float32"), device)
    module(a, b, c)
    np.testing.assert_allclose(c.numpy(), a_np @ b_np, rtol=1e-4)
    timer = module.time_evaluator(module.entry_name, device, number=5, repeat=3)
    return float(timer(a, b, c).mean)


class Measurements:
    """Measurements round-robin over one held session per server, each session asked of the
    tracker; a session (or the tracker) that breaks is asked for again, and the measurement
    retried, for ``--retry-seconds``."""

    def __init__(self, task: Task, args: argparse.Namespace, servers: int) -> None:
        self.rpc = tvm_module("tvm.rpc")
        self.tracker_url, self.tracker_port = task.tracker
        self.key = task.server_key
        self.args = args
        self.tracker: Any = None
        self.sessions: list[Any] = [None] * servers
        self.retries = 0

    def session(self, slot: int) -> Any:
        if self.sessions[slot] is None:
            if self.tracker is None:
                wait_for_port(resolve(self.tracker_url), self.tracker_port, self.args.retry_seconds)
                self.tracker = self.rpc.connect_tracker(self.tracker_url, self.tracker_port)
            timeout = self.args.session_timeout
            self.sessions[slot] = self.tracker.request(self.key, session_timeout=timeout)
        return self.sessions[slot]

    def open_all(self) -> None:
        """One session per server, held at once: each request gets a different server."""
        for slot in range(len(self.sessions)):
            self.session(slot)

    def measure(self, slot: int, library: Path) -> float:
        """Seconds per run of ``library`` on the server of ``slot``."""
        deadline = time.monotonic() + self.args.retry_seconds
        while True:
            try:
                return measure(self.session(slot), library, self.args.size)
            except (OSError, RuntimeError, ValueError) as error:
                # TVMError is a RuntimeError: a server or a tracker that went away.
                if time.monotonic() > deadline:
                    raise
                self.retries += 1
                self.sessions[slot] = None
                self.tracker = None
                print(f"retrying {library.name} after: {type(error).__name__}: {error}", flush=True)
                time.sleep(1)


def run_tuner(task: Task, args: argparse.Namespace) -> int:
    rpc = tvm_module("tvm.rpc")
    tracker_url, tracker_port = task.tracker
    key = task.server_key
    servers = len(task.cluster.get("tunerserver", []))
    wait_for_port(resolve(tracker_url), tracker_port)
    tracker = rpc.connect_tracker(tracker_url, tracker_port)
    summary = wait_for_servers(tracker, key, servers, args.wait_servers)
    addresses = sorted(
        ":".join(map(str, item["addr"]))
        for item in summary.get("server_info", [])
        if item.get("key") == f"server:{key}"
    )
    print(
        f"tracker {tracker_url}:{tracker_port}: {servers} servers under key {key!r}: {addresses}",
        flush=True,
    )
    measurements = Measurements(task, args, servers)
    measurements.open_all()
    print(f"got {servers} sessions through the tracker", flush=True)
    with tempfile.TemporaryDirectory(prefix="tune-") as work_dir:
        candidates = build_candidates(args.size, args.tiles, Path(work_dir))
        results: list[tuple[float, str]] = []
        # Round-robin over the servers, as a tuner spreads measurements over its devices.
        for number, (name, library) in enumerate(candidates):
            server = number % servers
            seconds = measurements.measure(server, library)
            print(f"server {server}: {name} checked, {seconds * 1e6:.1f} us per run", flush=True)
            results.append((seconds, name))
            time.sleep(args.measure_pause)
    best_seconds, best = min(results)
    print(
        f"best schedule {best}: {best_seconds * 1e6:.1f} us per run on key {key!r}; "
        f"{len(results)} schedules checked, {measurements.retries} retries",
        flush=True,
    )
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="start_tune", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=128, help="matrix size of the workload")
    parser.add_argument(
        "--tiles", type=int, nargs="+", default=[1, 4, 8, 16, 32], help="tile sizes to try"
    )
    parser.add_argument(
        "--wait-servers", type=float, default=120, help="seconds to wait for the servers"
    )
    parser.add_argument(
        "--session-timeout", type=float, default=300, help="seconds an RPC session may last"
    )
    parser.add_argument(
        "--retry-seconds", type=float, default=120, help="how long a measurement is retried"
    )
    parser.add_argument(
        "--measure-pause", type=float, default=0.0, help="seconds between two measurements"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    task = read_task()
    print(
        f"task {task.role} {task.index}: cluster {task.cluster}, labels {task.labels}", flush=True
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
