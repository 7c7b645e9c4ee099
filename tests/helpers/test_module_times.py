"""tests.helpers.module_times: each test module's time from pytest's reports, the file a pytest
process writes, and the lines make test ends with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from tests.helpers.module_times import (
    ENV,
    ModuleTime,
    ModuleTimes,
    Times,
    longest,
    main,
    module_of,
    module_totals,
    pytest_configure,
    read,
    report,
    write,
)

ROOT = Path(__file__).resolve().parents[2]

# Three modules' phases as pytest reports them: the session fixture's setup (40 s) in the first
# test's setup, a module fixture's teardown (5 s) in its module's last test's teardown.
PHASES = [
    ("tests/e2e/test_a.py::test_one", 40.0),  # setup
    ("tests/e2e/test_a.py::test_one", 2.0),  # call
    ("tests/e2e/test_a.py::test_one", 0.5),  # teardown
    ("tests/e2e/test_b.py::TestB::test_two[x]", 0.25),
    ("tests/e2e/test_b.py::TestB::test_two[x]", 60.0),
    ("tests/e2e/test_b.py::TestB::test_two[x]", 0.0),
    ("tests/e2e/test_b.py::test_three", 0.25),
    ("tests/e2e/test_b.py::test_three", 1.0),
    ("tests/e2e/test_b.py::test_three", 5.0),
    ("tests/test_c.py::test_four", 0.0),
    ("tests/test_c.py::test_four", 42.5),
    ("tests/test_c.py::test_four", 0.0),
]
TIMES = Times(
    [
        ModuleTime("tests/e2e/test_b.py", 66.5, 2),
        ModuleTime("tests/e2e/test_a.py", 42.5, 1),
        ModuleTime("tests/test_c.py", 42.5, 1),
    ],
    190.0,
)


def test_a_node_id_belongs_to_its_test_file() -> None:
    assert module_of("tests/x/test_y.py::TestZ::test_a[1::2]") == "tests/x/test_y.py"
    assert module_of("tests/x/test_y.py::test_a") == "tests/x/test_y.py"
    assert module_of("tests/x/test_y.py") == "tests/x/test_y.py"


def test_every_phase_counts_for_its_module_slowest_first_ties_by_path() -> None:
    assert module_totals(PHASES) == TIMES.modules


def test_no_phase_is_no_module() -> None:
    assert module_totals([]) == []


def feed(phases: list[tuple[str, float]], path: Path) -> None:
    """Gives ``phases`` to the plugin as pytest would, a session from start to finish."""
    plugin = ModuleTimes(path)
    plugin.pytest_sessionstart()
    for nodeid, seconds in phases:
        report = pytest.TestReport(
            nodeid, ("", 0, ""), {}, "passed", None, "call", duration=seconds
        )
        plugin.pytest_runtest_logreport(report)
    plugin.pytest_sessionfinish()


def test_the_plugin_writes_the_modules_and_the_sessions_time(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "times.json"
    feed(PHASES, path)
    written = read(path)
    assert written.modules == TIMES.modules
    assert written.session_seconds >= 0
    assert [entry["module"] for entry in json.loads(path.read_text())["modules"]] == [
        "tests/e2e/test_b.py",
        "tests/e2e/test_a.py",
        "tests/test_c.py",
    ]
    assert list(path.parent.iterdir()) == [path], "the partial file is left behind"


class Plugins:
    """What ``pytest_configure`` reads of pytest's config: the plugin manager, here a list."""

    def __init__(self) -> None:
        self.pluginmanager = self
        self.registered: list[tuple[object, str]] = []

    def register(self, plugin: object, name: str) -> None:
        self.registered.append((plugin, name))


def test_the_plugin_is_registered_only_when_a_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Plugins()
    monkeypatch.delenv(ENV, raising=False)
    pytest_configure(cast(pytest.Config, config))
    monkeypatch.setenv(ENV, "")
    pytest_configure(cast(pytest.Config, config))
    assert config.registered == []
    monkeypatch.setenv(ENV, str(tmp_path / "times.json"))
    pytest_configure(cast(pytest.Config, config))
    [(plugin, _)] = config.registered
    assert isinstance(plugin, ModuleTimes)
    assert plugin.path == tmp_path / "times.json"


def test_a_pytest_process_writes_its_modules(tmp_path: Path) -> None:
    tests = tmp_path / "suite"
    tests.mkdir()
    (tests / "test_first.py").write_text(
        "import pytest\n"
        "@pytest.fixture(scope='module')\n"
        "def slow():\n"
        "    import time; time.sleep(0.3)\n"
        "def test_a(slow): pass\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_b(slow, n): pass\n"
    )
    (tests / "test_second.py").write_text("def test_c(): pass\n")
    written = tmp_path / "times.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "tests.helpers.module_times", str(tests)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), ENV: str(written)}
    subprocess.run(command, cwd=tests, env=env, check=True, capture_output=True, timeout=120)
    times = read(written)
    by_module = {entry.module: entry for entry in times.modules}
    assert {module: entry.tests for module, entry in by_module.items()} == {
        "test_first.py": 3,
        "test_second.py": 1,
    }
    # the module fixture's sleep is within its module's time: a lower bound, whatever the load
    assert by_module["test_first.py"].seconds >= 0.3
    assert times.session_seconds >= by_module["test_first.py"].seconds


def test_the_report_ranks_the_top_modules_with_their_share_then_the_total() -> None:
    assert report(TIMES, "the real-node tests", 2) == [
        "================ the slowest test modules of the real-node tests ================",
        "     66.5 s  35.0%  tests/e2e/test_b.py (2 tests)",
        "     42.5 s  22.4%  tests/e2e/test_a.py (1 test)",
        "    190.0 s  total: the session, 3 modules, 4 tests (151.5 s in the tests)",
    ]


def test_a_report_of_no_test_says_so() -> None:
    lines = report(Times([], 3.0), "the real-node tests", 10)
    assert lines[1:] == [
        "  no test ran",
        "      3.0 s  total: the session, 0 modules, 0 tests (0.0 s in the tests)",
    ]


def test_the_longest_module_in_one_line() -> None:
    assert longest(TIMES, "the tests beside them") == (
        "the tests beside them: the longest module tests/e2e/test_b.py, 66.5 s of 190.0 s (35.0%)"
    )
    assert longest(Times([], 0.0), "the tests beside them") == (
        "the tests beside them: no test ran (0.0 s)"
    )
    assert longest(Times([ModuleTime("t.py", 0.0, 1)], 0.0), "x") == (
        "x: the longest module t.py, 0.0 s of 0.0 s (-)"
    )


def test_the_command_prints_a_written_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "times.json"
    write(path, TIMES)
    assert main(["report", str(path), "--top", "1", "--label", "them"]) == 0
    assert capsys.readouterr().out.splitlines() == report(TIMES, "them", 1)
    assert main(["longest", str(path), "--label", "them"]) == 0
    assert capsys.readouterr().out == longest(TIMES, "them") + "\n"


@pytest.mark.parametrize(
    "content", [None, "", "{", "[]", '{"modules": [{"module": "a"}], "session_seconds": 1}']
)
def test_a_missing_or_garbled_file_prints_a_note_and_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None
) -> None:
    path = tmp_path / "times.json"
    if content is not None:
        path.write_text(content)
    assert main(["report", str(path), "--label", "the real-node tests"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run-tests: no module times for the real-node tests in {path}: ")
    assert len(out.splitlines()) == 1
