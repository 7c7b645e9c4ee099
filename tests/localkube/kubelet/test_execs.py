"""Exec mode's container processes: their two output streams, their exit codes, their stop."""

from __future__ import annotations

import queue
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from localkube.kubelet.crilog import STDERR, STDOUT, parse
from localkube.kubelet.execs import Launch, PodProcess, ProcessTable, stop_pod_process
from localkube.kubelet.logserver import ContainerLog

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1"},
    "spec": {"restartPolicy": "Never"},
}


def launch(tmp_path: Path, script: str) -> Launch:
    return Launch(
        argv=["sh", "-c", script],
        env={"PATH": "/usr/bin:/bin"},
        log_path=tmp_path / "ns_p.log",
        host_names=(),
        container={"name": "mxnet"},
    )


def streams(container_log: ContainerLog) -> list[tuple[str, bytes]]:
    entries = [parse(line) for line in container_log.path.read_bytes().splitlines()]
    return [(entry.stream, entry.text) for entry in entries if entry is not None]


def test_an_exit_is_reported_with_its_code_once_the_output_is_in_both_logs(
    tmp_path: Path,
) -> None:
    table = ProcessTable()
    container_log = ContainerLog(tmp_path / "cri" / "0.log")
    exits: queue.Queue[tuple[PodProcess, int]] = queue.Queue()
    running = table.start(POD, launch(tmp_path, "echo out; echo err >&2; exit 3"), container_log)
    assert table.running(("ns", "p"))
    table.watch(running, lambda process, code: exits.put((process, code)))
    process, code = exits.get(timeout=10)
    assert (process, code) == (running, 3)
    assert not table.running(("ns", "p"))
    assert sorted(streams(container_log)) == [(STDERR, b"err"), (STDOUT, b"out")]
    assert sorted((tmp_path / "ns_p.log").read_text().splitlines()) == ["err", "out"]
    assert container_log.ended


def test_a_process_killed_by_a_signal_exits_with_128_plus_the_signal(tmp_path: Path) -> None:
    table = ProcessTable()
    exits: queue.Queue[int] = queue.Queue()
    running = table.start(POD, launch(tmp_path, "sleep 30"), ContainerLog(tmp_path / "0.log"))
    table.watch(running, lambda _, code: exits.put(code))
    table.signal(("ns", "p"), signal.SIGKILL)
    assert exits.get(timeout=10) == 128 + signal.SIGKILL


def test_a_stopped_process_is_not_reported_as_the_containers_exit(tmp_path: Path) -> None:
    table = ProcessTable()
    exits: queue.Queue[int] = queue.Queue()
    running = table.start(POD, launch(tmp_path, "sleep 30"), ContainerLog(tmp_path / "0.log"))
    table.watch(running, lambda _, code: exits.put(code))
    assert table.claim(("ns", "p"), uid="another-pod") is None
    claimed = table.claim(("ns", "p"), uid="u-1")
    assert claimed is running and not table.running(("ns", "p"))
    assert stop_pod_process(running, deadline=time.monotonic() + 5) == 128 + signal.SIGTERM
    with pytest.raises(queue.Empty):
        exits.get(timeout=0.5)


def test_a_command_that_cannot_start_says_so_in_both_logs(tmp_path: Path) -> None:
    table = ProcessTable()
    container_log = ContainerLog(tmp_path / "0.log")
    missing = Launch(
        argv=[str(tmp_path / "no-such-program")],
        env={},
        log_path=tmp_path / "ns_p.log",
        host_names=(),
        container={"name": "mxnet"},
    )
    with pytest.raises(FileNotFoundError):
        table.start(POD, missing, container_log)
    assert not table.running(("ns", "p"))
    assert "cannot start" in (tmp_path / "ns_p.log").read_text()
    assert [stream for stream, _ in streams(container_log)] == [STDERR]
