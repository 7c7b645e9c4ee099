"""The controller's Prometheus metrics, in a registry of their own.

The job counters keep training-operator's names and labels
(``training_operator_jobs_{created,deleted,successful,failed,restarted}_total`` with
``job_namespace`` and ``framework="mxnet"``), so dashboards built for kubeflow's operators work
unchanged. A registry per :class:`Metrics` instance (not the global one) lets tests build as
many controllers in one process as they like.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

FRAMEWORK: Final = "mxnet"
LABELS: Final = ("job_namespace", "framework")


class Metrics:
    """Every metric the controller exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()

        def counter(name: str, text: str) -> Counter:
            return Counter(name, text, LABELS, registry=self.registry)

        self.jobs_created = counter(
            "training_operator_jobs_created_total", "MXJobs seen for the first time."
        )
        self.jobs_deleted = counter(
            "training_operator_jobs_deleted_total", "MXJobs deleted (by a user or their TTL)."
        )
        self.jobs_successful = counter(
            "training_operator_jobs_successful_total", "MXJobs that succeeded."
        )
        self.jobs_failed = counter("training_operator_jobs_failed_total", "MXJobs that failed.")
        self.jobs_restarted = counter(
            "training_operator_jobs_restarted_total",
            "Replica restarts (recreations and in-place restarts) of MXJobs.",
        )
        self.reconcile_seconds = Histogram(
            "mxjob_controller_reconcile_duration_seconds",
            "Time one reconcile of one MXJob takes.",
            ["result"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "mxjob_controller_workqueue_depth",
            "MXJob keys waiting for a worker.",
            registry=self.registry,
        )
        self.queue_timers = Gauge(
            "mxjob_controller_workqueue_timers",
            "MXJob keys waiting for a timer (deadline, TTL, retry backoff).",
            registry=self.registry,
        )
        self.api_writes = Counter(
            "mxjob_controller_api_writes_total",
            "Writes the controller sent to the API server.",
            ["verb", "resource"],
            registry=self.registry,
        )
        self.is_leader = Gauge(
            "mxjob_controller_is_leader",
            "1 while this process holds the leader Lease (or runs without election).",
            registry=self.registry,
        )

    def job_counter_inc(self, counter: Counter, namespace: str, amount: float = 1) -> None:
        counter.labels(job_namespace=namespace, framework=FRAMEWORK).inc(amount)

    def track_queue(self, depth: Callable[[], int], timers: Callable[[], int]) -> None:
        """Read the queue's depth at scrape time (no thread has to keep the gauge current)."""
        self.queue_depth.set_function(lambda: float(depth()))
        self.queue_timers.set_function(lambda: float(timers()))

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)
