"""Failpoints: the points of a restart where a test makes the controller die, as etcd's gofail.

A restart is three kinds of writes: the status that decides it, the deletions of the pods that
go, and the creations of their replacements. The controller must lose no restart and count
none twice whichever of them its death comes between (controller/job/status/backoff.py), and a
random SIGKILL lands there too rarely to show it. ``MXJOB_CONTROLLER_FAILPOINTS`` names points of
:data:`POINTS`, comma-separated; the process SIGKILLs itself (no shutdown code runs) the first
time it reaches one of them. No install sets it: the kill-point tests
(tests/controller/job/test_kill_points.py) and the chaos run
(hack/localkube/scenarios/chaos/) do, each for one process at a time.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from typing import Final

ENV: Final = "MXJOB_CONTROLLER_FAILPOINTS"

STATUS_WRITTEN: Final = "restart-status-written"
"""The status deciding a restart is written; no pod of it is deleted yet."""
PODS_DELETED: Final = "restart-pods-deleted"
"""The pods a restart ends are deleted; no replacement is made yet."""
PODS_HALF_CREATED: Final = "restart-pods-half-created"
"""One replacement of a restart is made, others are still to make."""
POINTS: Final = frozenset({STATUS_WRITTEN, PODS_DELETED, PODS_HALF_CREATED})


def _sigkill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Failpoints:
    """The armed points of this process; :meth:`reach` at each point of a restart."""

    def __init__(self, armed: frozenset[str] = frozenset(), *, die: Callable[[], None] = _sigkill):
        unknown = sorted(armed - POINTS)
        if unknown:
            raise ValueError(
                f"{ENV}: unknown failpoint(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(POINTS))}"
            )
        self._armed = set(armed)
        self._die = die

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Failpoints:
        names = environ.get(ENV, "")
        return cls(frozenset(n.strip() for n in names.split(",") if n.strip()))

    def reach(self, point: str) -> None:
        """Die here when ``point`` is armed (once: a point fires a single time)."""
        if point in self._armed:
            self._armed.discard(point)
            self._die()
