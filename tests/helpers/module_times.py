"""Each test module's wall time in a pytest process, and the slowest modules at the end of
``make test``.

:class:`ModuleTimes`, registered when ``MXJOB_MODULE_TIMES`` names a file (this module is a
pytest plugin of ``tests/conftest.py``, or of ``-p tests.helpers.module_times``), sums the setup,
call and teardown of each test of a module. A module- or session-scoped fixture is set up in the
setup of the first test that uses it and torn down in the teardown of its scope's last test, so
its time counts for the module where that happened. At the session's end the plugin writes the
modules, slowest first, and the session's wall time to that file as JSON.

Run as a module, it prints such a file: ``report`` the slowest modules with their share of the
session, ``longest`` one line about the slowest. ``hack/run-tests.sh`` prints both after its
summary; a missing or garbled file prints a note instead, and the exit status is always 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

ENV = "MXJOB_MODULE_TIMES"
RULE = "================"


@dataclass(frozen=True)
class ModuleTime:
    module: str  # the test file's path, as in its tests' node ids
    seconds: float
    tests: int


@dataclass(frozen=True)
class Times:
    """What a pytest process wrote: its modules, slowest first, and its session's wall time."""

    modules: list[ModuleTime]
    session_seconds: float


def module_of(nodeid: str) -> str:
    """A node id's test file: ``tests/x/test_y.py`` for ``tests/x/test_y.py::T::test_a[1]``."""
    return nodeid.split("::", 1)[0]


def module_totals(phases: Iterable[tuple[str, float]]) -> list[ModuleTime]:
    """Sums ``(nodeid, seconds)`` of every test phase into one time per module, slowest first
    (modules of equal time by path), each with its number of tests."""
    seconds: dict[str, float] = {}
    tests: dict[str, set[str]] = {}
    for nodeid, duration in phases:
        module = module_of(nodeid)
        seconds[module] = seconds.get(module, 0.0) + duration
        tests.setdefault(module, set()).add(nodeid)
    ordered = sorted(seconds, key=lambda module: (-seconds[module], module))
    return [ModuleTime(module, seconds[module], len(tests[module])) for module in ordered]


class ModuleTimes:
    """The plugin: collects every test phase's duration, writes :class:`Times` to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path.absolute()  # a test may change the working directory
        self.phases: list[tuple[str, float]] = []
        self.started = time.monotonic()

    def pytest_sessionstart(self) -> None:
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.phases.append((report.nodeid, report.duration))

    def pytest_sessionfinish(self) -> None:
        times = Times(module_totals(self.phases), time.monotonic() - self.started)
        write(self.path, times)


def pytest_configure(config: pytest.Config) -> None:
    """Registers :class:`ModuleTimes` when ``MXJOB_MODULE_TIMES`` names a file."""
    if path := os.environ.get(ENV):
        config.pluginmanager.register(ModuleTimes(Path(path)), "mxjob-module-times")


def write(path: Path, times: Times) -> None:
    """Writes ``times`` whole or not at all: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(asdict(times), indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)


def read(path: Path) -> Times:
    """The file ``write`` wrote; ValueError (or OSError) for anything else."""
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    try:
        modules = [
            ModuleTime(str(entry["module"]), float(entry["seconds"]), int(entry["tests"]))
            for entry in data["modules"]
        ]
        return Times(modules, float(data["session_seconds"]))
    except (KeyError, TypeError) as error:
        raise ValueError(f"not a module-times file: {error!r}") from error


def counted(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def share(seconds: float, total: float) -> str:
    return f"{100 * seconds / total:.1f}%" if total > 0 else "-"


def report(times: Times, label: str, top: int) -> list[str]:
    """The ``top`` slowest modules, each with its seconds and share of the session, then the
    session's total."""
    lines = [f"{RULE} the slowest test modules of {label} {RULE}"]
    total = times.session_seconds
    for entry in times.modules[:top]:
        lines.append(
            f"{entry.seconds:9.1f} s {share(entry.seconds, total):>6}  {entry.module}"
            f" ({counted(entry.tests, 'test')})"
        )
    if not times.modules:
        lines.append("  no test ran")
    tests = sum(entry.tests for entry in times.modules)
    lines.append(
        f"{total:9.1f} s  total: the session, {counted(len(times.modules), 'module')},"
        f" {counted(tests, 'test')}"
        f" ({sum(entry.seconds for entry in times.modules):.1f} s in the tests)"
    )
    return lines


def longest(times: Times, label: str) -> str:
    """One line: the slowest module of ``label`` and its share of the session."""
    if not times.modules:
        return f"{label}: no test ran ({times.session_seconds:.1f} s)"
    first = times.modules[0]
    total = times.session_seconds
    return (
        f"{label}: the longest module {first.module}, {first.seconds:.1f} s of"
        f" {total:.1f} s ({share(first.seconds, total)})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.helpers.module_times")
    parser.add_argument("command", choices=["report", "longest"])
    parser.add_argument("file", type=Path)
    parser.add_argument("--label", default="the tests")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        times = read(args.file)
    except (OSError, ValueError) as error:  # json.JSONDecodeError is a ValueError
        print(f"run-tests: no module times for {args.label} in {args.file}: {error}")
        return 0
    if args.command == "report":
        print("\n".join(report(times, args.label, args.top)))
    else:
        print(longest(times, args.label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
