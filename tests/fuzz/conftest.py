"""Report how many inputs the fuzz properties ran; in ``make fuzz``, fail below the target."""

from __future__ import annotations

import pytest

from tests.fuzz.harness import INPUTS, min_inputs


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not INPUTS:
        return
    total = sum(INPUTS.values())
    parts = ", ".join(f"{endpoint} {n}" for endpoint, n in sorted(INPUTS.items()))
    terminalreporter.write_line(f"fuzz: {total} inputs answered ({parts})")
    target = min_inputs()
    if target and total < target:
        terminalreporter.write_line(f"fuzz: FAILED, fewer than the {target} inputs required")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = min_inputs()
    if target and sum(INPUTS.values()) < target and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
