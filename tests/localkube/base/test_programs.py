"""localkube.base.programs: a program starts with its log, is awaited until ready or dead, and
stops with its children."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from localkube.base import processes, programs
from localkube.base.programs import Program, ProgramError


def python(name: str, code: str, log: Path, **options: object) -> Program:
    return Program(name=name, argv=[sys.executable, "-c", code], log=log, **options)  # type: ignore[arg-type]


def test_a_program_writes_its_output_to_its_log_after_a_banner(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "hello.log"
    running = programs.start(
        python("hello", "print('hi'); import sys; sys.stderr.write('err\\n')", log, banner=True)
    )
    assert running.process is not None
    assert running.process.wait(timeout=10) == 0
    text = log.read_text()
    assert "starting hello" in text.splitlines()[1]
    assert text.endswith("hi\nerr\n")


def test_waiting_returns_once_ready(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    code = (
        f"import pathlib, time; time.sleep(0.3); pathlib.Path({str(marker)!r}).touch();"
        "time.sleep(30)"
    )
    running = programs.start(python("slow", code, tmp_path / "slow.log"))
    try:
        programs.wait_ready(running, marker.exists, what="the marker", timeout=10)
        assert running.exit_code() is None
    finally:
        running.stop(timeout=5)
    assert processes.gone(running.pid)


def test_a_program_that_dies_fails_the_wait_at_once_with_its_log(tmp_path: Path) -> None:
    running = programs.start(
        python("crash", "print('bad flag --x'); raise SystemExit(3)", tmp_path / "c.log")
    )
    started = time.monotonic()
    with pytest.raises(
        ProgramError, match=r"(?s)crash exited \(code 3\) while waiting for health.*bad flag --x"
    ):
        programs.wait_ready(running, lambda: False, what="health", timeout=30)
    assert time.monotonic() - started < 10


def test_a_program_never_ready_fails_after_the_timeout_with_the_callers_error(
    tmp_path: Path,
) -> None:
    class MineError(RuntimeError):
        pass

    running = programs.start(
        python("idle", "print('waiting'); import time; time.sleep(30)", tmp_path / "i.log")
    )
    try:
        with pytest.raises(MineError, match=r"(?s)health not ready after 0.5 s.*waiting"):
            programs.wait_ready(running, lambda: False, what="health", timeout=0.5, error=MineError)
        assert running.exit_code() is None  # left running: the caller decides
    finally:
        running.stop(timeout=5)


def test_stop_ends_the_programs_children_too(tmp_path: Path) -> None:
    child_pid = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, pathlib, time;"
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f"pathlib.Path({str(child_pid)!r}).write_text(str(c.pid)); time.sleep(60)"
    )
    running = programs.start(python("parent", code, tmp_path / "p.log"))
    programs.wait_ready(running, child_pid.exists, what="the child", timeout=10)
    child = int(child_pid.read_text())
    running.stop(timeout=5)
    assert processes.wait_gone(child, timeout=10)


def test_an_adopted_program_is_watched_by_its_pid(tmp_path: Path) -> None:
    other = programs.start(python("other", "raise SystemExit(0)", tmp_path / "o.log"))
    assert other.process is not None
    other.process.wait(timeout=10)
    adopted = programs.adopt(other.program, other.pid)
    assert adopted.exit_code() == -1
    with pytest.raises(ProgramError, match="code unknown"):
        programs.wait_ready(adopted, lambda: False, what="x", timeout=5)


def test_an_adopted_pid_running_another_program_is_not_it_and_is_left_alone(
    tmp_path: Path,
) -> None:
    running = programs.start(python("idle", "import time; time.sleep(30)", tmp_path / "i.log"))
    try:
        ours = programs.adopt(running.program, running.pid, executable=Path(sys.executable).name)
        assert ours.exit_code() is None
        reused = programs.adopt(running.program, running.pid, executable="etcd")
        assert reused.exit_code() == -1
        reused.stop(timeout=1)
        assert running.exit_code() is None  # not signalled: the pid is not etcd's
    finally:
        running.stop(timeout=5)


def test_the_tail_is_the_logs_end_and_empty_when_unreadable(tmp_path: Path) -> None:
    log = tmp_path / "l.log"
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    assert programs.tail(log, 2) == "line 48\nline 49"
    assert programs.tail(tmp_path / "missing.log") == ""
