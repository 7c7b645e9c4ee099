"""The figures file of ``make bench-recovery``: what each real-node recovery case measured.

The real-node tests record their figures (tests/helpers/figures.py) and the bench-only
side-by-side runs record training-operator v1.8.1's; this is the file between them and
:mod:`bench.recovery`, which renders docs/explanation/recovery.md's tables from it.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

Value = int | float | str | bool | None

OURS: Final = "mxjob-operator"
THEIRS: Final = "training-operator v1.8.1"


@dataclass(frozen=True)
class Figure:
    """One measured case: the row ``case`` of ``table``, as run under ``operator``."""

    table: str
    case: str
    operator: str
    values: Mapping[str, Value]
    test: str = ""
    """The node id of the test that measured it: where to look when a figure surprises."""


def checked(case: str, values: Mapping[str, object]) -> dict[str, Value]:
    """``values`` when JSON holds each faithfully; a ValueError naming the first that it cannot."""
    found: dict[str, Value] = {}
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"figure {key} of {case!r} is {value}: not a number to report")
        if not (value is None or isinstance(value, int | float | str | bool)):
            raise ValueError(f"figure {key} of {case!r} is a {type(value).__name__}")
        found[key] = value
    return found


def write(path: Path, figures: list[Figure]) -> None:
    """Writes every record whole or not at all: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    data = [asdict(figure) for figure in figures]
    partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)


def add(path: Path, figures: list[Figure]) -> None:
    """Writes ``figures`` beside the records ``path`` holds already, under a lock: make test's
    two pytest processes (the real-node tests, the tests beside them) may both have measured,
    and neither may lose the other's. A record of the same table, case and operator is
    replaced; a file that is not a figures file is replaced whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            kept = read(path) if path.exists() else []
        except ValueError:
            kept = []
        ours = {(f.table, f.case, f.operator) for f in figures}
        write(path, [f for f in kept if (f.table, f.case, f.operator) not in ours] + figures)


def read(path: Path) -> list[Figure]:
    """What :func:`write` wrote; ValueError for anything else."""
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    try:
        return [
            Figure(str(entry["table"]), str(entry["case"]), str(entry["operator"]),
                   checked(str(entry["case"]), entry["values"]), str(entry.get("test", "")))
            for entry in data
        ]  # fmt: skip
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"not a figures file: {error!r}") from error
