"""Progress of a TVM MetaSchedule search: trials measured of the total, best latency per task.

::

    from tvm.s_tir import meta_schedule as ms  # tvm.meta_schedule in TVM before 0.2x
    from mxjob_progress import ProgressReporter
    from mxjob_progress.tvm import TuningProgress, measure_callback

    progress = TuningProgress(ProgressReporter.from_env(), total_trials=256)
    database = ms.tune_tir(
        mod=func, target=target, work_dir=work_dir, max_trials_global=256,
        measure_callbacks=[measure_callback(progress), *ms.MeasureCallback.create("default")],
    )
    progress.finish()
    progress.reporter.close()

Giving ``measure_callbacks`` replaces MetaSchedule's default ones (which update the database
and the cost model): keep them, as above. A search may end before ``max_trials_global`` (every
task's space exhausted); :meth:`TuningProgress.finish` then reports 100 %.

:class:`TuningProgress` is plain Python, fed with (task name, run times); only
:func:`measure_callback` imports TVM, when called.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable, Sequence
from typing import Any

from mxjob_progress._epochs import Helper
from mxjob_progress.reporter import ProgressReporter

LATENCY_PREFIX = "bestLatencyUs/"
"""A task's best mean latency, in microseconds, is the metric ``bestLatencyUs/<task name>``."""


class TuningProgress(Helper):
    """Counts the measured trials against ``total_trials`` (MetaSchedule's
    ``max_trials_global``) and keeps each task's best mean latency."""

    def __init__(self, reporter: ProgressReporter, *, total_trials: int) -> None:
        if total_trials < 1:
            raise ValueError("total_trials must be >= 1")
        super().__init__(reporter)
        self.total_trials = total_trials
        self.trials = 0
        """Candidates measured, failed ones included (they count against the total)."""
        self.failed_trials = 0
        self.best: dict[str, float] = {}
        """Each task's best mean latency in seconds, tasks in the order first measured."""

    def add(self, task_name: str, latencies: Iterable[Sequence[float] | None]) -> None:
        """Take one round of a task's measured candidates and report.

        Each entry is one candidate's run times in seconds (MetaSchedule's ``run_secs``),
        None or empty for one that failed to build or run.
        """
        for run_secs in latencies:
            self.trials += 1
            mean = sum(run_secs) / len(run_secs) if run_secs else math.nan
            if not math.isfinite(mean) or mean < 0:
                self.failed_trials += 1
            elif task_name not in self.best or mean < self.best[task_name]:
                self.best[task_name] = mean
        self.reporter.report(progress=self.fraction(), metrics=self.metrics())

    def fraction(self) -> float:
        """The trials measured, of the total."""
        return min(1.0, self.trials / self.total_trials)

    def metrics(self) -> dict[str, object]:
        """The counts, and each task's best latency in microseconds."""
        metrics: dict[str, object] = {
            "trials": self.trials,
            "totalTrials": self.total_trials,
            "failedTrials": self.failed_trials,
        }
        for task, seconds in self.best.items():
            metrics[LATENCY_PREFIX + task] = seconds * 1e6
        return metrics

    def finish(self) -> None:
        """The search is over, whether or not it used every trial: report 100 %."""
        self.reporter.report(progress=1.0, metrics=self.metrics())


def candidate_latencies(
    builder_results: Sequence[Any], runner_results: Sequence[Any]
) -> list[list[float] | None]:
    """Each measured candidate's run times, None for one that failed to build or to run
    (MetaSchedule's ``BuilderResult`` and ``RunnerResult``, read by their attributes)."""
    latencies: list[list[float] | None] = []
    for index, ran in enumerate(runner_results):
        built = builder_results[index] if index < len(builder_results) else None
        error = getattr(built, "error_msg", None) or getattr(ran, "error_msg", None)
        run_secs = getattr(ran, "run_secs", None)
        latencies.append(None if error or not run_secs else [float(s) for s in run_secs])
    return latencies


def task_name(task_scheduler: Any, task_id: int) -> str:
    """The tuned task's name (``tune_tir`` names its one task ``main``), or ``task<id>``."""
    try:
        return str(task_scheduler.tasks_[task_id].ctx.task_name)
    except Exception:
        return f"task{task_id}"


def on_measured(
    progress: TuningProgress,
    task_scheduler: Any,
    task_id: int,
    builder_results: Sequence[Any],
    runner_results: Sequence[Any],
) -> None:
    """What the measure callback does; never raises (an exception would abort the search)."""
    try:
        name = task_name(task_scheduler, int(task_id))
        progress.add(name, candidate_latencies(builder_results, runner_results))
    except Exception:
        progress.failed("measure callback")


def _meta_schedule() -> tuple[Any, Any]:
    """MetaSchedule's module and its ``derived_object`` decorator, wherever this TVM has them.

    TVM 0.27 has MetaSchedule in ``tvm.s_tir.meta_schedule`` and the decorator in
    ``tvm.ir.utils``; earlier releases in ``tvm.meta_schedule`` and ``tvm.meta_schedule.utils``.
    """
    errors = []
    for name in ("tvm.s_tir.meta_schedule", "tvm.meta_schedule"):
        try:
            schedule = importlib.import_module(name)
        except ImportError as error:
            errors.append(f"{name}: {error}")
            continue
        for place in ("tvm.ir.utils", f"{name}.utils"):
            try:
                return schedule, importlib.import_module(place).derived_object
            except (ImportError, AttributeError) as error:
                errors.append(f"{place}: {error}")
    raise ImportError("TVM MetaSchedule not found: " + "; ".join(errors))


def measure_callback(progress: TuningProgress) -> Any:
    """A MetaSchedule measure callback feeding ``progress``, for ``measure_callbacks=[...]``.

    Imports TVM. The callback runs in the search's thread after each round is measured.
    """
    schedule, derived_object = _meta_schedule()
    base: Any = schedule.measure_callback.PyMeasureCallback

    class ProgressCallback(base):  # type: ignore[misc]
        """Reports each measured round to the operator."""

        def apply(
            self,
            task_scheduler: Any,
            task_id: int,
            measure_candidates: Sequence[Any],
            builder_results: Sequence[Any],
            runner_results: Sequence[Any],
        ) -> None:
            on_measured(progress, task_scheduler, task_id, builder_results, runner_results)

    return derived_object(ProgressCallback)()
