"""mxjob_progress.gluon: a hand-written loop's progress, and its metrics read only when due."""

from __future__ import annotations

import pytest
from mxjob_progress import Endpoint
from mxjob_progress.gluon import GluonProgress

from tests.sdk.recording import MakeReporter, RecordingReporter
from tests.sdk.status_server import StatusServer


class LazyScalar:
    """An ``NDArray`` of one value: reading it (``asscalar``) waits for the device."""

    reads = 0

    def __init__(self, value: float) -> None:
        self.value = value

    def asscalar(self) -> float:
        LazyScalar.reads += 1
        return self.value


class Accuracy:
    """An ``EvalMetric`` of one value."""

    def get_name_value(self) -> list[tuple[str, float]]:
        return [("accuracy", 0.75)]


class Composite:
    """A ``CompositeEvalMetric``: several values."""

    def get_name_value(self) -> list[tuple[str, float]]:
        return [("accuracy", 0.75), ("cross-entropy", 0.5)]


def test_progress_follows_the_epochs_and_batches() -> None:
    reporter = RecordingReporter()
    progress = GluonProgress(reporter, epochs=2, batches_per_epoch=2)
    for epoch in range(2):
        for batch in range(2):
            progress.batch(epoch, batch, loss=0.5)
        progress.epoch_end(epoch)
    assert [report.progress for report in reporter.reports] == [0.25, 0.5, 0.5, 0.75, 1.0, 1.0]
    assert reporter.reports[0].metrics == {"currentEpoch": 1, "totalEpochs": 2, "loss": 0.5}


def test_batch_metrics_are_not_read_unless_due() -> None:
    LazyScalar.reads = 0
    reporter = RecordingReporter()
    reporter.due_now = False
    progress = GluonProgress(reporter, epochs=1, batches_per_epoch=50)
    for batch in range(50):
        progress.batch(0, batch, loss=LazyScalar(0.25))
    assert reporter.last.metrics == {"currentEpoch": 1, "totalEpochs": 1}
    reporter.due_now = True
    progress.batch(0, 49, loss=LazyScalar(0.25))
    assert isinstance(reporter.last.metrics["loss"], LazyScalar)
    assert LazyScalar.reads == 0  # the reporter reads it, in report(), not the helper


def test_a_lazy_scalar_is_read_once_per_due_report(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    LazyScalar.reads = 0
    reporter = make_reporter(endpoint, min_interval=60.0)
    progress = GluonProgress(reporter, epochs=1, batches_per_epoch=100)
    for batch in range(100):
        progress.batch(0, batch, loss=LazyScalar(1.0 / (batch + 1)))
    assert LazyScalar.reads == 1  # the first batch's, when due; then not for a minute
    progress.epoch_end(0, loss=LazyScalar(0.01))
    assert LazyScalar.reads == 2
    assert reporter.close() is True
    last = status_server.received[-1]
    assert last.status["progressPercentage"] == 100
    assert last.metrics == {"currentEpoch": "1", "totalEpochs": "1", "loss": "0.01"}


def test_eval_metrics_are_expanded_under_their_keyword() -> None:
    reporter = RecordingReporter()
    progress = GluonProgress(reporter, epochs=1)
    progress.epoch_end(0, train=Accuracy(), validation=Composite())
    assert reporter.last.metrics == {
        "currentEpoch": 1,
        "totalEpochs": 1,
        "train": 0.75,
        "validation-accuracy": 0.75,
        "validation-cross-entropy": 0.5,
    }


def test_the_batches_per_epoch_are_learned_from_the_first_epoch() -> None:
    reporter = RecordingReporter()
    progress = GluonProgress(reporter, epochs=2)
    progress.batch(0, 0)
    progress.batch(0, 1)
    progress.epoch_end(0)
    progress.batch(1, 0)
    assert [report.progress for report in reporter.reports] == [None, None, 0.5, 0.75]


def test_a_disabled_reporter_costs_the_loop_nothing() -> None:
    reporter = RecordingReporter(enabled=False)
    progress = GluonProgress(reporter, epochs=1, batches_per_epoch=1)
    progress.batch(0, 0, accuracy=Accuracy())
    progress.epoch_end(0, accuracy=Accuracy())
    assert reporter.reports == []
    assert reporter.dues == 0


class Broken:
    def get_name_value(self) -> list[tuple[str, float]]:
        raise RuntimeError("metric not updated yet")


def test_a_failing_metric_never_raises_into_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    reporter = RecordingReporter()
    progress = GluonProgress(reporter, epochs=1, batches_per_epoch=2)
    progress.batch(0, 0, accuracy=Broken())
    progress.batch(0, 1, accuracy=Broken())
    progress.epoch_end(0, accuracy=Broken())
    assert reporter.reports == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "mxjob_progress"]
    assert warnings == ["progress helper batch failed", "progress helper epoch_end failed"]
