"""The one way tests wait: poll what a component wrote until it says what the test waits for.

Tests never sleep for a fixed time and then look: they fetch the record a component writes once
it has decided (a status, a condition, an Event, a finalizer gone) until it is there, and fail
with what they last saw when it does not come in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")

INTERVAL: Final = 0.1
"""Seconds between two fetches, by default."""
SHOWN: Final = 600
"""Characters of the last value's repr that a timeout message shows."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}… ({len(text)} characters)"


def wait_for(
    what: str,
    fetch: Callable[[], T],
    until: Callable[[T], bool],
    *,
    timeout: float,
    interval: float = INTERVAL,
) -> T:
    """``fetch()`` every ``interval`` seconds until ``until(value)`` holds; return that value.

    An exception from ``fetch`` (the object not there yet, the API server restarting) counts as
    "not yet"; an ``AssertionError`` is the test's own verdict and is raised at once. After
    ``timeout`` seconds (one last fetch at the deadline) the ``AssertionError`` raised names
    ``what``, the timeout, the last value fetched and the last exception, if the last fetch
    raised one.
    """
    deadline = time.monotonic() + timeout
    fetched = False
    last: T | None = None
    error: Exception | None = None
    while True:
        try:
            value = fetch()
        except AssertionError:
            raise
        except Exception as raised:
            error = raised
        else:
            error = None
            fetched, last = True, value
            if until(value):
                return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))
    message = f"timed out after {timeout:g} s waiting for {what}"
    message += f"; last value: {_shown(last)}" if fetched else "; no value fetched"
    if error is not None:
        message += f"; last error: {error!r}"
    raise AssertionError(message) from error
