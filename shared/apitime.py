"""The Kubernetes API's times (``metav1.Time``, ``MicroTime``) as Python datetimes (pure).

One place for the format, so that the status written, the conditions compared and the timers
armed all read a time the same way.
"""

from __future__ import annotations

import datetime


def format_time(moment: datetime.datetime) -> str:
    """RFC 3339 in UTC with seconds, the format of the API's ``Time``."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime.datetime) -> str:
    """RFC 3339 in UTC with six fraction digits, the format of the API's ``MicroTime`` (a
    Lease's ``acquireTime`` and ``renewTime``), as apimachinery's ``RFC3339Micro`` writes it."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: object) -> datetime.datetime | None:
    """An API ``Time`` (or ``MicroTime``) as an aware datetime; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)
