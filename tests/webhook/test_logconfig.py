"""Log formats: JSON lines with the review fields as keys, or text with k=v pairs."""

from __future__ import annotations

import json
import logging
import sys

from webhook.logconfig import JsonFormatter, TextFormatter, logging_dict


def _record(message: str, *, fields: dict[str, object] | None = None) -> logging.LogRecord:
    record = logging.LogRecord("webhook.review", logging.INFO, __file__, 1, message, (), None)
    if fields is not None:
        record.fields = fields
    return record


def test_json_lines_carry_fields_as_keys() -> None:
    line = JsonFormatter().format(
        _record("review answered", fields={"uid": "u1", "result": "denied", "duration_ms": 0.4})
    )
    document = json.loads(line)
    assert document["message"] == "review answered"
    assert document["level"] == "info"
    assert document["logger"] == "webhook.review"
    assert (document["uid"], document["result"], document["duration_ms"]) == ("u1", "denied", 0.4)


def test_json_lines_keep_the_traceback() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord(
            "webhook.review", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    document = json.loads(JsonFormatter().format(record))
    assert "RuntimeError: boom" in document["exception"]


def test_text_lines_append_fields_as_pairs() -> None:
    line = TextFormatter().format(
        _record("review answered", fields={"uid": "u1", "name": "", "kind": "a b"})
    )
    assert line.endswith('review answered uid=u1 name="" kind="a b"')


def test_one_format_for_every_logger() -> None:
    config = logging_dict(log_format="json", level="debug")
    assert config["formatters"]["webhook"]["()"] == "webhook.logconfig.JsonFormatter"
    assert config["root"]["level"] == "DEBUG"
    # gunicorn's default handler names are redefined, so its lines use this format too.
    for handler in ("console", "error_console", "stderr"):
        assert config["handlers"][handler]["formatter"] == "webhook"
    assert set(config["loggers"]) == {"gunicorn.error", "gunicorn.access", "webhook"}
    # gunicorn's access lines (INFO) are replaced by the app's review lines.
    assert config["loggers"]["gunicorn.access"]["level"] == "WARNING"
    text = logging_dict(log_format="text", level="info")
    assert text["formatters"]["webhook"]["()"] == "webhook.logconfig.TextFormatter"
