"""mxjob_progress.mxnet: Module.fit's callbacks, driven as fit drives them (and once by a real
fit, where MXNet is installed)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from mxjob_progress import ENV_CA_CERT, ENV_TOKEN, ENV_URL, Endpoint
from mxjob_progress.mxnet import FitProgress

from tests.sdk.recording import MakeReporter, RecordingReporter
from tests.sdk.status_server import StatusServer

SDK = Path(__file__).resolve().parents[2] / "sdk"


class FakeMetric:
    """An ``EvalMetric`` whose value the test sets, counting how often it is read."""

    def __init__(self, name: str, value: float) -> None:
        self.name, self.value = name, value
        self.reads = 0

    def get_name_value(self) -> list[tuple[str, float]]:
        self.reads += 1
        return [(self.name, self.value)]


class BatchEndParam(NamedTuple):
    """As ``mxnet.model.BatchEndParam``."""

    epoch: int
    nbatch: int
    eval_metric: FakeMetric | None
    locals: dict[str, Any]


def fit_like_module_fit(
    progress: FitProgress, *, epochs: int, batches: int, train: FakeMetric, validation: FakeMetric
) -> None:
    """The callbacks in the order, and with the arguments, of ``BaseModule.fit``."""
    for epoch in range(epochs):
        for nbatch in range(batches):
            train.value = 0.5 + epoch / 10 + nbatch / 100
            progress.batch_end_callback(BatchEndParam(epoch, nbatch, train, {}))
        progress.epoch_end_callback(epoch, object(), {}, {})
        validation.value = 0.6 + epoch / 10
        progress.eval_end_callback(BatchEndParam(epoch, batches, validation, {}))


def test_progress_follows_the_epochs_and_batches() -> None:
    reporter = RecordingReporter()
    progress = FitProgress(reporter, epochs=2, batches_per_epoch=4)
    train, validation = FakeMetric("accuracy", 0.0), FakeMetric("accuracy", 0.0)
    fit_like_module_fit(progress, epochs=2, batches=4, train=train, validation=validation)
    fractions = [report.progress for report in reporter.reports]
    # 4 batches, the epoch's end, its validation (no progress) — twice.
    assert fractions == [0.125, 0.25, 0.375, 0.5, 0.5, None, 0.625, 0.75, 0.875, 1.0, 1.0, None]


def test_metrics_are_named_as_fit_logs_them() -> None:
    reporter = RecordingReporter()
    progress = FitProgress(reporter, epochs=2, batches_per_epoch=4)
    train, validation = FakeMetric("accuracy", 0.0), FakeMetric("accuracy", 0.0)
    fit_like_module_fit(progress, epochs=2, batches=4, train=train, validation=validation)
    batch, epoch_end, evaluation = reporter.reports[0], reporter.reports[4], reporter.reports[5]
    assert batch.metrics == {"currentEpoch": 1, "totalEpochs": 2, "train-accuracy": 0.5}
    assert epoch_end.metrics == {"currentEpoch": 1, "totalEpochs": 2, "train-accuracy": 0.53}
    assert evaluation.metrics == {"validation-accuracy": 0.6}


def test_batch_metrics_are_read_only_when_a_report_is_due() -> None:
    reporter = RecordingReporter()
    reporter.due_now = False
    progress = FitProgress(reporter, epochs=1, batches_per_epoch=100)
    train = FakeMetric("accuracy", 0.9)
    for nbatch in range(100):
        progress.batch_end_callback(BatchEndParam(0, nbatch, train, {}))
    assert train.reads == 0
    assert reporter.last.metrics == {"currentEpoch": 1, "totalEpochs": 1}
    assert reporter.last.progress == 1.0
    progress.epoch_end_callback(0)
    assert train.reads == 1  # the epoch's final value is always sent
    assert reporter.last.metrics["train-accuracy"] == 0.9


def test_the_batches_per_epoch_are_learned_from_the_first_epoch() -> None:
    reporter = RecordingReporter()
    progress = FitProgress(reporter, epochs=4)
    train = FakeMetric("accuracy", 0.9)
    fit_like_module_fit(progress, epochs=2, batches=5, train=train, validation=train)
    fractions = [report.progress for report in reporter.reports]
    assert fractions[:7] == [None] * 5 + [0.25, None]  # unknown until the first epoch ends
    assert fractions[7] == pytest.approx((1 + 1 / 5) / 4)


def test_more_batches_than_announced_never_reach_the_next_epoch() -> None:
    reporter = RecordingReporter()
    progress = FitProgress(reporter, epochs=2, batches_per_epoch=2)
    for nbatch in range(5):
        progress.batch_end_callback(BatchEndParam(0, nbatch, None, {}))
    assert reporter.last.progress == 0.5


class _Untouchable:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"read {name} of a disabled reporter's callback argument")


def test_a_disabled_reporter_costs_the_callbacks_nothing() -> None:
    reporter = RecordingReporter(enabled=False)
    progress = FitProgress(reporter, epochs=1, batches_per_epoch=1)
    progress.batch_end_callback(_Untouchable())
    progress.epoch_end_callback(0)
    progress.eval_end_callback(_Untouchable())
    assert reporter.reports == []
    assert reporter.dues == 0


def test_a_callback_never_raises_into_fit(caplog: pytest.LogCaptureFixture) -> None:
    reporter = RecordingReporter()
    progress = FitProgress(reporter, epochs=1, batches_per_epoch=1)
    progress.batch_end_callback(object())  # type: ignore[arg-type]
    progress.epoch_end_callback("not an epoch")  # type: ignore[arg-type]
    progress.eval_end_callback(object())  # type: ignore[arg-type]
    assert reporter.reports == []
    failed = [r.getMessage() for r in caplog.records if r.name == "mxjob_progress"]
    assert failed == [
        "progress helper batch_end_callback failed",
        "progress helper epoch_end_callback failed",
        "progress helper eval_end_callback failed",
    ]


def test_out_of_range_counts_are_refused() -> None:
    with pytest.raises(ValueError):
        FitProgress(RecordingReporter(), epochs=0)
    with pytest.raises(ValueError):
        FitProgress(RecordingReporter(), epochs=1, batches_per_epoch=0)


def test_the_callbacks_report_to_the_endpoint(
    endpoint: Endpoint, status_server: StatusServer, make_reporter: MakeReporter
) -> None:
    reporter = make_reporter(endpoint)
    progress = FitProgress(reporter, epochs=2, batches_per_epoch=3)
    train, validation = FakeMetric("accuracy", 0.0), FakeMetric("accuracy", 0.0)
    fit_like_module_fit(progress, epochs=2, batches=3, train=train, validation=validation)
    assert reporter.close() is True
    last = status_server.received[-1]
    assert last.status["progressPercentage"] == 100
    assert last.metrics == {
        "currentEpoch": "2",
        "totalEpochs": "2",
        "train-accuracy": "0.62",
        "validation-accuracy": "0.7",
    }


REAL_FIT = """
import mxnet as mx
import numpy as np
from mxjob_progress import ProgressReporter, ReporterSettings
from mxjob_progress.mxnet import FitProgress

