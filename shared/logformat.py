"""Log line formats both processes share: one JSON object per line, or text for a terminal.

Formatting only (a ``logging.Formatter`` turns a record into a string); where the lines go is
configured by each process (``webhook.logconfig``, ``controller.runtime.logconfig``). Structured
fields ride on ``extra={"fields": {...}}``: JSON emits them as keys, text as ``k=v`` pairs.
"""

from __future__ import annotations

import datetime
import json
import logging
from typing import Any, Final

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
            "thread": record.threadName,
        }
        document.update(fields_of(record))
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            document["stack"] = self.formatStack(record.stack_info)
        return json.dumps(document, default=str)


class TextFormatter(logging.Formatter):
    """``time [pid:thread] LEVEL logger: message k=v ...`` for people at a terminal."""

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s [%(process)d:%(threadName)s] %(levelname)s %(name)s: %(message)s"
        )

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
