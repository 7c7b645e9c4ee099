"""One report request → one answer: who sent it, may it report for this job, is the body
right, then keep it for the flusher.

The steps run cheapest-refusal first, so a stranger costs the least: the token (a cached review,
401), the caches being filled (503), the pod and the job as the informers cache them (403, 404),
and only then the body (400). Nothing here waits on the API server but a token not seen within
the cache period, and nothing writes: an accepted report is answered 202 and handed to the
flusher, which writes it within an interval.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from controller.progress.authorization import authorize
from controller.progress.coalescer import JobKey, Status
from controller.progress.report import BodyError, parse_report
from controller.progress.reviews import Refusal
from controller.progress.tokens import Identity
from controller.progress.wire import Headers, Reply, Target, status_reply

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
"""What a 503 asks the reporter to wait; the reporting library backs off at least that long."""


class ObjectCache(Protocol):
    """An informer's cache, by ``namespace/name`` (controller/runtime/store.py's ``Store``)."""

    def get(self, key: str) -> Mapping[str, Any] | None: ...


class ProgressService:
    """Answers report requests that :func:`~controller.progress.wire.request_target` routed."""

    def __init__(
        self,
        *,
        identify: Callable[[str | None], Identity | Refusal],
        pods: ObjectCache,
        jobs: ObjectCache,
        offer: Callable[[JobKey, Status], None],
        write_interval: float,
        synced: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._identify = identify
        self._pods = pods
        self._jobs = jobs
        self._offer = offer
        self._write_interval = write_interval
        self._synced = synced
        self._clock = clock

    def handle(self, target: Target, headers: Headers, body: bytes) -> Reply:
        """The answer to one report for ``target``, its report kept when accepted."""
        identity = self._identify(headers.get("authorization"))
        if isinstance(identity, Refusal):
            return _refusal(identity)
        if not self._synced():
            return status_reply(
                503,
                "the controller's caches are still filling; try again shortly",
                headers=(("Retry-After", str(RETRY_AFTER_SECONDS)),),
            )
        namespace, name = target.namespace, target.name
        pod = None
        if identity.pod_name is not None:
            pod = self._pods.get(f"{namespace}/{identity.pod_name}")
        job = self._jobs.get(f"{namespace}/{name}")
        verdict = authorize(identity, namespace=namespace, name=name, job=job, pod=pod)
        if not verdict.allowed:
            log.debug("progress report for %s/%s refused: %s", namespace, name, verdict.reason)
            return status_reply(verdict.status, verdict.reason)
        report = parse_report(body)
        if isinstance(report, BodyError):
            log.debug("progress report for %s/%s refused: %s", namespace, name, report.message)
            return status_reply(400, report.message)
        observed = datetime.datetime.fromtimestamp(self._clock(), datetime.UTC)
        self._offer((namespace, name), report.trainer_status(observed=observed))
        return status_reply(
            202, f"accepted: written to the status within {self._write_interval:g} seconds"
        )


def _refusal(refusal: Refusal) -> Reply:
    if refusal.status == 401:
        return status_reply(401, refusal.reason, headers=(("WWW-Authenticate", "Bearer"),))
    return status_reply(
        refusal.status, refusal.reason, headers=(("Retry-After", str(RETRY_AFTER_SECONDS)),)
    )
