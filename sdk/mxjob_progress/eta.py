"""The estimate of the time left, from the rate of progress the reporter itself observed.

The reporter sees only (time, fraction done) pairs, so it estimates from those: the average rate
since the first report, which leaves out what came before it (image pull, data download, the
first batch's compilation) and does not swing with one slow batch. Averages still move when the
rate changes (a slower evaluation epoch, a node shared with another job), so successive
estimates are blended, with a weight that grows with the time between them rather than with the
number of reports: a loop that reports every batch and one that reports every epoch smooth
alike. Between reports an estimate ages with the clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class EtaEstimator:
    """Seconds left, estimated from the reported fractions; None until that can be told.

    ``clock`` gives seconds on any monotonic scale (tests give a fake one). ``warmup`` is how
    long after the first report the first estimate comes, so that it rests on more than a few
    batches; ``time_constant`` is the time over which a new average rate outweighs the previous
    estimate (about 63 % of the way after that long).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        warmup: float = 10.0,
        time_constant: float = 30.0,
    ) -> None:
        if warmup < 0 or time_constant <= 0:
            raise ValueError("warmup must be >= 0 and time_constant > 0")
        self._clock = clock
        self._warmup = warmup
        self._time_constant = time_constant
        self._start: tuple[float, float] | None = None
        """When progress was first reported, and the fraction then."""
        self._last_fraction = 0.0
        self._estimate: float | None = None
        self._estimated_at = 0.0

    def update(self, fraction: float) -> None:
        """Take a fraction done (0 to 1) observed now."""
        now = self._clock()
        if self._start is None or fraction < self._last_fraction - 1e-9:
            # The first report, or progress went back (the job restarted from a checkpoint
            # with a reporter that outlived it): the old rate says nothing any more.
            self._start, self._estimate = (now, fraction), None
        self._last_fraction = fraction
        if fraction >= 1.0:
            self._estimate, self._estimated_at = 0.0, now
            return
        started, first = self._start
        elapsed, done = now - started, fraction - first
        if elapsed < self._warmup or elapsed <= 0 or done <= 0:
            return
        average = (1.0 - fraction) * elapsed / done
        if self._estimate is None:
            self._estimate = average
        else:
            aged = max(0.0, self._estimate - (now - self._estimated_at))
            weight = 1.0 - math.exp(-(now - self._estimated_at) / self._time_constant)
            self._estimate = aged + weight * (average - aged)
        self._estimated_at = now

    def remaining(self) -> float | None:
        """Seconds left as of now, or None while there is no estimate yet."""
        if self._estimate is None:
            return None
        return max(0.0, self._estimate - (self._clock() - self._estimated_at))
