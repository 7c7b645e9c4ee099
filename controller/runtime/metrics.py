"""The controller's Prometheus metrics, in a registry of their own.

Names follow the controllers the dashboards already know. The job counters keep
training-operator's names and labels
(``training_operator_jobs_{created,deleted,successful,failed,restarted}_total`` with
``job_namespace`` and ``framework="mxnet"``); the work queue's are client-go's
(``workqueue_*{name}``) and the reconcile metrics controller-runtime's
(``controller_runtime_reconcile_*{controller}``), with the same buckets.
docs/reference/observability.md lists them all. A registry per :class:`Metrics` instance (not the
global one) lets tests build as many controllers in one process as they like.

The ``mxjob_controller_job*`` metrics say what users ask of a job system: jobs by state, how
long jobs take to run and to end, why they restart, how long Kueue keeps them queued.
``controller.job.tally`` decides what they count, and hands it over as the data of
``controller.runtime.job_series`` (this room does not import the job room: the reading of the
job cache is given to :meth:`Metrics.track_jobs`); they are labelled by ``job_namespace`` and a
state or an exit-code class only, never by a job's name. The one exception is
``mxjob_controller_job_progress_percentage``, a gauge per unfinished job that reports its
progress: read from the cache at each scrape, a job's series ends with the job. Only the leader
reports jobs by state and their progress (the standby's cache holds the same jobs), so a sum over
the controller's pods counts each once.

The ``mxjob_controller_progress_*`` counters are the progress endpoint's (controller/progress/
counters.py), read at scrape time from what :meth:`Metrics.track_progress` is given: every
replica serves reports, so each counts its own and a sum over the pods counts them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.runtime.events import QUEUE_FULL, WRITE_FAILED
from controller.runtime.job_series import DEADLINE_STATES, EXIT_CLASSES, JobGaugeValues, JobTally
from controller.runtime.progress_series import ProgressCounts, ProgressSeries

FRAMEWORK: Final = "mxnet"
LABELS: Final = ("job_namespace", "framework")
NAME: Final = "mxjob"
"""The ``name`` of the work queue and the ``controller`` of the reconcile metrics."""
RESULTS: Final = ("success", "error", "requeue", "requeue_after")
"""controller-runtime's values of ``controller_runtime_reconcile_total{result}``."""
EVENT_DROP_REASONS: Final = (QUEUE_FULL, WRITE_FAILED)
"""Why an Event was dropped (``controller.runtime.events``): every series present from the start."""
# client-go's workqueue buckets: 10 ns to 10 s, by tens.
QUEUE_BUCKETS: Final = tuple(10.0**exponent for exponent in range(-8, 2))
# controller-runtime's reconcile_time_seconds buckets.
RECONCILE_BUCKETS: Final = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8),
    *(0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25),
    *(30, 40, 50, 60),
)
# A job's times, from seconds to a week: pods pulling images and queues waiting for quota
# (start, admission), training runs of minutes to days (end).
START_BUCKETS: Final = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 21600)
END_BUCKETS: Final = (10, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800)
JOB_LABELS: Final = ("job_namespace",)
JOB_STATES_NAME: Final = "mxjob_controller_jobs"
JOB_PROGRESS_NAME: Final = "mxjob_controller_job_progress_percentage"

JobReader = Callable[[Iterable[Mapping[str, Any]]], JobGaugeValues]
"""Cached jobs → what the job gauges show of them (``controller.job.tally.job_gauges``)."""


class QueueState(Protocol):
    """What the metrics read from the work queue at scrape time."""

    def depth(self) -> int: ...

    def pending_timers(self) -> int: ...

    def processing_seconds(self) -> list[float]: ...


class JobGauges(Collector):
    """``mxjob_controller_jobs{job_namespace, state}`` and
    ``mxjob_controller_job_progress_percentage{job_namespace, job_name}``, read from the job
    cache at scrape time (no thread keeps them current, and a restarted controller has them
    right at once). Both families are described even without samples, so the standby's scrape
    names them too."""

    def __init__(self) -> None:
        self.jobs: Callable[[], Iterable[Mapping[str, Any]]] = list
        self.read: JobReader = lambda jobs: JobGaugeValues(by_state={}, progress={})
        self.leading = False

    def collect(self) -> Iterator[GaugeMetricFamily]:
        states = GaugeMetricFamily(
            JOB_STATES_NAME,
            "MXJobs in the leader's cache by namespace and state (status.state; New: no status "
            "yet). Reported by the leader only.",
            labels=["job_namespace", "state"],
        )
        progress = GaugeMetricFamily(
            JOB_PROGRESS_NAME,
            "status.trainerStatus.progressPercentage of each MXJob that reports it, until the "
            "job finishes (one series per such job, labelled by its name). Reported by the "
            "leader only.",
            labels=["job_namespace", "job_name"],
        )
        if self.leading:
            values = self.read(self.jobs())
            for (namespace, state), count in sorted(values.by_state.items()):
                states.add_metric([namespace, state], count)
            for (namespace, name), percentage in sorted(values.progress.items()):
                progress.add_metric([namespace, name], percentage)
        yield states
        yield progress


