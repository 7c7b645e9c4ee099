"""The operator's processes the chaos run kills: its one controller, kept running the way a
kubelet keeps a container running, and the webhook's gunicorn workers."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

from controller.runtime.failpoints import ENV as FAILPOINTS_ENV
from localkube.base import programs
from localkube.base.ports import free_port
from localkube.plane.operator import LocalOperator
from localkube.scenarios.chaos.plan import NAMESPACE

CONTROLLER_ARGS = (f"--namespace={NAMESPACE}", "--identity=chaos-controller", "--workers=4")


class ControllerSupervisor:
    """One ``mxjob-controller``, restarted at once after it dies, as a kubelet would.

    The first processes are armed each with one of ``failpoints`` in turn
    (controller/runtime/failpoints.py): such a process SIGKILLs itself at that point of the
    first restart it carries out, and the next one is armed with the next point. A process the
    fault loop kills before its point came passes the point on to the next."""

    def __init__(self, local: LocalOperator, *, failpoints: Sequence[str] = ()) -> None:
        self.local = local
        self.running: programs.Running | None = None
        self.metrics_port = 0
        self.generation = 0
        self.kills = 0
        self.crashes = 0
        self.to_arm = list(failpoints)
        self.armed: str | None = None
        self.failpoint_kills: list[str] = []
        """The failpoints that killed a controller, in order."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="supervisor")

    def start(self) -> None:
        self._spawn()
        self._thread.start()

    def _spawn(self) -> None:
        """Start the next controller without waiting for it: faults may keep it from serving."""
        self.generation += 1
        self.metrics_port = free_port()
        argv = self.local.controller_argv(
            *CONTROLLER_ARGS, metrics_port=self.metrics_port, health_port=free_port()
        )
        log = self.local.logs / f"controller-{self.generation:02d}.log"
        self.armed = self.to_arm.pop(0) if self.to_arm else None
        env = {**os.environ, FAILPOINTS_ENV: self.armed} if self.armed else None
        self.running = programs.start(programs.Program("mxjob-controller", argv, log, env=env))

    def kill_and_restart(self) -> None:
        """SIGKILL (no shutdown code runs) and start a new process right away."""
        with self._lock:
            assert self.running is not None and self.running.process is not None
            self.running.process.send_signal(signal.SIGKILL)
            self.running.process.wait(timeout=10)
            self.kills += 1
            if self.armed is not None:
                self.to_arm.insert(0, self.armed)  # killed before its point came
            self._spawn()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                code = self.running.exit_code() if self.running is not None else None
                if code is not None:
                    if self.armed is not None and code in (-signal.SIGKILL, 128 + signal.SIGKILL):
                        self.failpoint_kills.append(self.armed)  # it died at its point
                    else:
                        self.crashes += 1  # it died without being asked: a bug worth a figure
                    self._spawn()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        if self.running is not None:
            self.running.stop()


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid`` (the webhook's gunicorn workers), lowest first."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)
