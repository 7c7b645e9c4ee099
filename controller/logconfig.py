"""Log lines of the controller: one JSON object per line, or ``time LEVEL logger: message``.

JSON for log collectors (every line is parseable, tracebacks included as a field), text for a
person at a terminal (``make dev-up`` writes it to ``.local/logs/``).
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any

from controller.settings import LogFormat


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "thread": record.threadName,
        }
        if record.exc_info:
            document["exception"] = self.formatException(record.exc_info)
        return json.dumps(document, default=str)


def configure(*, log_format: LogFormat, level: str) -> None:
    """Send every logger to stderr in ``log_format`` at ``level`` (urllib3 kept at WARNING)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s [%(threadName)s] %(levelname)s %(name)s: %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