rng = np.random.RandomState(0)
x = rng.rand(64, 4).astype("float32")
y = (x.sum(axis=1) > 2).astype("float32")
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2), name="softmax")
module = mx.mod.Module(net, context=mx.cpu())
reporter = ProgressReporter.from_env(settings=ReporterSettings(min_interval=0))
progress = FitProgress(reporter, epochs=2)
module.fit(
    mx.io.NDArrayIter(x, y, batch_size=16),
    eval_data=mx.io.NDArrayIter(x, y, batch_size=32),
    eval_metric="acc",
    num_epoch=2,
    batch_end_callback=progress.batch_end_callback,
    epoch_end_callback=progress.epoch_end_callback,
    eval_end_callback=progress.eval_end_callback,
)
assert reporter.close()
"""


@pytest.mark.skipif(importlib.util.find_spec("mxnet") is None, reason="MXNet is not installed")
def test_a_real_module_fit_reports_through_the_callbacks(
    endpoint: Endpoint, status_server: StatusServer
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(SDK),
        "OMP_NUM_THREADS": "1",
        ENV_URL: endpoint.url,
        ENV_CA_CERT: endpoint.ca_cert,
        ENV_TOKEN: endpoint.token_file,
    }
    done = subprocess.run(
        [sys.executable, "-c", REAL_FIT],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    last = status_server.received[-1]
    assert last.status["progressPercentage"] == 100
    assert set(last.metrics) == {
        "currentEpoch",
        "totalEpochs",
        "train-accuracy",
        "validation-accuracy",
    }
    assert 0.0 <= float(last.metrics["validation-accuracy"]) <= 1.0
