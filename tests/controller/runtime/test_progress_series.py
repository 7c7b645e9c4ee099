"""controller/runtime/progress_series.py: the progress endpoint's counts, exported at scrape time
through the registry of controller/runtime/metrics.py, none while the endpoint is off."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from controller.progress.counters import ProgressCounters
from controller.runtime.metrics import Metrics

SERIES = (
    "mxjob_controller_progress_reports_total",
    "mxjob_controller_progress_writes_total",
    "mxjob_controller_progress_write_failures_total",
    "mxjob_controller_progress_reports_coalesced_total",
    "mxjob_controller_progress_reports_dropped_total",
)


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.exposition().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("mxjob_controller_progress_")
    }


def test_without_an_endpoint_the_series_are_described_but_have_no_samples() -> None:
    metrics = Metrics()
    text = metrics.exposition().decode()
    for name in SERIES:
        assert f"# TYPE {name} counter" in text
    assert _samples(metrics) == {}


def test_the_counts_are_read_when_scraped_answers_by_status_code() -> None:
    metrics = Metrics()
    counters = ProgressCounters()
    metrics.track_progress(counters.snapshot)
    for status in (202, 202, 403, 400, 403):
        counters.answered(status)
    counters.add("writes", 2)
    counters.add("coalesced")
    assert _samples(metrics) == {
        ("mxjob_controller_progress_reports_total", (("code", "202"),)): 2,
        ("mxjob_controller_progress_reports_total", (("code", "400"),)): 1,
        ("mxjob_controller_progress_reports_total", (("code", "403"),)): 2,
        ("mxjob_controller_progress_writes_total", ()): 2,
        ("mxjob_controller_progress_write_failures_total", ()): 0,
        ("mxjob_controller_progress_reports_coalesced_total", ()): 1,
        ("mxjob_controller_progress_reports_dropped_total", ()): 0,
    }
