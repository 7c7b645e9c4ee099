"""The Markdown pieces every section of ``docs/explanation/performance.md`` is built from
(``bench.report``).

Kept apart from the sections so each section module reads as its own text and tables, and so a
verdict or a table looks the same wherever it appears on the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def verdict(flag: object) -> str:
    """A target's outcome in bold, as every section states it."""
    return "**met**" if flag else "**missed**"


def table(header: Sequence[str], rows: list[list[Any]]) -> list[str]:
    """A Markdown table: ``header``, its rule, then one line per row (cells as ``str`` gives)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines
