"""Log formats of the webhook process (JSON or text) as one ``logging.config`` dictionary.

gunicorn applies the dictionary (its ``logconfig_dict`` setting) in the arbiter and in every
worker, so gunicorn's own lines and the webhook's share one format. Review lines carry their
fields in ``record.fields``; the JSON format emits them as keys, the text format as ``k=v``.

What is logged at INFO is decided by the callers (``webhook.app``): metadata only, never object
contents.
"""

from __future__ import annotations

from typing import Any

from shared.logformat import JsonFormatter, TextFormatter, fields_of
from webhook.settings import LogFormat

__all__ = [
    "JsonFormatter",
    "TextFormatter",
    "fields_of",
    "logging_dict",
]


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
