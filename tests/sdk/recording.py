"""What the tests drive the reporter and the helpers with: quick settings, the type of the
``make_reporter`` fixture, a reporter that records its reports instead of sending them (and says
"due" when told to), and a clock the tests move by hand."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from mxjob_progress import Endpoint, ProgressReporter, ReporterSettings

FAST = ReporterSettings(
    min_interval=0.0,
    send_timeout=5.0,
    close_timeout=2.0,
    backoff_initial=0.02,
    backoff_max=0.5,
)
"""Unpaced and quick to back off, but patient with a slow answer: on a busy machine a request
timed out while the server still records it would pass for a retry the test did not mean."""


class MakeReporter(Protocol):
    """``make_reporter(endpoint, clock=..., **settings)``: a reporter with :data:`FAST`
    settings but those given."""

    def __call__(
        self,
        endpoint: Endpoint | None,
        *,
        clock: Callable[[], float] = ...,
        **settings: float,
    ) -> ProgressReporter: ...


@dataclass(frozen=True)
class Report:
    progress: float | None
    metrics: dict[str, object]


class RecordingReporter(ProgressReporter):
    """Records each report as given; :meth:`due` answers :attr:`due_now`."""

    def __init__(self, *, enabled: bool = True) -> None:
        super().__init__(None)
        self._enabled = enabled
        self.due_now = True
        self.dues = 0
        """How often :meth:`due` was asked."""
        self.reports: list[Report] = []

    @property
    def enabled(self) -> bool:
        return self._enabled

    def due(self) -> bool:
        self.dues += 1
        return self.due_now

    def report(
        self, *, progress: float | None = None, metrics: Mapping[str, object] | None = None
    ) -> None:
        self.reports.append(Report(progress, dict(metrics or {})))

    @property
    def last(self) -> Report:
        return self.reports[-1]


class FakeClock:
    """Seconds that pass only when a test says so."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
