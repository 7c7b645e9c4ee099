"""What a real-node test measures, kept as JSON for the tables of ``make bench-recovery``.

A test that measures what docs/explanation/recovery.md reports (seconds to an end, pods made,
the epoch resumed from) records it with the ``figures`` fixture instead of printing it: its
assertions gate ``make test``, and its figures reach the page only through a file. pytest keeps
the records in memory; when ``MXJOB_FIGURES`` names a file (``make bench-recovery`` sets it),
the session's end writes them all there (bench/recovery_figures.py), and ``python -m
bench.recovery`` renders the page's tables from it. Under ``make test`` nothing is written, and
the fixture still refuses a value JSON cannot hold, so a test that would break the bench fails
in the suite first.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.recovery_figures import OURS, Figure, Value, add, checked

ENV = "MXJOB_FIGURES"


@dataclass
class Figures:
    """The records of one pytest session; ``record`` is what the fixture hands a test."""

    test: str = ""
    found: list[Figure] = field(default_factory=list)

    @property
    def measured(self) -> bool:
        """Whether the records are written (``make bench-recovery``): a figure is then measured
        with its job alone on the node (tests/e2e/side_by_side.py)."""
        return bool(TARGET)

    def record(self, *, table: str, case: str, operator: str = OURS, **values: Value) -> Figure:
        """Keep one case's figures; a value JSON cannot hold faithfully is a ValueError."""
        return self.keep(table=table, case=case, operator=operator, values=values)

    def keep(
        self, *, table: str, case: str, operator: str = OURS, values: Mapping[str, Value]
    ) -> Figure:
        """:meth:`record` for values gathered in a mapping first."""
        figure = Figure(table, case, operator, checked(case, values), self.test)
        self.found.append(figure)
        return figure


SESSION = Figures()
TARGET: list[Path] = []
"""Where the session's end writes, resolved at its start (a test may change directory)."""


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Figures:
    """The session's records, naming the requesting test in each."""
    SESSION.test = request.node.nodeid
    return SESSION


def pytest_configure(config: pytest.Config) -> None:
    if path := os.environ.get(ENV):
        TARGET.append(Path(path).absolute())


def pytest_sessionfinish() -> None:
    """Adds the records to the file ``MXJOB_FIGURES`` names, when it names one and there are
    any: make test's two pytest processes share the environment, and each keeps the other's
    records (``bench.recovery_figures.add``)."""
    for path in TARGET if SESSION.found else ():
        add(path, SESSION.found)
