"""Whether a process still runs, and stopping processes until they are gone with every thread.

A process is gone when its last thread has exited: only then are its files, its listening
sockets among them, closed. ``/proc/<pid>/stat`` alone says less: the leader thread of a
multi-threaded Go program can be a zombie, and its command line read empty, while its other
threads still hold the sockets; a program started again on the same port at that moment fails
with "address already in use". So a child of this process is judged by ``waitpid`` (the kernel
reports a thread-group leader only after its last thread), any other by every thread in
``/proc/<pid>/task``.

Every function takes an optional ``program`` (the executable's file name): a pid whose command
line names another program is someone else's, its own having gone and the pid been reused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path

EXEC_SETTLE_SECONDS = 1.0
"""How long a command line may read empty beside a live leader (an exec in progress)."""


def program_name(pid: int) -> str | None:
    """The file name of the program ``pid`` runs; None when ``/proc`` does not say (no such
    process, or its leader thread has exited and its command line reads empty)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(argv0).name or None


def runs_module(pid: int, module: str) -> bool:
    """Whether ``pid`` runs ``python -m module`` (not a process that reused a stale pid)."""
    if pid <= 0 or not module:
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return module.encode() in argv


def running(pid: int, *, program: str | None = None) -> bool:
    """True while a thread of ``pid`` has not exited (a zombie leader beside live threads runs)
    and, with ``program``, the pid is still that program's."""
    if pid <= 0:
        return False
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    if not any(_thread_running(task) for task in tasks):
        return False
    if program is None:
        return True
    name = _settled_program_name(pid)
    if name is None:
        # An empty command line is the program's own only when its leader thread has exited
        # (see above); beside a live leader it is a process still in the middle of exec.
        return not _thread_running(Path(f"/proc/{pid}"))
    return name == program


def _settled_program_name(pid: int) -> str | None:
    """:func:`program_name`, waiting out an exec in progress. A process being exec'd reads an
    empty command line from the moment its old image is gone (which is when ``Popen`` returns to
    its parent) until the new one has its arguments: a moment, in which it is neither the
    program it was nor yet the one it becomes. Only a live leader can be in that moment."""
    deadline = time.monotonic() + EXEC_SETTLE_SECONDS
    while (name := program_name(pid)) is None and _thread_running(Path(f"/proc/{pid}")):
        if time.monotonic() >= deadline:
            break
        time.sleep(0.01)
    return name


def gone(pid: int, *, program: str | None = None) -> bool:
    """True once no thread of ``pid`` runs; reaps it when it is an exited child of ours."""
    if pid <= 0:  # waitpid would wait for a whole process group
        return True
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not running(pid, program=program)
    return reaped == pid


def wait_gone(pid: int, *, timeout: float, program: str | None = None) -> bool:
    """Poll :func:`gone` for up to ``timeout`` seconds; whether it went."""
    deadline = time.monotonic() + timeout
    while not gone(pid, program=program):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def stop(
    pids: Iterable[int],
    *,
    timeout: float = 10,
    program: str | None = None,
    group: bool = False,
) -> None:
    """SIGTERM each of ``pids`` (its process group with ``group``), SIGKILL what still runs
    after ``timeout``, and return once every one is gone."""
    pending = []
    for pid in pids:
        if running(pid, program=program):
            pending.append(pid)
        else:
            gone(pid, program=program)  # an exited child of ours is reaped, not left a zombie
    for pid in pending:
        _signal(pid, signal.SIGTERM, group=group)
    deadline = time.monotonic() + timeout
    stubborn = [
        pid
        for pid in pending
        if not wait_gone(pid, timeout=max(0.0, deadline - time.monotonic()), program=program)
    ]
    for pid in stubborn:
        _signal(pid, signal.SIGKILL, group=group)
    for pid in stubborn:
        wait_gone(pid, timeout=timeout, program=program)


def stop_process(pid: int, *, timeout: float = 15) -> None:
    """Stop a program started in a session of its own (the webhook's, a controller's pid):
    SIGTERM its process group, then SIGKILL it if its leader is still there after ``timeout``."""
    stop([pid], timeout=timeout, group=True)


def _signal(pid: int, signum: signal.Signals, *, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)


def _thread_running(task: Path) -> bool:
    try:
        state = (task / "stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
