"""Callbacks for MXNet's ``Module.fit`` that report progress and the training metrics.

::

    from mxjob_progress import ProgressReporter
    from mxjob_progress.mxnet import FitProgress

    progress = FitProgress(ProgressReporter.from_env(), epochs=10, batches_per_epoch=100)
    module.fit(
        train_iter, eval_data=val_iter, num_epoch=10,
        batch_end_callback=progress.batch_end_callback,
        epoch_end_callback=progress.epoch_end_callback,
        eval_end_callback=progress.eval_end_callback,
    )
    progress.reporter.close()

The callbacks only read the attributes ``Module.fit`` passes (duck typing), so this module
imports without MXNet, and works with any MXNet 1.x.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mxjob_progress._epochs import EpochCounter, Helper
from mxjob_progress.reporter import ProgressReporter


class EvalMetricLike(Protocol):
    """What the callbacks use of an ``mxnet.metric.EvalMetric``."""

    def get_name_value(self) -> Sequence[tuple[str, object]]: ...


class BatchEndParamLike(Protocol):
    """What the callbacks use of ``mxnet.model.BatchEndParam``."""

    @property
    def epoch(self) -> int: ...

    @property
    def nbatch(self) -> int: ...

    @property
    def eval_metric(self) -> EvalMetricLike | None: ...


def _prefixed(prefix: str, metric: EvalMetricLike | None) -> dict[str, object]:
    """An eval metric's current values as ``<prefix>-<name>``, as ``Module.fit`` logs them."""
    if metric is None:
        return {}
    return {f"{prefix}-{name}": value for name, value in metric.get_name_value()}


class FitProgress(Helper):
    """Progress of ``Module.fit`` from its epochs and batches, with its metrics.

    ``epochs`` is the ``num_epoch`` given to ``fit`` (a resumed fit's ``begin_epoch`` counts
    as done), ``batches_per_epoch`` the batches of the training iterator (None: learned from
    the first epoch). Metrics are named as ``fit`` logs them: ``train-accuracy``,
    ``validation-accuracy``..., with ``currentEpoch`` and ``totalEpochs``.
    """

    def __init__(
        self, reporter: ProgressReporter, *, epochs: int, batches_per_epoch: int | None = None
    ) -> None:
        super().__init__(reporter)
        self._counter = EpochCounter(epochs=epochs, batches_per_epoch=batches_per_epoch)
        self._train_metric: EvalMetricLike | None = None

    def batch_end_callback(self, param: BatchEndParamLike) -> None:
        """For ``fit(batch_end_callback=...)``: called after each batch with a
        ``BatchEndParam(epoch, nbatch, eval_metric, locals)``, ``nbatch`` counted from 0.
        Reads the metrics only when the reporter is due to send them."""
        if not self.reporter.enabled:
            return
        try:
            epoch = int(param.epoch)
            fraction = self._counter.after_batch(epoch, int(param.nbatch))
            self._train_metric = param.eval_metric
            metrics = self._counter.epoch_metrics(epoch)
            if self.reporter.due():
                metrics.update(_prefixed("train", param.eval_metric))
            self.reporter.report(progress=fraction, metrics=metrics)
        except Exception:
            self.failed("batch_end_callback")

    def epoch_end_callback(
        self,
        epoch: int,
        symbol: object = None,
        arg_params: object = None,
        aux_params: object = None,
    ) -> None:
        """For ``fit(epoch_end_callback=...)``: called after each epoch with ``(epoch, symbol,
        arg_params, aux_params)``; reports the epoch's final training metrics."""
        if not self.reporter.enabled:
            return
        try:
            metrics = self._counter.epoch_metrics(int(epoch))
            metrics.update(_prefixed("train", self._train_metric))
            fraction = self._counter.after_epoch(int(epoch))
            self.reporter.report(progress=fraction, metrics=metrics)
        except Exception:
            self.failed("epoch_end_callback")

    def eval_end_callback(self, param: BatchEndParamLike) -> None:
        """For ``fit(eval_end_callback=...)``: called after each validation with a
        ``BatchEndParam`` whose ``eval_metric`` holds the validation metrics."""
        if not self.reporter.enabled:
            return
        try:
            self.reporter.report(metrics=_prefixed("validation", param.eval_metric))
        except Exception:
            self.failed("eval_end_callback")
