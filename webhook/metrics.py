"""Prometheus metrics of the webhook, on a registry owned by one app.

A registry per app (not prometheus-client's global one) lets tests build many apps in one
process without "duplicated timeseries" errors, and makes ``/metrics`` describe exactly this app.
"""

from __future__ import annotations

from typing import Final, Literal

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

Endpoint = Literal["mutate", "validate", "convert", "validate-experiment"]
Result = Literal["allowed", "denied", "error", "malformed"]
"""``allowed``: admitted, or converted; ``denied``: refused with reasons (a conversion that
failed); ``error``: the webhook failed and answered with a refusal; ``malformed``: HTTP 400 or
413, the body was not a review."""

# Reviews are pure computations: most take well under a millisecond, so the buckets start at
# 100 µs and are fine up to 10 ms; the tail is there to see pathological inputs.
DURATION_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.00075,
    0.001,
    0.0025,
    0.005,
    0.0075,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    1.0,
    2.5,
)

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


class WebhookMetrics:
    """``mxjob_webhook_reviews_total`` and ``mxjob_webhook_review_duration_seconds``."""

    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True) if registry is None else registry
        self.reviews = Counter(
            "mxjob_webhook_reviews_total",
            "Reviews answered, by endpoint, operation (CREATE, UPDATE, DELETE, CONNECT, "
            "CONVERT, or UNKNOWN for a body that is not a review) and result "
            "(allowed, denied, error, malformed).",
            ("endpoint", "operation", "result"),
            registry=self.registry,
        )
        self.duration = Histogram(
            "mxjob_webhook_review_duration_seconds",
            "Time from receiving a review body to having its answer, by endpoint.",
            ("endpoint",),
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )

    def observe(
        self, *, endpoint: Endpoint, operation: str, result: Result, seconds: float
    ) -> None:
        """Count one answered review and its duration."""
        self.reviews.labels(endpoint=endpoint, operation=operation, result=result).inc()
        self.duration.labels(endpoint=endpoint).observe(seconds)

    def exposition(self) -> bytes:
        """The text exposition format of this registry, for ``GET /metrics``."""
        return generate_latest(self.registry)
