"""The figures fixture's records, and the file make bench-recovery reads
(tests/helpers/figures.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench.recovery_figures import OURS, THEIRS, add, read, write
from tests.helpers import figures as plugin
from tests.helpers.figures import Figures


def test_a_record_names_its_table_case_operator_and_test() -> None:
    records = Figures(test="tests/e2e/test_x.py::test_y")
    kept = records.record(table="node", case="pull", named_after_s=0.9, ended=False)
    theirs = records.record(table="node", case="pull", operator=THEIRS, window_s=45.0)
    assert (kept.table, kept.case, kept.operator, kept.test) == (
        "node", "pull", OURS, "tests/e2e/test_x.py::test_y"
    )  # fmt: skip
    assert dict(kept.values) == {"named_after_s": 0.9, "ended": False}
    assert records.found == [kept, theirs]


@pytest.mark.parametrize("value", [math.nan, math.inf, [1, 2], {"a": 1}, object()])
def test_a_value_the_json_cannot_hold_fails_the_test_that_records_it(value: object) -> None:
    with pytest.raises(ValueError, match="figure x of 'pull'"):
        Figures().record(table="node", case="pull", x=value)  # type: ignore[arg-type]


def test_records_written_read_back_equal(tmp_path: Path) -> None:
    records = Figures(test="t")
    records.record(table="resume", case="oom", restarts=1, final_accuracy=0.9814, cause=None)
    path = tmp_path / "nested" / "figures.json"
    write(path, records.found)
    assert read(path) == records.found
    assert not list(path.parent.glob("*.partial"))


def test_the_fixture_gives_this_session_s_records_naming_the_test(figures: Figures) -> None:
    before = len(figures.found)
    figures.record(table="node", case="fixture", pods_made=1)
    recorded = figures.found.pop(before)  # not a figure of the run: kept out of its file
    assert recorded.test.endswith("test_the_fixture_gives_this_session_s_records_naming_the_test")
    assert len(figures.found) == before


def test_a_session_that_recorded_nothing_leaves_the_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "figures.json"
    write(target, [Figures(test="t").record(table="node", case="kept", pods_made=1)])
    monkeypatch.setattr(plugin, "TARGET", [target])
    monkeypatch.setattr(plugin, "SESSION", Figures())
    plugin.pytest_sessionfinish()
    assert [f.case for f in read(target)] == ["kept"]
    plugin.SESSION.record(table="node", case="new", pods_made=2)
    plugin.pytest_sessionfinish()
    assert [f.case for f in read(target)] == ["kept", "new"]


def test_two_processes_keep_each_other_s_records_and_a_case_measured_again_is_replaced(
    tmp_path: Path,
) -> None:
    target = tmp_path / "figures.json"
    real_node = Figures(test="a")
    real_node.record(table="hang", case="stopped", restarts=1)
    beside = Figures(test="b")
    beside.record(table="progress", case="flood", status_writes=4)
    add(target, real_node.found)
    add(target, beside.found)
    assert [(f.table, f.case) for f in read(target)] == [("hang", "stopped"), ("progress", "flood")]
    again = Figures(test="a")
    again.record(table="hang", case="stopped", restarts=2)
    add(target, again.found)
    assert [(f.case, dict(f.values)) for f in read(target)] == [
        ("flood", {"status_writes": 4}), ("stopped", {"restarts": 2}),
    ]  # fmt: skip
    target.write_text("not figures")
    add(target, again.found)
    assert read(target) == again.found
