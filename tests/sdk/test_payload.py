"""mxjob_progress._payload: a report's fields as the status holds them, within the limits that
keep every body acceptable to the endpoint."""

from __future__ import annotations

import json
import math

import pytest
from mxjob_progress import _payload
from mxjob_progress._payload import (
    MAX_BODY,
    MAX_METRICS,
    MAX_NAME,
    MAX_SECONDS,
    MAX_VALUE,
    MetricTable,
    encode,
    fraction,
    metric_text,
    metric_texts,
    percentage,
    seconds,
)


@pytest.mark.parametrize(
    ("done", "expected"),
    [(0.0, 0), (0.29, 29), (0.57, 57), (0.999, 99), (1.0, 100), (1.5, 100), (-1.0, 0)],
)
def test_a_fraction_is_a_whole_percentage_rounded_down(done: float, expected: int) -> None:
    assert percentage(done) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.5, 0.5),
        (2, 1.0),
        (-0.1, 0.0),
        (math.nan, None),
        (math.inf, None),
        (True, None),
        ("0.5", None),
        (None, None),
    ],
)
def test_only_a_finite_number_is_a_progress(value: object, expected: float | None) -> None:
    assert fraction(value) == expected


def test_the_estimate_is_whole_seconds_within_the_fields_range() -> None:
    assert [seconds(79.6), seconds(-3.0), seconds(1e12)] == [80, 0, MAX_SECONDS]


class _NDArrayLike:
    def __init__(self, value: float) -> None:
        self.value = value

    def asscalar(self) -> float:
        return self.value


class _NumpyLike:
    def item(self) -> int:
        return 7


class _Unreadable:
    def asscalar(self) -> float:
        raise ValueError("not a scalar")

    def __str__(self) -> str:
        return "[1 2 3]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.23470000000000002, "0.2347"),
        (1e-05, "1e-05"),
        (123456789.0, "1.23457e+08"),
        (math.nan, "nan"),
        (3, "3"),
        (True, "true"),
        ("adam", "adam"),
        (b"sgd", "sgd"),
        (_NDArrayLike(0.125), "0.125"),
        (_NumpyLike(), "7"),
        (_Unreadable(), "[1 2 3]"),
    ],
)
def test_metric_values_are_compact_strings(value: object, text: str) -> None:
    assert metric_text(value) == text


def test_the_table_keeps_each_metrics_latest_value_in_first_reported_order() -> None:
    table = MetricTable()
    assert table.update(metric_texts({"loss": 0.9, "accuracy": 0.5})) == []
    assert table.update(metric_texts({"validation-accuracy": 0.4, "loss": 0.3})) == []
    assert table.values == {"loss": "0.3", "accuracy": "0.5", "validation-accuracy": "0.4"}


def test_the_table_drops_what_the_status_cannot_hold() -> None:
    table = MetricTable()
    dropped = table.update(
        [("", "1"), ("n" * (MAX_NAME + 1), "1"), ("long", "x" * (MAX_VALUE + 1))]
    )
    assert len(dropped) == 3
    assert table.update([("n" * MAX_NAME, "x" * MAX_VALUE), ("empty", "")]) == []
    table = MetricTable()
    assert table.update([(f"m{i}", "1") for i in range(MAX_METRICS + 2)]) == [
        f"'m{MAX_METRICS}' (more than {MAX_METRICS} metrics)",
        f"'m{MAX_METRICS + 1}' (more than {MAX_METRICS} metrics)",
    ]
    assert table.update([("m0", "2")]) == []  # a known metric still updates
    assert len(table.values) == MAX_METRICS


def test_a_body_leaves_out_what_is_unknown() -> None:
    assert encode(None, None, {}) == (b'{"trainerStatus":{}}', 0)
    body, left_out = encode(0.5, 12.4, {"loss": "0.1"})
    assert left_out == 0
    assert json.loads(body) == {
        "trainerStatus": {
            "progressPercentage": 50,
            "estimatedRemainingSeconds": 12,
            "metrics": [{"name": "loss", "value": "0.1"}],
        }
    }


def _widest_metrics() -> dict[str, str]:
    """As many metrics as a body may carry, each name and value as long as allowed, in a
    character of three bytes in UTF-8."""
    wide = "\u6f22"
    return {f"{i:03d}" + wide * (MAX_NAME - 3): wide * MAX_VALUE for i in range(MAX_METRICS)}


def test_the_largest_state_the_limits_allow_fits_in_a_body() -> None:
    body, left_out = encode(0.5, 12.0, _widest_metrics())
    assert left_out == 0
    assert len(body) <= MAX_BODY


def test_a_body_too_large_drops_metrics_from_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_payload, "MAX_BODY", MAX_BODY // 4)
    metrics = _widest_metrics()
    body, left_out = encode(0.5, None, metrics)
    assert 0 < left_out < MAX_METRICS
    assert len(body) <= MAX_BODY // 4
    kept = json.loads(body)["trainerStatus"]["metrics"]
    assert [entry["name"] for entry in kept] == list(metrics)[: MAX_METRICS - left_out]
