"""The MXJob CRD's printer columns, for ``hack/gen_crd.py``: what ``kubectl get mxjobs`` shows
(``-o wide`` adds the columns of priority 1)."""

from __future__ import annotations

from typing import Any


def _column(
    name: str, kind: str, path: str, description: str, *, priority: int = 0
) -> dict[str, Any]:
    """A printer column; ``priority`` above 0 shows only with ``kubectl get -o wide``."""
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    column["description"] = description
    if priority:
        column["priority"] = priority
    return column


PRINTER_COLUMNS = [
    _column("State", "string", ".status.state", "The current state of the job."),
    _column("Mode", "string", ".spec.jobMode", "MXTrain (training) or MXTune (TVM auto-tuning)."),
    _column("Restarts", "integer", ".status.restartCount", "Restarts so far."),
    _column(
        "Progress",
        "integer",
        ".status.trainerStatus.progressPercentage",
        "How far the job is, in percent, as its pods report it.",
    ),
    _column(
        "Waiting",
        "string",
        '.status.conditions[?(@.type=="Pending")].reason',
        "What holds the job back (Kueue, its gang, the scheduler), if anything.",
    ),
    _column("Age", "date", ".metadata.creationTimestamp", "Time since the MXJob was created."),
    _column(
        "ETA",
        "integer",
        ".status.trainerStatus.estimatedRemainingSeconds",
        "Seconds left, as the job's reporter estimates them (kubectl get -o wide).",
        priority=1,
    ),
]
