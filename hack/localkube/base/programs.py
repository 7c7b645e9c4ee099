"""The one way localkube runs a program of this machine: start it with its log, wait until it is
ready or has died, stop it.

Every component (etcd and kube-apiserver, the webhook and the controller, containerd and the real
kubelet, cert-manager, Volcano, kwok, training-operator, the background test kubelet) starts the
same way: in a session of its own (so stopping it stops its children too), stdin closed, stdout
and stderr appended to its log file, which errors quote. Waiting polls a readiness check the
caller gives (an HTTP endpoint, a socket, a file) and fails as soon as the program exits, with
the end of its log, instead of waiting out the timeout. Stopping is
:func:`localkube.base.processes.stop` (SIGTERM, SIGKILL after the timeout, reaped).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from ssl import SSLContext

from localkube.base import processes

TAIL_LINES = 30
"""How much of a program's log an error quotes."""


class ProgramError(RuntimeError):
    """A program exited while it was awaited, or was not ready in time; the message quotes its
    log's end."""


@dataclass(frozen=True)
class Program:
    """What to run and where its output goes."""

    name: str
    argv: Sequence[str]
    log: Path
    env: Mapping[str, str] | None = None
    """The whole environment; None inherits this process's."""
    cwd: Path | None = None
    pass_fds: tuple[int, ...] = ()
    banner: bool = False
    """Mark each start in the log (a log appended to across restarts says which run is which)."""


@dataclass
class Running:
    """A started (or adopted) program: its pid, and its process when it is a child of ours."""

    program: Program
    pid: int
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    executable: str | None = None
    """For an adopted pid: the file name of the program it must still run; a pid that runs
    another is no longer this program's (it exited and the pid was reused), so it counts as
    exited and is never signalled."""

    def exit_code(self) -> int | None:
        """None while it runs; its exit code once exited (-1 when not ours to know)."""
        if self.process is not None:
            return self.process.poll()
        return None if processes.running(self.pid, program=self.executable) else -1

    def tail(self, lines: int = TAIL_LINES) -> str:
        return tail(self.program.log, lines)

    def stop(self, *, timeout: float = 15) -> None:
        """SIGTERM its session, SIGKILL after ``timeout``; returns once it is gone."""
        processes.stop([self.pid], timeout=timeout, group=True, program=self.executable)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)


def start(program: Program) -> Running:
    """Start ``program`` in a session of its own, its output appended to its log."""
    program.log.parent.mkdir(parents=True, exist_ok=True)
    with program.log.open("ab") as log:
        if program.banner:
            log.write(
                f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {program.name}\n".encode()
            )
            log.flush()
        process = subprocess.Popen(
            list(program.argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=program.cwd,
            env=dict(program.env) if program.env is not None else None,
            pass_fds=program.pass_fds,
        )
    return Running(program, process.pid, process)


def adopt(program: Program, pid: int, *, executable: str | None = None) -> Running:
    """A program a previous run started (its pid recorded in a state file). With
    ``executable`` (its file name), a pid now running another program is not it: see
    :attr:`Running.executable`."""
    return Running(program, pid, executable=executable)


def wait_ready(
    running: Running | Sequence[Running],
    ready: Callable[[], bool],
    *,
    what: str,
    timeout: float,
    error: type[Exception] = ProgramError,
    interval: float = 0.1,
) -> None:
    """Return once ``ready()`` holds. Raise ``error`` quoting the log's end as soon as one of
    ``running`` exits, or when ``timeout`` passes (the programs are left running: the caller
    decides whether to stop them)."""
    watched = [running] if isinstance(running, Running) else list(running)
    deadline = time.monotonic() + timeout
    while not ready():
        for program in watched:
            code = program.exit_code()
            if code is not None:
                raise error(
                    f"{program.program.name} exited ({_code(code)}) while waiting for {what}; "
                    f"its log {program.program.log} ends:\n{program.tail()}"
                )
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {p.program.log}:\n{p.tail()}" for p in watched)
            raise error(f"{what} not ready after {timeout:g} s\n{logs}")
        time.sleep(interval)


def answers_200(url: str, *, timeout: float = 2, context: SSLContext | None = None) -> bool:
    """Whether ``url`` answers 200 now: the readiness check of most programs."""
    with (
        contextlib.suppress(urllib.error.URLError, OSError),
        urllib.request.urlopen(url, timeout=timeout, context=context) as response,
    ):
        return bool(response.status == 200)
    return False


def tail(log: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` of a program's log, for an error message ("" when unreadable)."""
    with contextlib.suppress(OSError):
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    return ""


def with_env(**extra: str) -> dict[str, str]:
    """This process's environment with ``extra`` set (e.g. a program's ``KUBECONFIG``)."""
    return {**os.environ, **extra}


def _code(code: int) -> str:
    return "code unknown: not our child" if code == -1 else f"code {code}"
