"""The package's logger, and warning of each kind of trouble once.

A job whose endpoint is down for an hour, or whose metric callback hits a framework quirk on
every batch, should not bury its training logs under the same line every few seconds: the first
occurrence of each kind is a WARNING, the repeats are DEBUG.
"""

from __future__ import annotations

import logging

LOG = logging.getLogger("mxjob_progress")


class LogOnce:
    """Which kinds of trouble were already told."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def level(self, key: str, level: int = logging.WARNING) -> int:
        """``level`` the first time ``key`` is told, DEBUG after."""
        first = key not in self._seen
        self._seen.add(key)
        return level if first else logging.DEBUG
