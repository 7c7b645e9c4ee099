"""controller/runtime/metrics.py: the job metrics land in the registry with their labels only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from controller.runtime.job_series import JobGaugeValues, JobTally
from controller.runtime.metrics import JOB_PROGRESS_NAME, JOB_STATES_NAME, Metrics
from tests.controller.samples import job


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.exposition().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return _samples(metrics).get((name, tuple(sorted(labels.items()))))


def _by_state(jobs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """A stand-in for ``controller.job.tally.jobs_by_state``: ``status.state``, New without."""
    counts = {("ns", "Failed"): 0}
    for found in jobs:
        key = (found["metadata"]["namespace"], found.get("status", {}).get("state", "New"))
        counts[key] = counts.get(key, 0) + 1
    return counts


def _progress(jobs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """A stand-in for ``controller.job.tally.jobs_progress``: each ``progressPercentage``."""
    found = {}
    for cached in jobs:
        percentage = cached.get("status", {}).get("trainerStatus", {}).get("progressPercentage")
        if percentage is not None:
            found[(cached["metadata"]["namespace"], cached["metadata"]["name"])] = percentage
    return found


def _read(jobs: Iterable[Mapping[str, Any]]) -> JobGaugeValues:
    """A stand-in for ``controller.job.tally.job_gauges``."""
    cached = list(jobs)
    return JobGaugeValues(by_state=_by_state(cached), progress=_progress(cached))


def test_jobs_by_state_are_reported_by_the_leader_only() -> None:
    metrics = Metrics()
    running = job(status={"state": "Running"})
    metrics.track_jobs(lambda: [running, job(name="other")], read=_read)
    assert not [key for key in _samples(metrics) if key[0] == JOB_STATES_NAME]
    metrics.set_leading(True)
    assert _value(metrics, JOB_STATES_NAME, job_namespace="ns", state="Running") == 1
    assert _value(metrics, JOB_STATES_NAME, job_namespace="ns", state="New") == 1
    assert _value(metrics, JOB_STATES_NAME, job_namespace="ns", state="Failed") == 0
    assert _value(metrics, "mxjob_controller_is_leader") == 1
    metrics.set_leading(False)
    assert not [key for key in _samples(metrics) if key[0] == JOB_STATES_NAME]
    assert _value(metrics, "mxjob_controller_is_leader") == 0


def test_a_tally_counts_training_operators_counters_and_the_job_metrics() -> None:
    metrics = Metrics()
    metrics.count_job(JobTally(namespace="ns", created=True, started_after=12.0))
    metrics.count_job(
        JobTally(namespace="ns", ended="Failed", ended_after=600.0,
                 restarts={"Retryable": 2, "Permanent": 1})
    )  # fmt: skip
    ns = {"job_namespace": "ns"}
    assert _value(metrics, "training_operator_jobs_created_total", **ns, framework="mxnet") == 1
    assert _value(metrics, "training_operator_jobs_failed_total", **ns, framework="mxnet") == 1
    assert _value(metrics, "training_operator_jobs_restarted_total", **ns, framework="mxnet") == 3
    restarts = "mxjob_controller_job_restarts_total"
    assert _value(metrics, restarts, **ns, exit_class="Retryable") == 2
    assert _value(metrics, restarts, **ns, exit_class="Permanent") == 1
    assert _value(metrics, "mxjob_controller_job_start_seconds_count", **ns) == 1
    assert _value(metrics, "mxjob_controller_job_start_seconds_sum", **ns) == 12
    end = "mxjob_controller_job_end_seconds_bucket"
    assert _value(metrics, end, **ns, state="Failed", le="300.0") == 0
    assert _value(metrics, end, **ns, state="Failed", le="600.0") == 1


def test_an_admission_is_observed_when_its_wait_is_known() -> None:
    metrics = Metrics()
    metrics.job_admitted("ns", None)
    metrics.job_admitted("ns", 7.0)
    name = "mxjob_controller_job_admission_wait_seconds_count"
    assert _value(metrics, name, job_namespace="ns") == 1


def test_only_the_progress_gauge_labels_a_series_by_a_jobs_name() -> None:
    metrics = Metrics()
    metrics.set_leading(True)
    reporting = job(name="reporting", status={"trainerStatus": {"progressPercentage": 5}})
    metrics.track_jobs(lambda: [job(), reporting], read=_read)
    tallied = JobTally(namespace="ns", created=True, started_after=1.0, ended="Succeeded",
                       ended_after=2.0, restarts={"Unknown": 1},
                       progress_deadline="Restarting")  # fmt: skip
    metrics.count_job(tallied)
    metrics.job_admitted("ns", 1.0)
    samples = _samples(metrics)
    labels = {label for (_, pairs) in samples for label, _ in pairs}
    assert labels <= {"job_namespace", "job_name", "framework", "state", "exit_class", "le",
                      "name", "controller", "result", "reason", "verb", "resource"}  # fmt: skip
    # The progress gauge alone names jobs (one series per unfinished job that reports).
    named = {name for (name, pairs) in samples if "job_name" in dict(pairs)}
    assert named == {JOB_PROGRESS_NAME}


def test_a_namespaces_outcome_counters_start_at_zero_with_its_first_counted_job() -> None:
    """``increase()`` misses the first step of a series that appears at 1."""
    metrics = Metrics()
    assert _value(metrics, "training_operator_jobs_failed_total", job_namespace="ns",
                  framework="mxnet") is None  # fmt: skip
    metrics.count_job(JobTally(namespace="ns", created=True))
    ns = {"job_namespace": "ns", "framework": "mxnet"}
    assert _value(metrics, "training_operator_jobs_failed_total", **ns) == 0
    assert _value(metrics, "training_operator_jobs_successful_total", **ns) == 0
    restarts = "mxjob_controller_job_restarts_total"
    assert _value(metrics, restarts, job_namespace="ns", exit_class="Permanent") == 0


def test_the_progress_of_reporting_jobs_is_a_gauge_per_job_from_the_leader_only() -> None:
    metrics = Metrics()
    reporting = job(name="train", status={"trainerStatus": {"progressPercentage": 40}})
    jobs = [reporting, job(name="silent")]
    metrics.track_jobs(lambda: jobs, read=_read)
    assert not [key for key in _samples(metrics) if key[0] == JOB_PROGRESS_NAME]
    metrics.set_leading(True)
    assert _value(metrics, JOB_PROGRESS_NAME, job_namespace="ns", job_name="train") == 40
    assert [key for key in _samples(metrics) if key[0] == JOB_PROGRESS_NAME] == [
        (JOB_PROGRESS_NAME, (("job_name", "train"), ("job_namespace", "ns")))
    ]
    # Read at each scrape: a report moves it, and a job gone from the cache leaves no series.
    reporting["status"]["trainerStatus"]["progressPercentage"] = 75
    assert _value(metrics, JOB_PROGRESS_NAME, job_namespace="ns", job_name="train") == 75
    jobs.remove(reporting)
    assert not [key for key in _samples(metrics) if key[0] == JOB_PROGRESS_NAME]


def test_an_exceeded_progress_deadline_is_counted_by_what_the_job_became() -> None:
    metrics = Metrics()
    name = "mxjob_controller_job_progress_deadline_exceeded_total"
    metrics.count_job(JobTally(namespace="ns", created=True))
    # Present at 0 from the namespace's first counted job: increase() sees the first one.
    assert _value(metrics, name, job_namespace="ns", state="Restarting") == 0
    assert _value(metrics, name, job_namespace="ns", state="Failed") == 0
    metrics.count_job(JobTally(namespace="ns", progress_deadline="Restarting"))
    metrics.count_job(JobTally(namespace="ns", progress_deadline="Restarting"))
    metrics.count_job(JobTally(namespace="ns", progress_deadline="Failed", ended="Failed"))
    assert _value(metrics, name, job_namespace="ns", state="Restarting") == 2
    assert _value(metrics, name, job_namespace="ns", state="Failed") == 1


def test_an_api_write_is_counted_by_verb_and_resource() -> None:
    metrics = Metrics()
    metrics.count_api_write("update", "mxjobs/status")
    metrics.count_api_write("update", "mxjobs/status")
    name = "mxjob_controller_api_writes_total"
    assert _value(metrics, name, verb="update", resource="mxjobs/status") == 2
