"""A report's body → the report, or a message naming the one field that is wrong (pure).

The body is ``{"trainerStatus": {"progressPercentage": 0..100, "estimatedRemainingSeconds":
>= 0, "metrics": [{"name": ..., "value": ...}]}}``, every field optional. It is checked here, in
full, before anything is written: a value the status schema would refuse would otherwise fail
the API write seconds later, in the background, where no one hears of it. Unknown fields are
refused rather than dropped, so a typo (``progressPercent``) is a 400 the pod's log shows, not a
field that silently never appears. JSON ``null`` counts as absent, as it does for the API's
optional fields.

A report is the reporter's whole current state, so :meth:`TrainerReport.trainer_status` names
every field, absent ones as ``null``: in a merge patch that removes them, and the written status
equals the latest report instead of a blend of old and new ones.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.apitime import format_time

MAX_PERCENTAGE: Final = 100
MAX_SECONDS: Final = 2**31 - 1
"""``estimatedRemainingSeconds`` is a 32-bit integer in the status, as in Kubeflow Trainer."""
MAX_METRICS: Final = 32
MAX_NAME: Final = 63
MAX_VALUE: Final = 256
SERVER_SET: Final = "lastUpdatedTime"
"""Stamped by the controller when it accepts a report; a client cannot send it."""
STATUS_FIELDS: Final = ("progressPercentage", "estimatedRemainingSeconds", "metrics")
METRIC_FIELDS: Final = ("name", "value")
SHOWN: Final = 40
"""Characters of a refused value quoted back in a message."""


@dataclass(frozen=True)
class Metric:
    name: str
    value: str


@dataclass(frozen=True, kw_only=True)
class TrainerReport:
    """One accepted report; ``None`` or empty where the reporter said nothing."""

    progress_percentage: int | None = None
    estimated_remaining_seconds: int | None = None
    metrics: tuple[Metric, ...] = ()

    def trainer_status(self, *, observed: datetime.datetime) -> dict[str, Any]:
        """``status.trainerStatus`` as written, absent fields ``None`` (see the module)."""
        metrics = [{"name": m.name, "value": m.value} for m in self.metrics]
        return {
            "progressPercentage": self.progress_percentage,
            "estimatedRemainingSeconds": self.estimated_remaining_seconds,
            "metrics": metrics or None,
            SERVER_SET: format_time(observed),
        }


@dataclass(frozen=True)
class BodyError:
    """Why a body was refused: ``<field path>: <what is wrong>``."""

    message: str


class _RefusedError(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


def json_type(value: object) -> str:
    """JSON's name of a decoded value's type, as a client thinks of it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def shown(value: object) -> str:
    """A refused value as JSON, cut to :data:`SHOWN` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}…"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _RefusedError("body", f"field {key!r} appears twice in one object")
        seen[key] = value
    return seen


def _no_constant(name: str) -> Any:
    raise _RefusedError("body", f"{name} is not JSON")


def _decode(body: bytes) -> Any:
    if not body.strip():
        raise _RefusedError("body", "empty: send a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = f"must be UTF-8 JSON: {error.reason} at byte {error.start}"
        raise _RefusedError("body", problem) from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        problem = f"must be JSON: {error.msg} at {error.lineno}:{error.colno}"
        raise _RefusedError("body", problem) from None
    except (RecursionError, ValueError) as error:
        raise _RefusedError("body", f"must be JSON: {error}") from None


def _object(value: object, field: str, known: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _RefusedError(field, f"must be an object, got {json_type(value)}")
    for key in value:
        if key == SERVER_SET and field == "trainerStatus":
            raise _RefusedError(f"{field}.{key}", "set by the server, leave it out")
        if key not in known:
            where = f"{field}.{key}" if field != "body" else key
            raise _RefusedError(where, f"unknown field (known: {', '.join(known)})")
    return value


def _integer(value: object, field: str, *, high: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise _RefusedError(field, f"must be an integer from 0 to {high}, got {shown(value)}")
    return value


def _text(value: object, field: str, *, low: int, high: int) -> str:
    if value is None:
        raise _RefusedError(field, "required")
    if not isinstance(value, str) or not low <= len(value) <= high:
        size = f"{low} to {high}" if low else f"at most {high}"
        got = (
            f"{len(value)} characters"
            if isinstance(value, str)
            else f"{json_type(value)} {shown(value)}"
        )
        raise _RefusedError(field, f"must be a string of {size} characters, got {got}")
    return value


def _metrics(value: object, field: str) -> tuple[Metric, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _RefusedError(field, f"must be an array, got {json_type(value)}")
    if len(value) > MAX_METRICS:
        raise _RefusedError(field, f"must have at most {MAX_METRICS} entries, got {len(value)}")
    metrics: list[Metric] = []
    first: dict[str, int] = {}
    for index, entry in enumerate(value):
        where = f"{field}[{index}]"
        fields = _object(entry, where, METRIC_FIELDS)
        name = _text(fields.get("name"), f"{where}.name", low=1, high=MAX_NAME)
        if name in first:
            repeated = f"{shown(name)} repeats {field}[{first[name]}].name"
            raise _RefusedError(f"{where}.name", repeated)
        first[name] = index
        value = _text(fields.get("value"), f"{where}.value", low=0, high=MAX_VALUE)
        metrics.append(Metric(name, value))
    return tuple(metrics)


def _report(document: object) -> TrainerReport:
    top = _object(document, "body", ("trainerStatus",))
    status = top.get("trainerStatus")
    if status is None:
        return TrainerReport()
    fields = _object(status, "trainerStatus", STATUS_FIELDS)
    return TrainerReport(
        progress_percentage=_integer(
            fields.get("progressPercentage"),
            "trainerStatus.progressPercentage",
            high=MAX_PERCENTAGE,
        ),
        estimated_remaining_seconds=_integer(
            fields.get("estimatedRemainingSeconds"),
            "trainerStatus.estimatedRemainingSeconds",
            high=MAX_SECONDS,
        ),
        metrics=_metrics(fields.get("metrics"), "trainerStatus.metrics"),
    )


def parse_report(body: bytes) -> TrainerReport | BodyError:
    """The report ``body`` carries, or why it is refused (the first problem found)."""
    try:
        return _report(_decode(body))
    except _RefusedError as refused:
        return BodyError(str(refused))
