"""controller/progress/report.py: every refused body names its field and says what is wrong;
an accepted one becomes the whole ``trainerStatus``, stamped by the server."""

from __future__ import annotations

import datetime
import json

import pytest

from controller.progress.report import BodyError, Metric, TrainerReport, parse_report


def _body(status: object) -> bytes:
    return json.dumps({"trainerStatus": status}).encode()


def _metrics(*entries: object) -> bytes:
    return _body({"metrics": list(entries)})


REFUSED = [
    (b"", "body: empty: send a JSON object"),
    (b"{", "body: must be JSON: Expecting property name enclosed in double quotes at 1:2"),
    (b"\xff{}", "body: must be UTF-8 JSON: invalid start byte at byte 0"),
    (b'{"trainerStatus": {"progressPercentage": NaN}}', "body: NaN is not JSON"),
    (
        b'{"trainerStatus": {}, "trainerStatus": {}}',
        "body: field 'trainerStatus' appears twice in one object",
    ),
    (b"[]", "body: must be an object, got array"),
    (b'{"status": {}}', "status: unknown field (known: trainerStatus)"),
    (_body([]), "trainerStatus: must be an object, got array"),
    (
        _body({"progressPercent": 3}),
        "trainerStatus.progressPercent: unknown field (known: progressPercentage, "
        "estimatedRemainingSeconds, metrics)",
    ),
    (
        _body({"lastUpdatedTime": "2025-01-23T10:30:45Z"}),
        "trainerStatus.lastUpdatedTime: set by the server, leave it out",
    ),
    (
        _body({"progressPercentage": 120}),
        "trainerStatus.progressPercentage: must be an integer from 0 to 100, got 120",
    ),
    (
        _body({"progressPercentage": -1}),
        "trainerStatus.progressPercentage: must be an integer from 0 to 100, got -1",
    ),
    (
        _body({"progressPercentage": 4.5}),
        "trainerStatus.progressPercentage: must be an integer from 0 to 100, got 4.5",
    ),
    (
        _body({"progressPercentage": True}),
        "trainerStatus.progressPercentage: must be an integer from 0 to 100, got true",
    ),
    (
        _body({"progressPercentage": "45"}),
        'trainerStatus.progressPercentage: must be an integer from 0 to 100, got "45"',
    ),
    (
        _body({"estimatedRemainingSeconds": -5}),
        "trainerStatus.estimatedRemainingSeconds: must be an integer from 0 to 2147483647, got -5",
    ),
    (
        _body({"estimatedRemainingSeconds": 2**31}),
        "trainerStatus.estimatedRemainingSeconds: must be an integer from 0 to 2147483647, "
        "got 2147483648",
    ),
    (_body({"metrics": {"loss": "1"}}), "trainerStatus.metrics: must be an array, got object"),
    (
        _metrics(*({"name": f"m{i}", "value": "1"} for i in range(33))),
        "trainerStatus.metrics: must have at most 32 entries, got 33",
    ),
    (_metrics("loss=1"), "trainerStatus.metrics[0]: must be an object, got string"),
    (
        _metrics({"name": "loss", "value": "1", "unit": "nats"}),
        "trainerStatus.metrics[0].unit: unknown field (known: name, value)",
    ),
    (_metrics({"value": "1"}), "trainerStatus.metrics[0].name: required"),
    (
        _metrics({"name": "", "value": "1"}),
        "trainerStatus.metrics[0].name: must be a string of 1 to 63 characters, got 0 characters",
    ),
    (
        _metrics({"name": "n" * 64, "value": "1"}),
        "trainerStatus.metrics[0].name: must be a string of 1 to 63 characters, got 64 characters",
    ),
    (_metrics({"name": "loss"}), "trainerStatus.metrics[0].value: required"),
    (
        _metrics({"name": "loss", "value": 0.25}),
        "trainerStatus.metrics[0].value: must be a string of at most 256 characters, "
        "got number 0.25",
    ),
    (
        _metrics({"name": "loss", "value": "v" * 257}),
        "trainerStatus.metrics[0].value: must be a string of at most 256 characters, "
        "got 257 characters",
    ),
    (
        _metrics(
            {"name": "loss", "value": "1"},
            {"name": "acc", "value": "1"},
            {"name": "loss", "value": "2"},
        ),
        'trainerStatus.metrics[2].name: "loss" repeats trainerStatus.metrics[0].name',
    ),
]


@pytest.mark.parametrize(
    ("body", "message"),
    REFUSED,
    ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in enumerate(REFUSED)],
)
def test_a_refused_body_names_its_field_and_what_is_wrong(body: bytes, message: str) -> None:
    assert parse_report(body) == BodyError(message)


def test_deep_nesting_is_refused_not_raised() -> None:
    refused = parse_report(b"[" * 100_000)
    assert isinstance(refused, BodyError) and refused.message.startswith("body: must be JSON")


def test_every_field_is_optional_and_null_counts_as_absent() -> None:
    assert parse_report(b"{}") == TrainerReport()
    assert parse_report(b'{"trainerStatus": null}') == TrainerReport()
    nulls = {"progressPercentage": None, "estimatedRemainingSeconds": None, "metrics": None}
    assert parse_report(_body(nulls)) == TrainerReport()


def test_the_limits_themselves_are_accepted() -> None:
    metrics = [{"name": "n" * 63, "value": "v" * 256}] + [
        {"name": f"m{i}", "value": ""} for i in range(31)
    ]
    status = {"progressPercentage": 100, "estimatedRemainingSeconds": 2**31 - 1, "metrics": metrics}
    parsed = parse_report(_body(status))
    assert isinstance(parsed, TrainerReport)
    assert parsed.progress_percentage == 100 and len(parsed.metrics) == 32
    assert parsed.metrics[0] == Metric("n" * 63, "v" * 256)


def test_the_written_status_is_the_whole_report_absent_fields_null_and_stamped() -> None:
    report = TrainerReport(progress_percentage=45, metrics=(Metric("loss", "0.2347"),))
    observed = datetime.datetime(2025, 1, 23, 10, 30, 45, 900_000, tzinfo=datetime.UTC)
    assert report.trainer_status(observed=observed) == {
        "progressPercentage": 45,
        "estimatedRemainingSeconds": None,
        "metrics": [{"name": "loss", "value": "0.2347"}],
        "lastUpdatedTime": "2025-01-23T10:30:45Z",
    }
    assert TrainerReport().trainer_status(observed=observed)["metrics"] is None
