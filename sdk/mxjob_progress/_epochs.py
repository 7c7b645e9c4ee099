"""What the MXNet and Gluon helpers share: progress from epochs and batches, and their metrics.

A training loop knows which epoch and batch it is at; the fraction done follows from the number
of epochs and of batches per epoch. The number of batches is often unknown up front (a data
iterator without a length): the helpers then learn it from the first epoch, and until that
epoch ends report progress at epoch ends only.
"""

from __future__ import annotations

from collections.abc import Mapping

from mxjob_progress._logging import LOG, LogOnce
from mxjob_progress.reporter import ProgressReporter


class EpochCounter:
    """The fraction done after a batch or an epoch, epochs and batches counted from 0."""

    def __init__(self, *, epochs: int, batches_per_epoch: int | None) -> None:
        if epochs < 1:
            raise ValueError("epochs must be >= 1")
        if batches_per_epoch is not None and batches_per_epoch < 1:
            raise ValueError("batches_per_epoch must be >= 1 (or None to learn it)")
        self.epochs = epochs
        self.batches_per_epoch = batches_per_epoch
        self._most_seen = 0
        """The most batches seen in one epoch so far (to learn the number)."""

    def after_batch(self, epoch: int, batch: int) -> float | None:
        """After batch ``batch`` of epoch ``epoch``; None while the batches per epoch are not
        known yet."""
        self._most_seen = max(self._most_seen, batch + 1)
        per_epoch = self.batches_per_epoch
        if per_epoch is None:
            return None
        # More batches than announced (a miscount) must not push progress into the next epoch.
        return (epoch + min(batch + 1, per_epoch) / per_epoch) / self.epochs

    def after_epoch(self, epoch: int) -> float:
        """After the last batch of epoch ``epoch``; learns the batches per epoch if unknown."""
        if self.batches_per_epoch is None and self._most_seen:
            self.batches_per_epoch = self._most_seen
        return (epoch + 1) / self.epochs

    def epoch_metrics(self, epoch: int) -> dict[str, object]:
        """The epoch being trained (from 1) and the total, as Kubeflow Trainer names them."""
        return {"currentEpoch": epoch + 1, "totalEpochs": self.epochs}


def named_values(name: str, value: object) -> list[tuple[str, object]]:
    """A metric value as (name, value) pairs: an MXNet ``EvalMetric`` (anything with
    ``get_name_value``) gives its own, under ``name`` alone when it has one value and as
    ``name-<its name>`` when it has several; anything else is one value."""
    get_name_value = getattr(value, "get_name_value", None)
    if not callable(get_name_value):
        return [(name, value)]
    pairs = [(str(inner), inner_value) for inner, inner_value in get_name_value()]
    if len(pairs) == 1:
        return [(name, pairs[0][1])]
    return [(f"{name}-{inner}", inner_value) for inner, inner_value in pairs]


def expand(metrics: Mapping[str, object]) -> dict[str, object]:
    """Every metric of ``metrics`` by :func:`named_values`."""
    expanded: dict[str, object] = {}
    for name, value in metrics.items():
        expanded.update(named_values(name, value))
    return expanded


class Helper:
    """A framework helper's reporter, and its own warnings told once: a helper's error (an
    unexpected callback argument, a metric that cannot be read) must not stop training."""

    def __init__(self, reporter: ProgressReporter) -> None:
        self.reporter = reporter
        self._once = LogOnce()

    def failed(self, where: str) -> None:
        """Log the exception being handled, once per place."""
        LOG.log(self._once.level(where), "progress helper %s failed", where, exc_info=True)
