"""The operator's processes the chaos run kills: its one controller, kept running the way a
kubelet keeps a container running, and the webhook's gunicorn workers."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from localkube.base import programs
from localkube.base.ports import free_port
from localkube.plane.operator import LocalOperator
from localkube.scenarios.chaos.plan import NAMESPACE

CONTROLLER_ARGS = (f"--namespace={NAMESPACE}", "--identity=chaos-controller", "--workers=4")


class ControllerSupervisor:
    """One ``mxjob-controller``, restarted at once after it dies, as a kubelet would."""

    def __init__(self, local: LocalOperator) -> None:
        self.local = local
        self.running: programs.Running | None = None
        self.metrics_port = 0
        self.generation = 0
        self.kills = 0
        self.crashes = 0
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
        self.running = programs.start(programs.Program("mxjob-controller", argv, log))

    def kill_and_restart(self) -> None:
        """SIGKILL (no shutdown code runs) and start a new process right away."""
        with self._lock:
            assert self.running is not None and self.running.process is not None
            self.running.process.send_signal(signal.SIGKILL)
            self.running.process.wait(timeout=10)
            self.kills += 1
            self._spawn()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                if self.running is not None and self.running.exit_code() is not None:
                    self.crashes += 1  # it died without being killed: a bug worth a figure
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
