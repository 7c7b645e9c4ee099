"""hack/run-tests.sh, make test's runner: the builds before the tests, the background builds'
priority, and how their outcome and the two pytest processes' make its exit status.

Each run selects no test (``-k``), so both pytest processes only collect: what is checked is the
runner, with a background-build command of the test's own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers.waiting import wait_for

RUN_TESTS = Path(__file__).resolve().parents[2] / "hack" / "run-tests.sh"
NO_TEST = ["tests/hack/test_build_lib.py", "-k", "no_such_test", "-q", "-p", "no:cacheprovider"]


def run_tests(
    tmp_path: Path, late_builds: str, *, first_builds: str = "", ahead: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MXJOB_TEST_LOG_DIR": str(tmp_path),
        "MXJOB_LATE_BUILDS": late_builds,
        "MXJOB_FIRST_BUILDS": first_builds,
        "MXJOB_LATE_BUILDS_AHEAD": ahead,
    }
    return subprocess.run(
        [str(RUN_TESTS), *NO_TEST],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,  # the exit status is what the tests check
    )


def niceness_to(path: Path) -> str:
    """A shell command writing its process's niceness (field 19 of /proc/self/stat) to path."""
    return f"awk '{{print $19}}' /proc/self/stat > {path}"


def until_exists(path: Path) -> str:
    """A shell command that waits (up to 60 s) until ``path`` exists."""
    return f"for _ in $(seq 600); do [ -f {path} ] && break; sleep 0.1; done"


def test_the_background_builds_run_at_a_higher_priority_than_the_tests_as_root(
    tmp_path: Path,
) -> None:
    niceness = tmp_path / "niceness"
    done = run_tests(tmp_path, niceness_to(niceness))
    assert "the late builds 0" in done.stdout, done.stdout + done.stderr
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    expected = ours - 3 if os.geteuid() == 0 else ours
    assert int(niceness.read_text()) == max(expected, -20)
    assert (tmp_path / "late-builds.log").exists()
    assert (tmp_path / "beside-real-node.log").exists()


def test_no_test_selected_in_either_process_is_pytests_no_tests_status(tmp_path: Path) -> None:
    done = run_tests(tmp_path, "true")
    assert done.returncode == 5, done.stdout + done.stderr
    assert "real-node tests exited 5, the tests beside them 5" in done.stdout


def test_a_failed_background_build_fails_the_run_with_its_status_and_log(
    tmp_path: Path,
) -> None:
    done = run_tests(tmp_path, "echo 'go: module not found'; exit 3")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the late builds failed" in done.stdout
    assert "go: module not found" in done.stdout


def test_builds_ahead_start_idle_before_the_first_builds_and_are_raised_when_the_tests_start(
    tmp_path: Path,
) -> None:
    at_start, after_raise, first = (tmp_path / name for name in ("start", "raised", "first"))
    tests_started = tmp_path / "tests-started"
    # The ahead build notes its niceness, waits until the late builds (which start with the
    # tests) say so, then notes the niceness of a process it starts after that (awk).
    ahead = f"{niceness_to(at_start)}; {until_exists(tests_started)}; {niceness_to(after_raise)}"
    first_builds = f"{until_exists(at_start)}; {niceness_to(first)}"
    done = run_tests(tmp_path, f"touch {tests_started}", first_builds=first_builds, ahead=ahead)
    assert "the late builds 0" in done.stdout, done.stdout + done.stderr
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert int(first.read_text()) == ours
    if os.geteuid() != 0:
        assert not at_start.exists(), "without root nothing may start ahead: it stays idle"
        return
    assert at_start.exists(), "the ahead builds must start before the first builds end"
    assert int(at_start.read_text()) == 19
    assert int(after_raise.read_text()) == max(ours - 3, -20)
    assert (tmp_path / "late-builds-ahead.log").exists()


def test_a_failed_first_build_ends_the_run_with_its_status_before_any_test_or_late_build(
    tmp_path: Path,
) -> None:
    late_ran, ahead_ready = tmp_path / "late-ran", tmp_path / "ahead-ready"
    ahead_stopped = tmp_path / "ahead-stopped"
    ahead = (
        f"trap 'touch {ahead_stopped}; exit 1' TERM; touch {ahead_ready}; "
        "while true; do sleep 0.1; done"
    )
    # As root the first build fails once the ahead build is under way; without root at once.
    first_builds = f"[ $(id -u) != 0 ] || {until_exists(ahead_ready)}; exit 4"
    done = run_tests(tmp_path, f"touch {late_ran}", first_builds=first_builds, ahead=ahead)
    assert done.returncode == 4, done.stdout + done.stderr
    assert not late_ran.exists()
    assert not (tmp_path / "beside-real-node.log").exists()
    if os.geteuid() == 0:
        # The ahead builds must be stopped, not left running.
        wait_for("the ahead builds stopped", ahead_stopped.exists, bool, timeout=5)
