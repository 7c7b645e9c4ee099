"""Log lines of the controller: one JSON object per line, or ``time LEVEL logger: message``.

JSON for log collectors (every line is parseable, tracebacks included as a field), text for a
person at a terminal (``make dev-up`` writes it to ``.local/logs/``).
"""

from __future__ import annotations

import logging
import sys

from controller.runtime.settings import LogFormat
from shared.logformat import JsonFormatter, TextFormatter


def configure(*, log_format: LogFormat, level: str) -> None:
    """Send every logger to stderr in ``log_format`` at ``level`` (urllib3 kept at WARNING)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)
