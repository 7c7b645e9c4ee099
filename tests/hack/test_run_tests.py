"""hack/run-tests.sh, make test's runner: the builds before the tests, the background builds
beside them, and how their outcome and the two pytest processes' make its exit status.

Each run selects no test (``-k``), so both pytest processes only collect: what is checked is the
runner, with a background-build command of the test's own. The runs that check the slowest
modules it ends with select two small modules of tests/helpers/ instead, one of them marked
real_node by a plugin of the test's own."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.helpers.module_times import longest, read, report

RUN_TESTS = Path(__file__).resolve().parents[2] / "hack" / "run-tests.sh"
NO_TEST = ["tests/hack/test_build_lib.py", "-k", "no_such_test", "-q", "-p", "no:cacheprovider"]


def run_tests(
    tmp_path: Path,
    late_builds: str,
    *,
    first_builds: str = "",
    selection: list[str] = NO_TEST,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MXJOB_TEST_LOG_DIR": str(tmp_path),
        "MXJOB_LATE_BUILDS": late_builds,
        "MXJOB_FIRST_BUILDS": first_builds,
        **(env or {}),
    }
    return subprocess.run(
        [str(RUN_TESTS), *selection],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,  # the exit status is what the tests check
    )


def niceness_to(path: Path) -> str:
    """A shell command writing its process's niceness (field 19 of /proc/self/stat) to path."""
    return f"awk '{{print $19}}' /proc/self/stat > {path}"


def test_the_background_builds_run_at_the_priority_the_run_was_given(tmp_path: Path) -> None:
    """Whatever the outer run's niceness (a nested run under make test, a CI runner's), the
    builds get the same: the runner changes no priority."""
    niceness = tmp_path / "niceness"
    done = run_tests(tmp_path, niceness_to(niceness))
    assert "the late builds 0" in done.stdout, done.stdout + done.stderr
    assert int(niceness.read_text()) == os.getpriority(os.PRIO_PROCESS, 0)
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


def test_a_failed_first_build_ends_the_run_with_its_status_before_any_test_or_late_build(
    tmp_path: Path,
) -> None:
    late_ran = tmp_path / "late-ran"
    done = run_tests(tmp_path, f"touch {late_ran}", first_builds="exit 4")
    assert done.returncode == 4, done.stdout + done.stderr
    assert not late_ran.exists()
    assert not (tmp_path / "beside-real-node.log").exists()


def test_the_first_builds_end_before_the_late_builds_and_the_tests_start(tmp_path: Path) -> None:
    first_done, late_saw = tmp_path / "first-done", tmp_path / "late-saw"
    done = run_tests(
        tmp_path,
        f"[ -f {first_done} ] && touch {late_saw}",
        first_builds=f"sleep 1; touch {first_done}",
    )
    assert "the late builds 0" in done.stdout, done.stdout + done.stderr
    assert late_saw.exists(), "the late builds started before the first builds ended"


# A plugin given to both pytest processes (-p): it marks the tests of one small module real_node,
# so that each process runs one module, as if the real-node tests were that module.
MARK_REAL_NODE = """
import pytest

@pytest.hookimpl(tryfirst=True)  # before pytest's -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.startswith("tests/helpers/test_late_builds.py::"):
            item.add_marker(pytest.mark.real_node)
"""
TWO_MODULES = ["tests/helpers/test_late_builds.py", "tests/helpers/test_waiting.py", "-q"]


def test_the_run_ends_with_the_slowest_modules_of_the_real_node_tests(tmp_path: Path) -> None:
    (tmp_path / "mark_real_node.py").write_text(MARK_REAL_NODE)
    done = run_tests(
        tmp_path,
        "true",
        selection=[*TWO_MODULES, "-p", "no:cacheprovider", "-p", "mark_real_node"],
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    summary = next(i for i, line in enumerate(lines) if line.startswith("run-tests: real-node"))
    assert "real-node tests exited 0, the tests beside them 0" in lines[summary]
    real_node = read(tmp_path / "module-times-real-node.json")
    beside = read(tmp_path / "module-times-beside-real-node.json")
    assert [entry.module for entry in real_node.modules] == ["tests/helpers/test_late_builds.py"]
    assert [entry.module for entry in beside.modules] == ["tests/helpers/test_waiting.py"]
    label = "the real-node tests (the critical path)"
    assert lines[summary + 1 :] == [
        *report(real_node, label, 10),
        longest(beside, "the tests beside them"),
    ]
    assert (
        lines[summary + 1]
        == f"================ the slowest test modules of {label} ================"
    )
    assert re.fullmatch(
        r" *\d+\.\d s +\d+\.\d%  tests/helpers/test_late_builds\.py \(\d+ tests\)",
        lines[summary + 2],
    )


def test_a_missing_module_times_file_prints_a_note_and_leaves_the_status(tmp_path: Path) -> None:
    # Without the plugin (tests/conftest.py loads it), neither process writes its times.
    done = run_tests(tmp_path, "true", selection=[*NO_TEST, "-p", "no:tests.helpers.module_times"])
    assert done.returncode == 5, done.stdout + done.stderr
    *_, summary, real_node, beside = done.stdout.splitlines()
    assert "real-node tests exited 5, the tests beside them 5" in summary
    times = tmp_path / "module-times-real-node.json"
    assert real_node.startswith(
        f"run-tests: no module times for the real-node tests (the critical path) in {times}: "
    )
    assert beside.startswith("run-tests: no module times for the tests beside them in ")
