"""The job's progress as the demos' live line shows it, from ``status.trainerStatus`` (what the
job's pods report to the controller's progress endpoint: docs/how-to/monitor.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SHOWN_METRICS = 3
"""Metrics shown beside the epoch: a live line stays one terminal line wide."""


def remaining(seconds: int) -> str:
    """``45s``, ``3m05s`` or ``2h07m``: short enough for the live line."""
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


def trainer_line(status: Mapping[str, Any]) -> str:
    """``42% ETA 1m05s epoch 3/5 loss=0.2341 accuracy=0.913``; ``""`` before the first report.

    The percentage and the estimate are the reporter's (``progressPercentage``,
    ``estimatedRemainingSeconds``); ``currentEpoch`` and ``totalEpochs`` read as one epoch, and
    the first other metrics follow in the order the job reported them.
    """
    trainer = status.get("trainerStatus")
    if not isinstance(trainer, Mapping):
        return ""
    parts = []
    if isinstance(trainer.get("progressPercentage"), int):
        parts.append(f"{trainer['progressPercentage']}%")
    if isinstance(trainer.get("estimatedRemainingSeconds"), int):
        parts.append(f"ETA {remaining(trainer['estimatedRemainingSeconds'])}")
    metrics = {
        str(m.get("name")): str(m.get("value"))
        for m in trainer.get("metrics") or []
        if isinstance(m, Mapping)
    }
    epoch, epochs = metrics.pop("currentEpoch", None), metrics.pop("totalEpochs", None)
    if epoch is not None:
        parts.append(f"epoch {epoch}/{epochs}" if epochs is not None else f"epoch {epoch}")
    parts += [f"{name}={value}" for name, value in list(metrics.items())[:SHOWN_METRICS]]
    return " ".join(parts)
