"""The reporter's limits are the endpoint's: a body the SDK shapes within its limits is never
refused for its size, and the SDK never drops what the server would have taken. Its env names
are the ones the webhook writes (shared/progress.py).

mxjob_progress is the standard library only and ships apart from the operator, so it cannot
import the server's numbers (controller/progress/report.py, controller/progress/settings.py);
this test imports both and holds them equal instead.
"""

from __future__ import annotations

import mxjob_progress
from mxjob_progress import _payload

from controller.progress import report
from controller.progress.settings import ProgressSettings
from shared import progress


def test_the_metric_limits_are_the_servers() -> None:
    assert _payload.MAX_METRICS == report.MAX_METRICS
    assert _payload.MAX_NAME == report.MAX_NAME
    assert _payload.MAX_VALUE == report.MAX_VALUE
    assert _payload.MAX_SECONDS == report.MAX_SECONDS


def test_the_body_limit_is_the_servers_default() -> None:
    assert ProgressSettings().max_body_bytes == _payload.MAX_BODY


def test_a_body_the_sdk_shapes_at_its_limits_is_accepted_by_the_server() -> None:
    wide = "\u6f22"  # three bytes in UTF-8
    metrics = {
        f"{i:02d}" + wide * (_payload.MAX_NAME - 2): wide * _payload.MAX_VALUE
        for i in range(_payload.MAX_METRICS)
    }
    metrics["00" + wide * (_payload.MAX_NAME - 2)] = ""  # an empty value is a value
    body, left_out = _payload.encode(1.0, float(_payload.MAX_SECONDS), metrics)
    assert left_out == 0
    parsed = report.parse_report(body)
    assert isinstance(parsed, report.TrainerReport), parsed
    assert len(parsed.metrics) == _payload.MAX_METRICS


def test_the_env_the_sdk_reads_is_the_env_the_webhook_writes() -> None:
    sdk = (mxjob_progress.ENV_URL, mxjob_progress.ENV_CA_CERT, mxjob_progress.ENV_TOKEN)
    assert sdk == progress.ENV_NAMES
