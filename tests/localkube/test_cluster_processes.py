"""How the local control plane stops its programs and knows which ports they need back."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from localkube.cluster import SCHEDULER, ControlPlaneState, _stop_pid
from localkube.ports import free_port, is_listened_on

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
    _stop_pid(child.pid, Path(sys.executable).name)
    assert time.monotonic() - started >= 0.3  # until the last thread had exited
    assert not is_listened_on(port)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # already reaped
    child.stdout.close()


def test_stopping_a_process_that_is_gone_does_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    _stop_pid(child.pid, Path(sys.executable).name)


def test_each_component_names_the_ports_it_listens_on(tmp_path: Path) -> None:
    state = ControlPlaneState(
        bin_dir=str(tmp_path),
        etcd_port=1,
        etcd_peer_port=2,
        apiserver_port=3,
        controller_manager_port=4,
        scheduler_port=5,
    )
    assert state.ports_of("etcd") == (1, 2)
    assert state.ports_of("kube-apiserver") == (3,)
    assert state.ports_of("kube-controller-manager") == (4,)
    assert state.ports_of(SCHEDULER) == (5,)
    without_scheduler = dataclasses.replace(state, scheduler_port=0)
    assert without_scheduler.ports_of(SCHEDULER) == ()
