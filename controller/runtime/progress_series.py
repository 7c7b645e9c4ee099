"""The progress endpoint's counts as Prometheus series, read when scraped.

The endpoint counts what it answers and writes (controller/progress/counters.py); that room sits
above this one, so the counts are handed in as a callable (``Metrics.track_progress``, from
controller/manager.py) and described here by their shape alone. Every replica serves reports, so
each exports its own counts and a sum over the controller's pods counts them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Final, Protocol

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector


class ProgressCounts(Protocol):
    """What the progress endpoint has counted since the process started
    (controller/progress/counters.py's ``ProgressCounts``, which this room does not import)."""

    @property
    def accepted(self) -> int: ...

    @property
    def rejected(self) -> Mapping[int, int]: ...

    @property
    def coalesced(self) -> int: ...

    @property
    def writes(self) -> int: ...

    @property
    def write_failures(self) -> int: ...

    @property
    def dropped(self) -> int: ...


PROGRESS_COUNTERS: Final = (
    ("writes", "mxjob_controller_progress_writes",
     "Status writes of progress reports (status.trainerStatus) the API server took."),
    ("write_failures", "mxjob_controller_progress_write_failures",
     "Status writes of progress reports that failed and are tried again at the job's next turn."),
    ("coalesced", "mxjob_controller_progress_reports_coalesced",
     "Accepted progress reports replaced by a newer one of their job before they were written."),
    ("dropped", "mxjob_controller_progress_reports_dropped",
     "Accepted progress reports never written: their job was gone, or the API server refused "
     "the write for good."),
)  # fmt: skip
"""The progress endpoint's counts exported as they are: (count, series without ``_total``,
help)."""


class ProgressSeries(Collector):
    """The progress endpoint's counts, read at scrape time; no samples while it is off."""

    def __init__(self) -> None:
        self.counts: Callable[[], ProgressCounts] | None = None

    def collect(self) -> Iterator[CounterMetricFamily]:
        counts = self.counts() if self.counts is not None else None
        reports = CounterMetricFamily(
            "mxjob_controller_progress_reports",
            "Progress reports this replica answered, by HTTP status code (202: accepted; "
            'docs/how-to/monitor.md, "Progress").',
            labels=["code"],
        )
        if counts is not None:
            reports.add_metric(["202"], counts.accepted)
            for code, count in sorted(counts.rejected.items()):
                reports.add_metric([str(code)], count)
        yield reports
        for attribute, name, text in PROGRESS_COUNTERS:
            family = CounterMetricFamily(name, text)
            if counts is not None:
                family.add_metric([], getattr(counts, attribute))
            yield family
