"""The progress reporter: training code reports, a background thread sends.

Training must never wait for, or fail because of, the status endpoint: the operator may be
restarting, the network policy may drop the packets, the CA may be rotating. So
:meth:`ProgressReporter.report` only records the state under a lock held for microseconds and
wakes a daemon thread; that thread sends the latest state, one request at a time, no more often
than the settings allow, and backs off while the server cannot take it. A report made while
another waits replaces it: the status shows where training is, not its history.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import urlsplit

from mxjob_progress import _payload
from mxjob_progress._logging import LOG, LogOnce
from mxjob_progress._transport import ACCEPTED, RETRY, Outcome, Transport
from mxjob_progress.eta import EtaEstimator

ENV_URL = "MXJOB_STATUS_URL"
"""The endpoint's https URL, ending in ``/namespaces/{ns}/mxjobs/{name}/status``."""
ENV_CA_CERT = "MXJOB_STATUS_CA_CERT"
"""The path of the PEM CA file that verifies the endpoint."""
ENV_TOKEN = "MXJOB_STATUS_TOKEN"
"""The path of the projected ServiceAccount token, read again at every request."""


@dataclass(frozen=True)
class Endpoint:
    """Where reports go and how they authenticate, as the operator's webhook injects it."""

    url: str
    ca_cert: str
    """Path of the PEM CA file."""
    token_file: str
    """Path of the token file."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme != "https" or not parts.hostname:
            # The request carries a bearer token: never in clear text.
            raise ValueError(f"the status URL must be an https URL: {self.url!r}")
        _ = parts.port  # raises ValueError for a port that is not a number

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Endpoint | None:
        """The endpoint the environment names; None when it names none (a job not run by the
        operator). Raises ValueError when only some of the variables are set, or the URL is
        not https: a misconfiguration worth a warning."""
        env = os.environ if environ is None else environ
        names = (ENV_URL, ENV_CA_CERT, ENV_TOKEN)
        values = [env.get(name, "").strip() for name in names]
        if not any(values):
            return None
        missing = [name for name, value in zip(names, values) if not value]
        if missing:
            raise ValueError(f"{', '.join(missing)} not set (but {ENV_URL} or others are)")
        return cls(url=values[0], ca_cert=values[1], token_file=values[2])


@dataclass(frozen=True)
class ReporterSettings:
    """How often and how patiently the reporter sends, in seconds.

    Meant to be given by keyword: ``ReporterSettings(min_interval=10)``.
    """

    min_interval: float = 5.0
    """Least time between the starts of two requests, whatever their answers: one status write
    per job every few seconds is all the operator and the API server behind it should take."""
    send_timeout: float = 2.0
    """How long one socket operation of a request (connect, handshake, read) may take."""
    close_timeout: float = 5.0
    """How long :meth:`ProgressReporter.close` waits for the final report (and at exit)."""
    backoff_initial: float = 1.0
    """The first wait after a failed request (408, 429, 5xx, no answer)."""
    backoff_max: float = 60.0
    """The wait doubles after each failure in a row up to this (and ``Retry-After`` is capped
    to it)."""
    eta_warmup: float = 10.0
    """Seconds after the first progress report before a remaining time is estimated."""
    eta_time_constant: float = 30.0
    """How fast the estimate follows a changed rate (see :class:`EtaEstimator`)."""

    def __post_init__(self) -> None:
        for name in ("min_interval", "close_timeout", "eta_warmup"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for name in ("send_timeout", "backoff_initial", "eta_time_constant"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.backoff_max < self.backoff_initial:
            raise ValueError("backoff_max must be >= backoff_initial")


class ProgressReporter:
    """Sends the latest reported progress and metrics to the operator, in the background.

    Create one with :meth:`from_env` at the start of training and call :meth:`report` as often
    as convenient (every batch is fine); call :meth:`close` at the end, or let the interpreter's
    exit do it. A reporter without an endpoint (``from_env`` outside the operator) does
    nothing, so training code needs no ``if``. Thread-safe; after ``os.fork`` the child's copy
    does nothing (its sender thread stayed in the parent).
    """

    def __init__(
        self,
        endpoint: Endpoint | None,
        *,
        settings: ReporterSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock`` is where the remaining-time estimate reads the time (tests give a fake
        one); pacing and timeouts always use real time."""
        self.settings = settings or ReporterSettings()
        self.endpoint = endpoint
        self._transport = (
            None
            if endpoint is None
            else Transport(
                endpoint.url,
                endpoint.ca_cert,
                endpoint.token_file,
                timeout=self.settings.send_timeout,
            )
        )
        self._eta = EtaEstimator(
            clock=clock,
            warmup=self.settings.eta_warmup,
            time_constant=self.settings.eta_time_constant,
        )
        self._once = LogOnce()
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        # The state, guarded by _cond.
        self._progress: float | None = None
        self._metrics = _payload.MetricTable()
        self._dirty = False
        """A state not sent yet (or to send again)."""
        self._delivered = True
        """The latest state was accepted (nothing reported yet counts as accepted)."""
        self._closing = False
        self._close_attempted = False
        self._next_at = 0.0
        """``time.monotonic()`` before which no request starts (pacing and backoff)."""
        self._backoff = 0.0
        self._failing = False
        self._due_at = 0.0
        """``time.monotonic()`` before which :meth:`due` says no."""

    @classmethod
    def from_env(
        cls,
        *,
        settings: ReporterSettings | None = None,
        environ: Mapping[str, str] | None = None,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> ProgressReporter:
        """The reporter the operator's environment variables configure, or a disabled one.

        Disabled when the variables are absent (a job run without the operator) or when
        ``enabled`` is false: ``enabled=(rank == 0)`` reports from one worker only. Never
        raises for the environment: a half-set one is logged and disables reporting.
        """
        endpoint = None
        if enabled:
            try:
                endpoint = Endpoint.from_env(environ)
            except ValueError as error:
                LOG.warning("progress reporting is off: %s", error)
            else:
                if endpoint is None:
                    LOG.debug("progress reporting is off: %s is not set", ENV_URL)
        return cls(endpoint, settings=settings, clock=clock)

    @classmethod
    def disabled(cls) -> ProgressReporter:
        """A reporter that does nothing (for a replica that should not report)."""
        return cls(None)

    @property
    def enabled(self) -> bool:
        """Whether reports go anywhere; helpers skip reading costly metrics when not."""
        return self._transport is not None

    def due(self) -> bool:
        """Whether to read costly metrics now: True at most once per ``min_interval``.

        Reading some metrics costs something (an MXNet ``asscalar`` waits for the GPU), and a
        report is sent at most once per ``min_interval`` anyway: helpers called every batch
        report progress alone, and add the metrics when due. The metrics sent are so at most
        one interval older than the progress.
        """
        if not self._active() or self._closing:
            return False
        now = time.monotonic()
        with self._cond:
            if now < self._due_at:
                return False
            self._due_at = now + self.settings.min_interval
            return True

    def report(
        self, *, progress: float | None = None, metrics: Mapping[str, object] | None = None
    ) -> None:
        """Record the current state; it is sent in the background. Never blocks, never raises.

        ``progress`` is the fraction done, from 0.0 to 1.0 (sent as a whole percentage,
        rounded down); None, NaN or a non-number leaves the last one. ``metrics`` maps names to
        values (numbers, strings, MXNet or NumPy scalars); each keeps its latest value, and
        every metric reported so far is sent. Ignored after :meth:`close`.
        """
        if not self._active() or self._closing:
            return
        try:
            self._record(progress, metrics)
        except Exception:
            LOG.log(self._once.level("report"), "a progress report was ignored", exc_info=True)

    def _active(self) -> bool:
        """Enabled, and in the process that made the reporter: after ``os.fork`` the child's
        copy has no sender thread, and its lock may have been copied held."""
        return self._transport is not None and os.getpid() == self._pid

    def _record(self, progress: object, metrics: Mapping[str, object] | None) -> None:
        fraction = None if progress is None else _payload.fraction(progress)
        texts = _payload.metric_texts(metrics) if metrics else []
        with self._cond:
            if fraction is not None:
                self._progress = fraction
                self._eta.update(fraction)
            dropped = self._metrics.update(texts)
            self._dirty, self._delivered = True, False
            if self._thread is None:
                self._start()
            self._cond.notify_all()
        if dropped:
            level = self._once.level("metrics-dropped")
            LOG.log(level, "metrics not reported: %s", ", ".join(dropped))

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name="mxjob-progress", daemon=True)
        thread.start()
        self._thread = thread
        atexit.register(self._close_at_exit)

    def _run(self) -> None:
        transport = self._transport
        assert transport is not None
        try:
            while (taken := self._take()) is not None:
                body, started = taken
                self._settle(transport.post(body), started)
        except Exception:  # a bug here must stop the reports, never the training
            LOG.exception("progress reporting stopped")

    def _take(self) -> tuple[bytes, float] | None:
        """Wait until the latest state may be sent; None once the reporter is closed."""
        with self._cond:
            while True:
                if self._closing:
                    if not self._dirty or self._close_attempted:
                        return None
                    self._close_attempted = True  # one last try, unpaced
                    break
                if self._dirty:
                    wait = self._next_at - time.monotonic()
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                else:
                    self._cond.wait()
            self._dirty = False
            started = time.monotonic()
            self._next_at = started + self.settings.min_interval
            remaining = None if self._progress is None else self._eta.remaining()
            body, left_out = _payload.encode(self._progress, remaining, self._metrics.values)
        if left_out:
            LOG.log(self._once.level("body-size"), "%d metrics left out of a report", left_out)
        return body, started

    def _settle(self, outcome: Outcome, started: float) -> None:
        """Take a request's outcome: done, dropped, or to send again after a wait."""
        delay = 0.0
        with self._cond:
            recovered = False
            if outcome.kind == ACCEPTED:
                recovered, self._failing, self._backoff = self._failing, False, 0.0
                self._delivered = not self._dirty
            elif outcome.kind == RETRY:
                self._dirty = self._failing = True
                self._backoff = min(
                    self.settings.backoff_max,
                    max(self.settings.backoff_initial, self._backoff * 2),
                )
                asked = min(outcome.retry_after or 0.0, self.settings.backoff_max)
                delay = max(self._backoff, asked)
                self._next_at = max(self._next_at, started + delay)
            else:
                self._backoff = 0.0
            self._cond.notify_all()
        url = self.endpoint.url if self.endpoint else ""
        if recovered:
            LOG.info("progress reports to %s are accepted again", url)
        elif outcome.kind == RETRY:
            LOG.log(
                self._once.level(f"retry {outcome.key}"),
                "progress report to %s not delivered (%s); sending the latest again after %.3g s",
                url,
                outcome.detail,
                delay,
            )
        elif outcome.kind != ACCEPTED:
            LOG.log(
                self._once.level(f"refused {outcome.key}"),
                "progress report refused by %s (%s); dropped, later reports are still sent",
                url,
                outcome.detail,
            )

    def close(self, timeout: float | None = None) -> bool:
        """Send the final state if it was not accepted yet, and stop the sender.

        Waits at most ``timeout`` seconds (``settings.close_timeout`` by default). Returns
        whether the latest state was accepted (True when there was nothing to send). Later
        reports are ignored. Idempotent; also run at interpreter exit.
        """
        if os.getpid() != self._pid:
            return False
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.settings.close_timeout if timeout is None else timeout)
        atexit.unregister(self._close_at_exit)
        with self._cond:
            return self._delivered and not self._dirty

    def _close_at_exit(self) -> None:
        with contextlib.suppress(Exception):  # the interpreter is going away
            self.close()

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