class Metrics:
    """Every metric the controller exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._add_job_counters()
        self._add_job_metrics()
        self._add_queue_metrics()
        self._add_reconcile_metrics()
        self.api_writes = Counter(
            "mxjob_controller_api_writes_total",
            "Writes the controller sent to the API server.",
            ["verb", "resource"],
            registry=self.registry,
        )
        self.events_dropped = Counter(
            "mxjob_controller_events_dropped_total",
            "Events not written: the queue was full or the API server refused the write.",
            ["reason"],
            registry=self.registry,
        )
        for reason in EVENT_DROP_REASONS:
            self.events_dropped.labels(reason=reason)
        self.progress = ProgressSeries()
        self.registry.register(self.progress)
        self.is_leader = Gauge(
            "mxjob_controller_is_leader",
            "1 while this process holds the leader Lease (or runs without election).",
            registry=self.registry,
        )

    def _add_job_counters(self) -> None:
        """training-operator's job counters, by ``job_namespace`` and ``framework``."""

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

    def _add_job_metrics(self) -> None:
        """Jobs by state, their start and end times, restarts by exit class, Kueue's wait."""
        self.job_gauges = JobGauges()
        self.registry.register(self.job_gauges)
        self.job_start_time = Histogram(
            "mxjob_controller_job_start_seconds",
            "Seconds from an MXJob's creation to its first Running condition.",
            JOB_LABELS, buckets=START_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.job_end_time = Histogram(
            "mxjob_controller_job_end_seconds",
            "Seconds from an MXJob's creation to its end, by state (Succeeded or Failed).",
            (*JOB_LABELS, "state"), buckets=END_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.job_restarts = Counter(
            "mxjob_controller_job_restarts_total",
            "Replica restarts of MXJobs by the exit-code class of the run that ended "
            "(Succeeded, Permanent, Retryable; Unknown when the pods cannot tell).",
            (*JOB_LABELS, "exit_class"), registry=self.registry,
        )  # fmt: skip
        self.progress_deadlines = Counter(
            "mxjob_controller_job_progress_deadline_exceeded",
            "MXJobs that reported no progress for their runPolicy.progressDeadlineSeconds, by "
            "what they became: Restarting (restarted as a whole) or Failed (backoffLimit spent).",
            (*JOB_LABELS, "state"), registry=self.registry,
        )  # fmt: skip
        self.admission_wait = Histogram(
            "mxjob_controller_job_admission_wait_seconds",
            "Seconds a queued MXJob's Workload waited for Kueue's admission (--kueue-workloads), "
            "from its creation or its last requeue.",
            JOB_LABELS, buckets=START_BUCKETS, registry=self.registry,
        )  # fmt: skip

    def _add_queue_metrics(self) -> None:
        """client-go's work queue metrics, plus the keys waiting for a timer."""
        self.queue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", ["name"], registry=self.registry
        )
        self.queue_adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"],
            registry=self.registry,
        )  # fmt: skip
        self.queue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"], buckets=QUEUE_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name"], buckets=QUEUE_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.queue_retries = Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"],
            registry=self.registry,
        )  # fmt: skip
        self.unfinished_work = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads.",
            ["name"], registry=self.registry,
        )  # fmt: skip
        self.longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            ["name"], registry=self.registry,
        )  # fmt: skip
        self.queue_timers = Gauge(
            "mxjob_controller_workqueue_timers",
            "MXJob keys waiting for a timer (deadline, TTL, retry backoff).",
            registry=self.registry,
        )

    def _add_reconcile_metrics(self) -> None:
        """controller-runtime's reconcile metrics, every series present from the start."""
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"], registry=self.registry,
        )  # fmt: skip
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"], registry=self.registry,
        )  # fmt: skip
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"], buckets=RECONCILE_BUCKETS, registry=self.registry,
        )  # fmt: skip
        for result in RESULTS:
            self.reconcile_total.labels(controller=NAME, result=result)
        self.reconcile_errors.labels(controller=NAME)

    def job_counter_inc(self, counter: Counter, namespace: str, amount: float = 1) -> None:
        counter.labels(job_namespace=namespace, framework=FRAMEWORK).inc(amount)

    def set_leading(self, leading: bool) -> None:
        """This process holds the Lease (or runs without election), or no longer does."""
        self.is_leader.set(1 if leading else 0)
        self.job_gauges.leading = leading

    def track_jobs(
        self, jobs: Callable[[], Iterable[Mapping[str, Any]]], *, read: JobReader
    ) -> None:
        """Read ``jobs()`` (the job cache) with ``read`` at each scrape, while leading.

        The reading is given, not imported: what a job's state and progress are belongs to the
        job room (``controller.job.tally.job_gauges``), which sits above this one.
        """
        self.job_gauges.jobs = jobs
        self.job_gauges.read = read

    def track_progress(self, counts: Callable[[], ProgressCounts]) -> None:
        """Export ``counts()`` (the progress endpoint's) at each scrape."""
        self.progress.counts = counts

    def count_api_write(self, verb: str, resource: str) -> None:
        """One write sent to the API server; the client calls it for every write
        (``controller.runtime.client.KubeClient.count_writes_with``)."""
        self.api_writes.labels(verb=verb, resource=resource).inc()

    def count_job(self, tally: JobTally) -> None:
        """Add what one reconcile's status write decided (``controller.job.tally.tally``)."""
        namespace = tally.namespace
        self.touch_namespace(namespace)
        if tally.created:
            self.job_counter_inc(self.jobs_created, namespace)
        if tally.ended == "Succeeded":
            self.job_counter_inc(self.jobs_successful, namespace)
        elif tally.ended == "Failed":
            self.job_counter_inc(self.jobs_failed, namespace)
        if tally.restarts:
            self.job_counter_inc(self.jobs_restarted, namespace, sum(tally.restarts.values()))
        for exit_class, count in tally.restarts.items():
            self.job_restarts.labels(job_namespace=namespace, exit_class=exit_class).inc(count)
        if tally.progress_deadline:
            self.progress_deadlines.labels(
                job_namespace=namespace, state=tally.progress_deadline
            ).inc()
        if tally.started_after is not None:
            self.job_start_time.labels(job_namespace=namespace).observe(tally.started_after)
        if tally.ended and tally.ended_after is not None:
            self.job_end_time.labels(job_namespace=namespace, state=tally.ended).observe(
                tally.ended_after
            )

    def touch_namespace(self, namespace: str) -> None:
        """The namespace's job series exist, at 0, before their first increment: Prometheus'
        ``increase()`` cannot see the step of a series whose first sample is already 1, so the
        first failure of a namespace would be missed (alerts on failing jobs read these), and a
        dashboard panel would show no data until the namespace's first deletion."""
        counters = (
            self.jobs_created,
            self.jobs_deleted,
            self.jobs_successful,
            self.jobs_failed,
            self.jobs_restarted,
        )
        for counter in counters:
            counter.labels(job_namespace=namespace, framework=FRAMEWORK)
        for exit_class in EXIT_CLASSES:
            self.job_restarts.labels(job_namespace=namespace, exit_class=exit_class)
        for state in DEADLINE_STATES:
            self.progress_deadlines.labels(job_namespace=namespace, state=state)
        # The histograms too: a rate() of buckets whose first sample already holds the first
        # observation is 0, and the dashboard's quantiles would have nothing to show.
        self.job_start_time.labels(job_namespace=namespace)
        self.admission_wait.labels(job_namespace=namespace)
        for state in ("Succeeded", "Failed"):
            self.job_end_time.labels(job_namespace=namespace, state=state)

    def job_admitted(self, namespace: str, waited: float | None) -> None:
        """Kueue admitted a queued job after ``waited`` seconds, and the job was started."""
        if waited is not None:
            self.admission_wait.labels(job_namespace=namespace).observe(waited)

    def track_queue(self, queue: QueueState) -> None:
        """Read the queue's gauges at scrape time (no thread has to keep them current)."""
        self.queue_depth.labels(name=NAME).set_function(lambda: float(queue.depth()))
        self.queue_timers.set_function(lambda: float(queue.pending_timers()))
        self.unfinished_work.labels(name=NAME).set_function(lambda: sum(queue.processing_seconds()))
        self.longest_running.labels(name=NAME).set_function(
            lambda: max(queue.processing_seconds(), default=0.0)
        )

    # -- controller.runtime.workqueue.QueueMetrics
    # ----------------------------------------------------
    def added(self) -> None:
        self.queue_adds.labels(name=NAME).inc()

    def started(self, waited: float) -> None:
        self.queue_latency.labels(name=NAME).observe(waited)

    def finished(self, worked: float) -> None:
        self.work_duration.labels(name=NAME).observe(worked)

    def retried(self) -> None:
        self.queue_retries.labels(name=NAME).inc()

    # -- reconciles -----------------------------------------------------------------------------
    def reconciled(self, *, result: str, seconds: float) -> None:
        """One reconcile ended with ``result`` (one of :data:`RESULTS`) after ``seconds``."""
        self.reconcile_total.labels(controller=NAME, result=result).inc()
        if result == "error":
            self.reconcile_errors.labels(controller=NAME).inc()
        self.reconcile_time.labels(controller=NAME).observe(seconds)

    def event_dropped(self, reason: str) -> None:
        """``controller.runtime.events.EventRecorder`` could not write an Event, for ``reason``."""
        self.events_dropped.labels(reason=reason).inc()

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)
