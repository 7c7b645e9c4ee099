"""A test kubelet as a background process of its own, like the controller and the webhook.

``make demo`` runs its exec-mode kubelet this way so that it outlives the demo: the Node keeps
advertising a port something listens on, and ``kubectl logs [-f]`` of the demo's pods keeps
working afterwards, until ``make dev-down`` stops it (its pid is kept in the operator's
``operator.json``, see :class:`localkube.plane.operator.OperatorState`).

``python -m localkube.kubelet.daemon --kubeconfig K --node N --namespace NS --log-dir D`` runs
one :class:`localkube.kubelet.core.TestKubelet` until SIGTERM or SIGINT, then stops it (which stops
the pods' processes and removes their host entries). :func:`spawn` starts it detached, logging
to a file, and returns once its log endpoint serves and its Node is registered: the child reports
that through an inherited pipe, so a crash at start is seen at once rather than after a timeout.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from localkube.base import programs
from localkube.base.api import Api
from localkube.kubelet.core import ExecSettings, TestKubelet

MODULE = "localkube.kubelet.daemon"
READY_TIMEOUT = 60.0
"""Seconds :func:`spawn` waits for the log endpoint and the Node (a CSR signed, a few calls)."""


class KubeletDaemonError(RuntimeError):
    """The background kubelet did not come up; the message names its log."""


@dataclass(frozen=True)
class DaemonSettings:
    """What the background kubelet runs: which node, which namespaces, how pods execute."""

    kubeconfig: Path
    node_name: str
    namespaces: tuple[str, ...]
    """Only these namespaces' pods are bound and run (others may belong to other kubelets)."""
    log_dir: Path
    """Each pod's plain output and, under ``containers/``, the logs ``kubectl logs`` reads."""
    path_prefix: tuple[str, ...] = ()
    """Directories before the host's PATH in the pods' env (the python that has mxnet)."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Env the container image would carry."""
    bind: bool = True
    """Bind the namespaces' unscheduled pods to this node; False where kube-scheduler runs."""

    def exec_settings(self) -> ExecSettings:
        return ExecSettings(
            log_dir=self.log_dir,
            path_prefix=self.path_prefix,
            extra_env=dict(self.extra_env),
        )


def to_argv(settings: DaemonSettings) -> list[str]:
    """The command-line arguments that make :func:`parse_args` return ``settings``."""
    args = [
        f"--kubeconfig={settings.kubeconfig}",
        f"--node={settings.node_name}",
        f"--log-dir={settings.log_dir}",
    ]
    args += [f"--namespace={namespace}" for namespace in settings.namespaces]
    args += [f"--path-prefix={directory}" for directory in settings.path_prefix]
    if not settings.bind:
        args.append("--no-bind")
    args += [f"--env={key}={value}" for key, value in settings.extra_env.items()]
    return args


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m localkube.kubelet.daemon", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--node", required=True, help="the Node's name")
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--namespace", action="append", required=True, help="repeatable")
    parser.add_argument("--path-prefix", action="append", default=[], help="repeatable")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE, repeatable")
    parser.add_argument("--no-bind", action="store_true", help="leave binding to kube-scheduler")
    parser.add_argument(
        "--ready-fd", type=int, default=None, help="write the log port here once serving"
    )
    return parser


def parse_args(argv: list[str]) -> tuple[DaemonSettings, int | None]:
    """(settings, the fd to report readiness on) from a command line made by :func:`to_argv`."""
    args = _parser().parse_args(argv)
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--env wants KEY=VALUE, got {item!r}")
        env[key] = value
    settings = DaemonSettings(
        kubeconfig=args.kubeconfig,
        node_name=args.node,
        namespaces=tuple(args.namespace),
        log_dir=args.log_dir,
        path_prefix=tuple(args.path_prefix),
        extra_env=env,
        bind=not args.no_bind,
    )
    return settings, args.ready_fd


def serve(settings: DaemonSettings, *, ready_fd: int | None = None) -> int:
    """Run the kubelet until SIGTERM or SIGINT; report its log port on ``ready_fd`` once up."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    kubelet = TestKubelet(
        Api.from_kubeconfig(settings.kubeconfig),
        node_name=settings.node_name,
        namespaces=settings.namespaces,
        exec_settings=settings.exec_settings(),
        bind=settings.bind,
    ).start()
    try:
        print(
            f"test kubelet {settings.node_name} (exec mode) serves logs on "
            f"https://127.0.0.1:{kubelet.log_port}, runs the pods of "
            f"{', '.join(settings.namespaces)}",
            flush=True,
        )
        if ready_fd is not None:
            os.write(ready_fd, f"{kubelet.log_port}\n".encode())
            os.close(ready_fd)
        while not stop.wait(1.0):
            pass
    finally:
        kubelet.stop()
    print(f"test kubelet {settings.node_name} stopped", flush=True)
    return 0


@dataclass(frozen=True)
class Spawned:
    pid: int
    log_port: int


def spawn(settings: DaemonSettings, *, log_file: Path, timeout: float = READY_TIMEOUT) -> Spawned:
    """Start the kubelet in its own session, output appended to ``log_file``; wait until up.

    Started by :mod:`localkube.base.programs` like every other program; waiting is not its
    polling but the ready pipe: the child writes its log port once serving, and its exit closes
    the pipe, so a failed start is reported at once.
    """
    read_end, write_end = os.pipe()
    try:
        running = programs.start(
            programs.Program(
                name="test kubelet",
                argv=[sys.executable, "-m", MODULE, *to_argv(settings), f"--ready-fd={write_end}"],
                log=log_file,
                pass_fds=(write_end,),
            )
        )
        os.close(write_end)
        write_end = -1
        try:
            report = _read_line(read_end, timeout=timeout)
        except BaseException:  # e.g. Ctrl-C while waiting: leave no unrecorded kubelet behind
            _kill(running)
            raise
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    if not report.strip().isdigit():
        code = running.exit_code()
        if code is None:
            _kill(running)
            code = running.exit_code()
        lines = log_file.read_text(errors="replace").strip().splitlines()
        last = f": {lines[-1]}" if lines else ""
        raise KubeletDaemonError(
            f"the test kubelet did not start (exit {code}){last}; see {log_file}"
        )
    return Spawned(pid=running.pid, log_port=int(report))


def _kill(running: programs.Running) -> None:
    """SIGKILL a kubelet that did not come up, and reap it (it has nothing to clean up yet)."""
    assert running.process is not None  # started here, so a child of ours
    running.process.kill()
    running.process.wait()


def _read_line(fd: int, *, timeout: float) -> str:
    """What the child wrote before closing the pipe; "" if it exited (or timed out) first."""
    data = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return ""
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


def main(argv: list[str] | None = None) -> int:
    settings, ready_fd = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return serve(settings, ready_fd=ready_fd)


if __name__ == "__main__":
    sys.exit(main())
