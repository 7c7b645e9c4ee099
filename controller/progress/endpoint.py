"""The progress endpoint, built: what the manager calls to serve it.

Everything the endpoint needs from the process comes in here, so the room stays free of the
manager: the API client (for TokenReviews and the status writes), the informers' caches of pods
and MXJobs (to tell which pod belongs to which job without an API request), whether those caches
have synced, and the TLS context provider (the ``current`` of a
``certs.reloader.CertificateReloader``, so a renewed certificate is served without a restart).
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable

from controller.progress.counters import ProgressCounters, ProgressCounts
from controller.progress.flusher import Flusher, StatusWriter
from controller.progress.reviews import TokenReviews
from controller.progress.server import ProgressServer
from controller.progress.service import ObjectCache, ProgressService
from controller.progress.settings import ProgressSettings
from controller.runtime.client import KubeClient
from controller.runtime.metrics_reviews import api_reviewer

log = logging.getLogger(__name__)


class ProgressEndpoint:
    """The endpoint's server and flusher, started and stopped together."""

    def __init__(
        self,
        *,
        server: ProgressServer,
        flusher: Flusher,
        reviews: TokenReviews,
        counters: ProgressCounters,
    ) -> None:
        self.server = server
        self.flusher = flusher
        self.reviews = reviews
        self._counters = counters

    @property
    def port(self) -> int:
        return self.server.port

    def counts(self) -> ProgressCounts:
        """The counts so far, for metrics (controller/progress/counters.py)."""
        return self._counters.snapshot()

    def start(self) -> ProgressEndpoint:
        self.flusher.start()
        self.server.start()
        log.info("serving progress reports over HTTPS on port %d", self.port)
        return self

    def stop(self) -> None:
        """Stop accepting reports, then stop writing (unwritten ones are dropped, see
        :meth:`Flusher.stop`)."""
        self.server.stop()
        self.flusher.stop()


def progress_endpoint(
    settings: ProgressSettings,
    *,
    client: KubeClient,
    pods: ObjectCache,
    jobs: ObjectCache,
    tls: Callable[[], ssl.SSLContext],
    write: StatusWriter,
    synced: Callable[[], bool] = lambda: True,
    clock: Callable[[], float] = time.time,
) -> ProgressEndpoint | None:
    """The endpoint (bound, not started), or None when ``settings.enabled`` is off.

    ``pods`` and ``jobs`` are the informers' stores (``Informer.store``; the pods' informer must
    keep ``metadata`` whole, which ``slim_pod`` does); ``synced`` says whether both have
    listed once, answering 503 until then; ``write`` writes a job's ``trainerStatus`` (the
    one MXJob writer's, controller/job/job_writes.py, which the manager hands over);
    ``clock`` is wall time in seconds (tokens expire, and ``lastUpdatedTime`` is stamped, by
    it)."""
    if not settings.enabled:
        return None
    counters = ProgressCounters()
    reviews = TokenReviews(
        api_reviewer(client),
        audience=settings.audience,
        cache_seconds=settings.token_cache_seconds,
        cache_size=settings.token_cache_size,
        clock=clock,
    )
    flusher = Flusher(write, interval=settings.write_interval, counters=counters, clock=clock)
    service = ProgressService(
        identify=reviews.identify,
        pods=pods,
        jobs=jobs,
        offer=flusher.offer,
        write_interval=settings.write_interval,
        synced=synced,
        clock=clock,
    )
    server = ProgressServer(
        host=settings.host,
        port=settings.port,
        service=service,
        counters=counters,
        tls=tls,
        max_body_bytes=settings.max_body_bytes,
    )
    return ProgressEndpoint(server=server, flusher=flusher, reviews=reviews, counters=counters)
