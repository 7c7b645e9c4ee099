"""Log formats of the webhook process (JSON or text) as one ``logging.config`` dictionary.

gunicorn applies the dictionary (its ``logconfig_dict`` setting) in the arbiter and in every
worker, so gunicorn's own lines and the webhook's share one format. Review lines carry their
fields in ``record.fields``; the JSON format emits them as keys, the text format as ``k=v``.

What is logged at INFO is decided by the callers (``webhook.app``): metadata only, never object
contents.
"""

from __future__ import annotations

import datetime
import json
import logging
from typing import Any, Final

from webhook.settings import LogFormat

FIELDS_ATTR: Final = "fields"
"""Name of the ``extra`` attribute that carries structured fields of a log line."""


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields attached to a record with ``extra={"fields": {...}}``."""
    value = getattr(record, FIELDS_ATTR, None)
    return dict(value) if isinstance(value, dict) else {}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the fields, and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        document.update(fields_of(record))
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            document["stack"] = self.formatStack(record.stack_info)
        return json.dumps(document, default=str)


class TextFormatter(logging.Formatter):
    """``time [pid] LEVEL logger: message k=v ...`` for people at a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = fields_of(record)
        if not extra:
            return line
        head, sep, tail = line.partition("\n")  # keep a traceback below the fields
        pairs = " ".join(f"{key}={_text_value(value)}" for key, value in extra.items())
        return f"{head} {pairs}{sep}{tail}"


def _text_value(value: object) -> str:
    text = str(value)
    return json.dumps(text) if (not text or any(c.isspace() or c == '"' for c in text)) else text


def formatter_for(log_format: LogFormat) -> logging.Formatter:
    """The formatter of one log format."""
    return JsonFormatter() if log_format == "json" else TextFormatter()


def logging_dict(*, log_format: LogFormat, level: str) -> dict[str, Any]:
    """A ``dictConfig`` dictionary: everything to stderr in ``log_format`` at ``level``.

    Covers the root logger, gunicorn's error and access loggers and the webhook's, so nothing
    keeps gunicorn's default format. stderr because that is what container runtimes collect and
    what stays unbuffered.
    """
    factory = f"{__name__}.{'JsonFormatter' if log_format == 'json' else 'TextFormatter'}"
    upper = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"webhook": {"()": factory}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "webhook",
                "stream": "ext://sys.stderr",
            },
            # gunicorn's defaults name these two; redefine them so they format like the rest.
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "webhook",
                "stream": "ext://sys.stderr",
            },
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": "webhook",
                "stream": "ext://sys.stderr",
            },
        },
        "root": {"level": upper, "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": upper, "handlers": [], "propagate": True},
            # With a logging dictionary gunicorn writes access lines whatever ``accesslog``
            # says; the app's one line per review (with uid and result) replaces them.
            "gunicorn.access": {"level": "WARNING", "handlers": [], "propagate": True},
            "webhook": {"level": upper, "handlers": [], "propagate": True},
        },
    }
