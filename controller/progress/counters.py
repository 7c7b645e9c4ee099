"""What the progress endpoint counts, for the manager to export as metrics.

Counted here rather than in the Prometheus registry so that this room stays free of the
process's metrics: the manager reads :meth:`ProgressCounters.snapshot` when it is scraped (a
collector, or gauges set from it) and names the series as it names its others. Every request
ends counted exactly once, as accepted or as rejected with its status code, so
``received == accepted + sum(rejected.values())``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

Count = Literal["coalesced", "writes", "write_failures", "dropped"]
"""The counts the flusher and the service add to by name."""


@dataclass(frozen=True, kw_only=True)
class ProgressCounts:
    """The counts at one moment, each since the process started."""

    received: int = 0
    """Requests answered, whatever the answer."""
    accepted: int = 0
    """Reports accepted (202)."""
    rejected: Mapping[int, int] = field(default_factory=dict)
    """Requests refused, by HTTP status code."""
    coalesced: int = 0
    """Accepted reports replaced by a newer one before they were written."""
    writes: int = 0
    """Status writes the API server took."""
    write_failures: int = 0
    """Status writes that failed and will be tried again at the job's next turn."""
    dropped: int = 0
    """Reports never written: their job was gone (404), or the API server refused the write
    for good."""


class ProgressCounters:
    """The counts, updated by the server's threads and the flusher's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(
            ("received", "accepted", "coalesced", "writes", "write_failures", "dropped"), 0
        )
        self._rejected: dict[int, int] = {}

    def add(self, name: Count, amount: int = 1) -> None:
        """Add to one of :class:`ProgressCounts`' counts, by field name."""
        with self._lock:
            self._counts[name] += amount

    def answered(self, status: int) -> None:
        """Count one request answered with ``status``."""
        with self._lock:
            self._counts["received"] += 1
            if status == 202:
                self._counts["accepted"] += 1
            else:
                self._rejected[status] = self._rejected.get(status, 0) + 1

    def snapshot(self) -> ProgressCounts:
        with self._lock:
            return ProgressCounts(rejected=MappingProxyType(dict(self._rejected)), **self._counts)
