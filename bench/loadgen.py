"""One load-generator process: AdmissionReviews over one keep-alive TLS connection.

Kept free of project imports so that a spawned worker starts in a fraction of a second and
spends its CPU on requests, not on importing Flask. The parent (``bench.webhook_load``) starts
several of these with ``multiprocessing`` (spawn) so the generator is not held to one core by
the GIL, and gives them a common start time so their measurement windows coincide.

Two modes:

- closed loop (``rate_per_second=None``): send the next review as soon as the answer to the
  previous one is read. With enough processes this finds the server's saturation throughput.
- open loop (a rate): the i-th review is due at ``start + i / rate``; latency is measured from
  that due time, not from when it was actually sent, so a server that stalls is charged for
  every review that had to wait behind the stall (no coordinated omission).
"""

from __future__ import annotations

import http.client
import ssl
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoadSpec:
    """What one process sends, where, and for how long."""

    host: str
    port: int
    cafile: str
    path: str
    bodies: tuple[bytes, ...]
    start_at: float
    """``time.time()`` at which the measured window opens (after the warm-up)."""
    warmup: float
    """Seconds of requests before ``start_at`` that are not measured (connection, caches)."""
    duration: float
    rate_per_second: float | None = None
    """Reviews per second from this process; ``None`` is closed loop."""


@dataclass
class LoadResult:
    """What one process measured inside the window."""

    completed: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    """Seconds per review in the window (open loop: from its due time)."""
    bytes_received: int = 0


def ready(number: int) -> int:
    """A no-op the parent maps over the pool so every process is spawned before measuring."""
    return number


def _connection(spec: LoadSpec) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=spec.cafile)
    connection = http.client.HTTPSConnection(spec.host, spec.port, context=context, timeout=30)
    connection.connect()
    return connection


def run(spec: LoadSpec) -> LoadResult:
    """Run one process's share of the load; the entry point of each spawned worker."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    connection: http.client.HTTPSConnection | None = _connection(spec)
    result = LoadResult()
    # time.time() is the clock shared between processes; perf_counter is the precise one.
    offset = time.perf_counter() - time.time()
    begin = spec.start_at - spec.warmup + offset
    window_start = spec.start_at + offset
    end = window_start + spec.duration
    interval = 1.0 / spec.rate_per_second if spec.rate_per_second else 0.0
    while time.perf_counter() < begin:
        time.sleep(min(0.01, max(0.0, begin - time.perf_counter())))
    sent = 0
    count = len(spec.bodies)
    while True:
        if interval:
            due = begin + sent * interval
            now = time.perf_counter()
            if due >= end:
                break
            if due > now:
                time.sleep(due - now)
        else:
            due = time.perf_counter()
            if due >= end:
                break
        body = spec.bodies[sent % count]
        sent += 1
        try:
            if connection is None:  # the last one failed: a new handshake is part of the cost
                connection = _connection(spec)
            connection.request("POST", spec.path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            ok = response.status == 200
        except (OSError, http.client.HTTPException):
            # Counted as an error, never fatal: a stalled machine must show up in the report.
            ok, data = False, b""
            if connection is not None:
                connection.close()
            connection = None
        done = time.perf_counter()
        if due < window_start:
            continue
        if ok:
            result.completed += 1
            result.latencies.append(done - due)
            result.bytes_received += len(data)
        else:
            result.errors += 1
    if connection is not None:
        connection.close()
    return result
