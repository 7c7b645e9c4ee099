"""The demos' progress line from ``status.trainerStatus``."""

from __future__ import annotations

from localkube.scenarios.trainer_line import remaining, trainer_line


def test_no_trainer_status_shows_nothing() -> None:
    assert trainer_line({}) == ""
    assert trainer_line({"trainerStatus": None}) == ""


def test_the_line_shows_percentage_eta_epoch_and_the_first_metrics_in_reported_order() -> None:
    status = {
        "trainerStatus": {
            "progressPercentage": 42,
            "estimatedRemainingSeconds": 65,
            "metrics": [
                {"name": "currentEpoch", "value": "3"},
                {"name": "totalEpochs", "value": "5"},
                {"name": "loss", "value": "0.2341"},
                {"name": "accuracy", "value": "0.913"},
                {"name": "lr", "value": "0.1"},
                {"name": "fourth", "value": "left out"},
            ],
            "lastUpdatedTime": "2026-12-02T06:00:00Z",
        }
    }
    assert trainer_line(status) == "42% ETA 1m05s epoch 3/5 loss=0.2341 accuracy=0.913 lr=0.1"


def test_a_heartbeat_or_a_partial_report_shows_what_it_has() -> None:
    assert trainer_line({"trainerStatus": {}}) == ""
    assert trainer_line({"trainerStatus": {"progressPercentage": 100}}) == "100%"
    tuning = {"trainerStatus": {"metrics": [{"name": "trials", "value": "12"}]}}
    assert trainer_line(tuning) == "trials=12"


def test_remaining_time_is_short() -> None:
    assert [remaining(s) for s in (0, 59, 60, 185, 3599, 3600, 7620)] == [
        "0s", "59s", "1m00s", "3m05s", "59m59s", "1h00m", "2h07m",
    ]  # fmt: skip
