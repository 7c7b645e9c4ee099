"""Waiting for the API server before the first request.

A controller can start while the API server is away: a control-plane restart, a cluster booting,
a network not yet up. Its first requests (the gang scheduler's discovery, Kueue's Workload API)
would then fail and the process exit, over and over, until the API server is back. Instead it
waits here, logging why, until the API server answers ``/readyz``. The informers, the elector and
the event writer retry on their own once started.
"""

from __future__ import annotations

import logging
import threading
from typing import Final, Protocol

from urllib3.exceptions import HTTPError

from controller.runtime.client import ApiError

log = logging.getLogger(__name__)

FIRST_DELAY: Final = 0.2
LONGEST_DELAY: Final = 5.0
"""Seconds between tries: doubling from the first to the longest."""


class Requester(Protocol):
    def request(self, method: str, path: str, *, timeout: float = 30) -> object: ...


def await_api_server(
    client: Requester,
    *,
    stop: threading.Event,
    first_delay: float = FIRST_DELAY,
    longest_delay: float = LONGEST_DELAY,
) -> bool:
    """True once the API server says it is ready; False if ``stop`` is set first.

    A connection that fails and an answer other than 200 (``/readyz`` is 500 while the API
    server is starting) both mean "not yet". ``/readyz`` is open to every client
    (``system:public-info-viewer``), so no right is needed for it.
    """
    delay = first_delay
    tries = 0
    while not stop.is_set():
        tries += 1
        try:
            client.request("GET", "/readyz", timeout=5)
            if tries > 1:
                log.info("the API server is ready after %d tries", tries)
            return True
        except (HTTPError, OSError, ApiError) as error:
            log.warning("waiting for the API server (try %d): %s", tries, _reason(error))
        stop.wait(delay)
        delay = min(delay * 2, longest_delay)
    return False


def _reason(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"{error.status} {error.reason}"
    return str(getattr(error, "reason", None) or error)
