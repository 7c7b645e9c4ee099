"""Whether a process runs, and stopping processes until every thread of theirs is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from localkube.base import processes
from localkube.base.ports import free_port, is_listened_on
from tests.helpers.waiting import wait_for

# A server whose main thread, on SIGTERM, ends alone (the raw ``exit`` system call, not
# ``exit_group``) while another thread keeps its listening socket for 0.3 s more: the state a
# multi-threaded Go program passes through when its leader thread finishes exiting first. Its
# ``/proc`` entry then shows a zombie with an empty command line, though the port is still held.
SERVER = textwrap.dedent(
    """
    import ctypes, os, signal, socket, sys, threading, time
    SYS_EXIT = {"x86_64": 60, "aarch64": 93}[os.uname().machine]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(sys.argv[1])))
    listener.listen()
    print("listening", flush=True)
    signal.sigwait({signal.SIGTERM})
    def finish():
        time.sleep(0.3)
        os._exit(0)
    threading.Thread(target=finish).start()
    ctypes.CDLL(None).syscall(SYS_EXIT, 0)
    """
)


def test_a_stopped_child_is_reaped_and_its_port_is_free_at_once() -> None:
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "listening"
    assert is_listened_on(port)
    started = time.monotonic()
    processes.stop([child.pid], program=Path(sys.executable).name)
    assert time.monotonic() - started >= 0.3  # until the last thread had exited
    assert not is_listened_on(port)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # already reaped
    child.stdout.close()


def test_stopping_a_process_that_is_gone_does_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    processes.stop([child.pid], program=Path(sys.executable).name)


def test_a_process_not_ours_runs_while_a_thread_outlives_its_leader() -> None:
    """Started through a shell that exits at once, the server is nobody's child here: only
    ``/proc`` can tell, and its leader thread's zombie state alone must not count as gone."""
    port = free_port()
    shell = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -c "$0" {port} >/dev/null 2>&1 & echo $!', SERVER],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(shell.stdout)
    wait_for("the server listening", lambda: is_listened_on(port), bool, timeout=10)
    assert processes.running(pid, program=Path(sys.executable).name)
    started = time.monotonic()
    processes.stop([pid], program=Path(sys.executable).name)
    assert time.monotonic() - started >= 0.3  # until the last thread had exited
    assert not is_listened_on(port)
    assert not processes.running(pid)


def test_a_pid_running_another_program_is_not_the_one_asked_about() -> None:
    me = os.getpid()
    assert processes.program_name(me) == Path(sys.executable).name
    assert processes.running(me)
    assert processes.running(me, program=Path(sys.executable).name)
    assert not processes.running(me, program="kube-apiserver")
    assert processes.gone(me, program="kube-apiserver")


def test_an_empty_command_line_beside_a_live_leader_is_another_program_mid_exec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process caught in the middle of exec'ing reads an empty command line for a moment; a
    stale pid reused that way must not be taken for the program it once ran, and signalled,
    even when its command line never appears."""
    other = subprocess.Popen(["sleep", "30"])
    try:
        monkeypatch.setattr(processes, "program_name", lambda pid: None)
        assert processes.running(other.pid)
        assert not processes.running(other.pid, program="etcd")
        processes.stop([other.pid], program="etcd", timeout=1)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_program_caught_mid_exec_is_its_own_once_its_command_line_appears(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Popen`` returns while the child's new image may not have its arguments yet: a program
    just started, asked after at once, is still that program, not someone else's pid."""
    child = subprocess.Popen(["sleep", "30"])
    reads = iter([None, None, "sleep"])
    try:
        monkeypatch.setattr(processes, "program_name", lambda pid: next(reads))
        assert processes.running(child.pid, program="sleep")
    finally:
        child.kill()
        child.wait()


def test_no_pid_is_never_running_and_is_not_waited_for() -> None:
    for pid in (0, -1):
        assert not processes.running(pid)
        assert processes.gone(pid)  # waitpid(0) would wait for the whole process group
    processes.stop([0, -1], timeout=0.1)


def test_an_exited_child_is_reaped_by_stop() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    # a zombie once it exits, until reaped
    wait_for(
        "the child exited", lambda: processes.running(child.pid), lambda runs: not runs, timeout=10
    )
    processes.stop([child.pid])
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)


def test_a_process_that_ignores_sigterm_is_killed_after_the_timeout() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
         "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    started = time.monotonic()
    processes.stop([child.pid], timeout=0.5)
    assert 0.5 <= time.monotonic() - started < 5
    assert not processes.running(child.pid)
    child.stdout.close()
