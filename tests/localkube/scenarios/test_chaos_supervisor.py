"""The chaos run's controller supervisor, on a stand-in program: a SIGKILL restarts it at once
and counts as a kill, an exit nobody asked for restarts it too and counts as a crash."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import cast

from localkube.base import processes
from localkube.plane.operator import LocalOperator
from localkube.scenarios.chaos.supervisor import ControllerSupervisor, children
from tests.helpers.waiting import wait_for


class StandIn:
    """A LocalOperator whose controller is a Python process that sleeps and prints its args."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs

    def controller_argv(self, *extra: str, metrics_port: int, health_port: int) -> list[str]:
        code = "import sys, time; print(*sys.argv[1:], flush=True); time.sleep(60)"
        return [sys.executable, "-c", code, *extra, f"--metrics={metrics_port}"]


def test_a_killed_controller_is_restarted_and_a_crash_is_counted(tmp_path: Path) -> None:
    supervisor = ControllerSupervisor(cast(LocalOperator, StandIn(tmp_path)))
    supervisor.start()
    try:
        assert supervisor.running is not None
        first = supervisor.running.pid
        supervisor.kill_and_restart()
        assert (supervisor.kills, supervisor.crashes, supervisor.generation) == (1, 0, 2)
        assert not processes.running(first)
        second = supervisor.running.pid
        os.kill(second, signal.SIGKILL)  # not through the supervisor: a crash
        wait_for("the supervisor's restart", lambda: supervisor.generation, (3).__eq__, timeout=10)
        assert (supervisor.kills, supervisor.crashes) == (1, 1)
        log = tmp_path / "controller-03.log"
        text = wait_for("the controller's log", log.read_text, bool, timeout=10)
        assert text.startswith(
            f"--namespace=chaos --identity=chaos-controller --workers=4 "
            f"--metrics={supervisor.metrics_port}"
        )
    finally:
        supervisor.stop()
    assert supervisor.running is not None
    assert supervisor.running.exit_code() is not None


def test_children_are_found_by_their_parent() -> None:
    assert os.getpid() in children(os.getppid())
