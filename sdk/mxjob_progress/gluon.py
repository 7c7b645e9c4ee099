"""Progress reporting for a hand-written Gluon training loop.

::

    from mxjob_progress import ProgressReporter
    from mxjob_progress.gluon import GluonProgress

    reporter = ProgressReporter.from_env()
    progress = GluonProgress(reporter, epochs=epochs, batches_per_epoch=len(loader))
    for epoch in range(epochs):
        for i, (data, label) in enumerate(loader):
            ...  # forward, backward, trainer.step
            progress.batch(epoch, i, loss=loss.mean())
        progress.epoch_end(epoch, accuracy=train_acc, validation_accuracy=evaluate(net))
    progress.reporter.close()

Values may be numbers, MXNet ``NDArray`` scalars or ``EvalMetric`` objects; an ``NDArray`` is
read (which waits for the computation) only when a report is due, so passing ``loss.mean()``
every batch does not slow the loop. Nothing here imports MXNet.
"""

from __future__ import annotations

from mxjob_progress._epochs import EpochCounter, Helper, expand
from mxjob_progress.reporter import ProgressReporter


class GluonProgress(Helper):
    """Progress of a Gluon loop from its epochs and batches, both counted from 0.

    ``batches_per_epoch`` None learns it from the first epoch. Metrics keep their keyword
    names; an ``EvalMetric`` given as ``name=metric`` is reported as ``name`` when it has one
    value and as ``name-<its name>`` for each of several. ``currentEpoch`` and ``totalEpochs``
    are added.
    """

    def __init__(
        self, reporter: ProgressReporter, *, epochs: int, batches_per_epoch: int | None = None
    ) -> None:
        super().__init__(reporter)
        self._counter = EpochCounter(epochs=epochs, batches_per_epoch=batches_per_epoch)

    def batch(self, epoch: int, batch: int, **metrics: object) -> None:
        """After batch ``batch`` (as ``enumerate`` counts) of epoch ``epoch``; ``metrics`` are
        read and sent only when the reporter is due."""
        if not self.reporter.enabled:
            return
        try:
            fraction = self._counter.after_batch(epoch, batch)
            reported = self._counter.epoch_metrics(epoch)
            if metrics and self.reporter.due():
                reported.update(expand(metrics))
            self.reporter.report(progress=fraction, metrics=reported)
        except Exception:
            self.failed("batch")

    def epoch_end(self, epoch: int, **metrics: object) -> None:
        """After the last batch of epoch ``epoch``; ``metrics`` (the epoch's training or
        validation results) are always sent."""
        if not self.reporter.enabled:
            return
        try:
            reported = self._counter.epoch_metrics(epoch)
            reported.update(expand(metrics))
            self.reporter.report(progress=self._counter.after_epoch(epoch), metrics=reported)
        except Exception:
            self.failed("epoch_end")
