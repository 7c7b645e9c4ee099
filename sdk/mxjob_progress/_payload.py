"""What a report becomes on the wire, and the limits that keep every body acceptable.

The status endpoint refuses a body it cannot store (an empty metric name, a field out of range,
a body too large) with a 4xx, and a refused body is never retried: so the reporter shapes its
state here, before sending, rather than learn of a mistake from the server. The limits are the
server's own (controller/progress/report.py and controller/progress/settings.py);
tests/sdk/test_server_limits.py holds the two equal, as this package cannot import the server.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping

MAX_METRICS = 32
"""Metrics in one body; names reported after that many distinct ones are dropped."""
MAX_NAME = 63
"""Characters of a metric's name (at least one); a longer one is dropped, not cut."""
MAX_VALUE = 256
"""Characters of a metric's value (it may be empty); a longer one is dropped, not cut (a cut
number lies)."""
MAX_BODY = 64 * 1024
"""Bytes of one encoded body, the largest the endpoint reads; metrics are dropped from the end
until it fits (with the limits above a body stays well under it)."""
MAX_SECONDS = 2**31 - 1
"""The largest ``estimatedRemainingSeconds`` (the status field is a 32-bit integer)."""


def percentage(fraction: float) -> int:
    """The integer percentage of the status for a fraction done.

    Rounded down, so that 100 means finished; a float a hair below a whole percent
    (``0.29 * 100 == 28.999999999999996``) still counts as that percent.
    """
    return max(0, min(100, math.floor(fraction * 100 + 1e-6)))


def fraction(value: object) -> float | None:
    """A progress value as a fraction in [0, 1], or None for a value that says nothing.

    Training code may pass anything (a NaN from a diverged run, a NumPy scalar): a report must
    not raise, so what is not a finite real number counts as "progress unknown".
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    if not math.isfinite(number):
        return None
    return max(0.0, min(1.0, number))


def seconds(remaining: float) -> int:
    """An estimate in seconds as the status's whole, bounded number."""
    return int(min(float(MAX_SECONDS), max(0.0, round(remaining))))


def _python_scalar(value: object) -> object:
    """A framework scalar (MXNet ``NDArray``, NumPy) as its Python value.

    Called in the training thread at report time, never later in the sender thread: frameworks
    do not promise that their arrays may be read from another thread.
    """
    if isinstance(value, (str, bytes, numbers.Number)):
        return value
    for name in ("asscalar", "item"):
        method = getattr(value, name, None)
        if callable(method):
            try:
                result: object = method()
            except Exception:
                return value
            return result
    return value


def metric_text(value: object) -> str:
    """A metric's value as the status's string.

    Reals with 6 significant digits, as MXNet's logs show them (a float's full ``repr`` says
    ``0.23470000000000002``); integers whole; booleans as JSON spells them; anything else by
    ``str``.
    """
    value = _python_scalar(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return format(float(value), ".6g")
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def metric_texts(metrics: Mapping[str, object]) -> list[tuple[str, str]]:
    """Each metric's name and value as strings, in the caller's thread (see
    :func:`_python_scalar`)."""
    return [(str(name), metric_text(value)) for name, value in metrics.items()]


class MetricTable:
    """The latest value of every metric reported so far, in the order first reported.

    Each body carries them all, so a metric reported once per epoch (a validation accuracy)
    stays in the status between epochs while per-batch reports update the others.
    """

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def update(self, texts: list[tuple[str, str]]) -> list[str]:
        """Take each metric's latest value; return the names dropped, with why."""
        dropped = []
        for name, text in texts:
            if not name or len(name) > MAX_NAME:
                dropped.append(f"{name[:40]!r} (a name of 1 to {MAX_NAME} characters)")
            elif len(text) > MAX_VALUE:
                dropped.append(f"{name[:40]!r} (a value longer than {MAX_VALUE} characters)")
            elif name not in self.values and len(self.values) >= MAX_METRICS:
                dropped.append(f"{name[:40]!r} (more than {MAX_METRICS} metrics)")
            else:
                self.values[name] = text
        return dropped


def encode(
    progress: float | None, remaining: float | None, metrics: Mapping[str, str]
) -> tuple[bytes, int]:
    """The request body for a state, and how many metrics were left out to keep it small."""
    status: dict[str, object] = {}
    if progress is not None:
        status["progressPercentage"] = percentage(progress)
    if remaining is not None:
        status["estimatedRemainingSeconds"] = seconds(remaining)
    entries = [{"name": name, "value": value} for name, value in metrics.items()]
    kept = len(entries)
    while True:
        if kept:
            status["metrics"] = entries[:kept]
        else:
            status.pop("metrics", None)
        body = json.dumps({"trainerStatus": status}, ensure_ascii=False, separators=(",", ":"))
        data = body.encode("utf-8")
        if len(data) <= MAX_BODY or not kept:
            return data, len(entries) - kept
        kept -= 1
