"""tests.e2e.side_by_side: cases run together under make test, one at a time when measured."""

from __future__ import annotations

import threading
from fractions import Fraction
from functools import partial
from pathlib import Path

import pytest

from tests.e2e.side_by_side import run_cases, share_of
from tests.helpers import figures as figures_module
from tests.helpers.figures import Figures


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Figures:
    monkeypatch.setattr(figures_module, "TARGET", [tmp_path / "figures.json"])
    return Figures()


@pytest.fixture
def unmeasured(monkeypatch: pytest.MonkeyPatch) -> Figures:
    monkeypatch.setattr(figures_module, "TARGET", [])
    return Figures()


def test_cases_run_at_the_same_time_when_nothing_is_measured(unmeasured: Figures) -> None:
    all_in = threading.Barrier(3, timeout=10)  # broken unless the three wait at once

    def case() -> None:
        all_in.wait()

    run_cases(unmeasured, [(name, case) for name in "abc"])
    assert not all_in.broken


def test_cases_run_one_after_another_in_order_when_figures_are_measured(
    measured: Figures,
) -> None:
    running: list[str] = []
    order: list[str] = []

    def case(name: str) -> None:
        assert not running, running  # none other at the same time
        running.append(name)
        order.append(name)
        running.remove(name)

    run_cases(measured, [(name, partial(case, name)) for name in "abc"])
    assert order == ["a", "b", "c"]


def test_a_failing_case_is_raised_with_its_name_after_the_others_ran_to_their_end(
    unmeasured: Figures,
) -> None:
    finished: list[str] = []
    release = threading.Event()

    def fails() -> None:
        raise AssertionError("the job Failed")

    def slow() -> None:
        release.wait(timeout=0.3)
        finished.append("slow")

    with pytest.raises(AssertionError, match="the job Failed") as raised:
        run_cases(unmeasured, [("fails", fails), ("slow", slow)])
    assert finished == ["slow"]
    assert raised.value.__notes__ == ["in the case 'fails', run side by side with 1 others"]


def test_two_failing_cases_are_raised_together(unmeasured: Figures) -> None:
    def fails(message: str) -> None:
        raise AssertionError(message)

    with pytest.raises(BaseExceptionGroup) as raised:
        run_cases(unmeasured, [(name, partial(fails, name)) for name in "ab"])
    assert sorted(str(error) for error in raised.value.exceptions) == ["a", "b"]
    assert str(raised.value).startswith("2 of 2 cases failed")


def test_each_case_takes_its_part_of_the_node_unless_measured(
    unmeasured: Figures, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert share_of(unmeasured, cases=3) == Fraction(1, 3)
    monkeypatch.setattr(figures_module, "TARGET", [tmp_path / "figures.json"])
    assert share_of(unmeasured, cases=3) == Fraction(1)
