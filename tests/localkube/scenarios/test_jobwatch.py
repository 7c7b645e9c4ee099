"""The demos' watch of a job: once the job Succeeded, its final progress report, which the
controller may write a few seconds later, is still shown."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any, cast

import pytest

from localkube.base.api import Api
from localkube.scenarios import jobwatch
from localkube.scenarios.jobwatch import Progress, awaits_final_report, watch_job


def _status(state: str, percentage: int | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"state": state}
    if percentage is not None:
        status["trainerStatus"] = {
            "progressPercentage": percentage,
            "metrics": [{"name": "currentEpoch", "value": str(percentage // 20)}],
        }
    return status


class Statuses:
    """An API server whose job shows the given statuses, one per read, the last one forever."""

    def __init__(self, *statuses: dict[str, Any]) -> None:
        self.statuses = list(statuses)
        self.reads = 0

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        if "/pods" in path:
            return {"items": []}
        self.reads += 1
        return {"status": self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]}


class NoLines:
    def new_lines(self) -> Iterator[tuple[str, str]]:
        return iter(())


def _watch(api: Statuses) -> tuple[dict[str, Any], str]:
    out = io.StringIO()
    status = watch_job(
        cast(Api, api), "ns", "job", lines=NoLines(), progress=Progress(out), timeout=30
    )
    return status, out.getvalue()


@pytest.mark.parametrize(
    ("status", "awaited"),
    [
        (_status("Succeeded", 80), True),
        (_status("Succeeded", 100), False),
        (_status("Succeeded"), False),  # no reporter: nothing to wait for
        (_status("Failed", 80), False),
        ({"state": "Succeeded", "trainerStatus": {"metrics": []}}, True),
    ],
)
def test_only_a_job_that_succeeded_below_100_awaits_its_final_report(
    status: dict[str, Any], awaited: bool
) -> None:
    assert awaits_final_report(status) is awaited


def test_the_final_report_written_after_the_job_succeeded_is_shown() -> None:
    api = Statuses(_status("Running", 20), _status("Succeeded", 20), _status("Succeeded", 100))
    status, shown = _watch(api)
    assert status["trainerStatus"]["progressPercentage"] == 100
    lines = [line.split("] ", 1)[1] for line in shown.splitlines()]
    assert lines == [
        "MXJob Running   | no pods yet",
        "progress  | 20% epoch 1",
        "MXJob Succeeded | no pods yet",
        "progress  | 100% epoch 5",
    ]


def test_a_final_report_that_never_comes_is_waited_for_a_few_seconds_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jobwatch, "FINAL_REPORT_WAIT", 0.3)
    api = Statuses(_status("Succeeded", 40))
    status, shown = _watch(api)
    assert status == _status("Succeeded", 40)
    assert api.reads > 1
    assert "gave up" not in shown


def test_a_failed_job_ends_the_watch_at_once() -> None:
    api = Statuses(_status("Failed", 40))
    assert _watch(api)[0]["state"] == "Failed"
    assert api.reads == 1
