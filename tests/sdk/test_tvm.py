"""mxjob_progress.tvm: the trial counting and best latencies without TVM, the adapter on stand-in
TVM modules of both layouts, and once through a real MetaSchedule callback where TVM is
installed."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from mxjob_progress.tvm import (
    TuningProgress,
    candidate_latencies,
    measure_callback,
    on_measured,
    task_name,
)

from tests.sdk.recording import RecordingReporter

SDK = Path(__file__).resolve().parents[2] / "sdk"


def test_trials_count_against_the_total_and_each_task_keeps_its_best_latency() -> None:
    reporter = RecordingReporter()
    progress = TuningProgress(reporter, total_trials=8)
    progress.add("matmul", [[2e-5, 4e-5], [1e-5], None])
    assert reporter.last.progress == 3 / 8
    progress.add("softmax", [[5e-6], []])
    progress.add("matmul", [[3e-5], [math.nan]])
    assert (progress.trials, progress.failed_trials) == (7, 3)
    assert progress.best == {"matmul": 1e-5, "softmax": 5e-6}
    assert reporter.last.progress == 7 / 8
    assert reporter.last.metrics == {
        "trials": 7,
        "totalTrials": 8,
        "failedTrials": 3,
        "bestLatencyUs/matmul": pytest.approx(10.0),
        "bestLatencyUs/softmax": pytest.approx(5.0),
    }


def test_a_search_ending_early_or_late_still_ends_at_100_percent() -> None:
    reporter = RecordingReporter()
    progress = TuningProgress(reporter, total_trials=4)
    progress.add("main", [[1e-3]] * 6)  # more than announced
    assert reporter.last.progress == 1.0
    early = TuningProgress(reporter, total_trials=100)
    early.add("main", [[1e-3]])
    early.finish()
    assert reporter.last.progress == 1.0
    assert reporter.last.metrics["trials"] == 1


def test_the_total_must_be_positive() -> None:
    with pytest.raises(ValueError):
        TuningProgress(RecordingReporter(), total_trials=0)


def _result(**fields: Any) -> types.SimpleNamespace:
    return types.SimpleNamespace(**fields)


def test_candidates_that_failed_to_build_or_run_have_no_latencies() -> None:
    built = [
        _result(error_msg=None),
        _result(error_msg="compile error"),
        _result(error_msg=None),
        _result(error_msg=None),
    ]
    ran = [
        _result(run_secs=[1e-5, 2e-5], error_msg=None),
        _result(run_secs=None, error_msg=None),
        _result(run_secs=None, error_msg="RPC timeout"),
        _result(run_secs=[], error_msg=None),
        _result(run_secs=[4e-5], error_msg=None),  # no builder result: judged by its run
    ]
    assert candidate_latencies(built, ran) == [[1e-5, 2e-5], None, None, None, [4e-5]]


def test_a_task_is_named_by_the_scheduler_or_by_its_id() -> None:
    task = _result(ctx=_result(task_name="fused_dense_add"))
    assert task_name(_result(tasks_=[task]), 0) == "fused_dense_add"
    assert task_name(_result(tasks_=[]), 3) == "task3"


def test_the_callback_never_raises_into_the_search(caplog: pytest.LogCaptureFixture) -> None:
    progress = TuningProgress(RecordingReporter(), total_trials=4)
    on_measured(progress, object(), 0, [], [_result(run_secs=["not a number"], error_msg=None)])
    assert progress.trials == 0
    assert [r.getMessage() for r in caplog.records] == ["progress helper measure callback failed"]


class _PyMeasureCallback:
    """Stands in for MetaSchedule's user-facing base class."""

    def apply(
        self,
        task_scheduler: Any,
        task_id: int,
        measure_candidates: list[Any],
        builder_results: list[Any],
        runner_results: list[Any],
    ) -> None:
        raise NotImplementedError


def _stand_in_tvm(monkeypatch: pytest.MonkeyPatch, *, layout: str) -> list[type]:
    """Stand-in TVM modules in ``sys.modules``: MetaSchedule at ``tvm.s_tir.meta_schedule``
    with ``tvm.ir.utils.derived_object`` (TVM 0.27) or at ``tvm.meta_schedule`` with its own
    ``utils`` (earlier). Returns the classes given to ``derived_object``."""
    derived: list[type] = []

    def derived_object(cls: type) -> type:
        derived.append(cls)
        return cls

    schedule = types.ModuleType("meta_schedule")
    schedule.measure_callback = types.SimpleNamespace(  # type: ignore[attr-defined]
        PyMeasureCallback=_PyMeasureCallback
    )
    utils = types.ModuleType("utils")
    utils.derived_object = derived_object  # type: ignore[attr-defined]
    new = layout == "tvm.s_tir.meta_schedule"
    modules = {
        "tvm.s_tir.meta_schedule": schedule if new else None,
        "tvm.ir.utils": utils if new else None,
        "tvm.meta_schedule": None if new else schedule,
        "tvm.meta_schedule.utils": None if new else utils,
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return derived


@pytest.mark.parametrize("layout", ["tvm.s_tir.meta_schedule", "tvm.meta_schedule"])
def test_the_adapter_finds_meta_schedule_where_this_tvm_has_it(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    derived = _stand_in_tvm(monkeypatch, layout=layout)
    reporter = RecordingReporter()
    progress = TuningProgress(reporter, total_trials=2)
    callback = measure_callback(progress)
    assert [type(callback)] == derived
    assert isinstance(callback, _PyMeasureCallback)
    scheduler = _result(tasks_=[_result(ctx=_result(task_name="main"))])
    ran = [_result(run_secs=[2e-6], error_msg=None)]
    callback.apply(scheduler, 0, [object()], [_result(error_msg=None)], ran)
    assert progress.best == {"main": 2e-6}
    assert reporter.last.progress == 0.5


def test_without_tvm_the_adapter_says_what_it_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("tvm.s_tir.meta_schedule", "tvm.meta_schedule"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"tvm\.s_tir\.meta_schedule.*tvm\.meta_schedule"):
        measure_callback(TuningProgress(RecordingReporter(), total_trials=1))


REAL_CALLBACK = """
from mxjob_progress import ProgressReporter
from mxjob_progress.tvm import TuningProgress, measure_callback
from tvm.s_tir import meta_schedule as ms

progress = TuningProgress(ProgressReporter.disabled(), total_trials=4)
callback = measure_callback(progress)
assert isinstance(callback, ms.MeasureCallback)
# Through TVM's own dispatch (C++ calls back into Python), as a search would call it.
callback.apply(
    ms.TaskScheduler.create("round-robin"),
    0,
    [],
    [ms.builder.BuilderResult("a.so", None), ms.builder.BuilderResult(None, "build failed")],
    [ms.runner.RunnerResult([1e-5, 3e-5], None), ms.runner.RunnerResult(None, "not built")],
)
print(progress.trials, progress.failed_trials, sorted(progress.best.items()))
"""


@pytest.mark.skipif(importlib.util.find_spec("tvm") is None, reason="TVM is not installed")
def test_a_real_meta_schedule_callback_feeds_the_progress() -> None:
    done = subprocess.run(
        [sys.executable, "-c", REAL_CALLBACK],
        check=False,
        env={**os.environ, "PYTHONPATH": str(SDK)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2 1 [('task0', 2e-05)]"
