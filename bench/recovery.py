"""The measured tables of docs/explanation/recovery.md (``make bench-recovery``) and of
docs/how-to/monitor.md's progress reports (``make bench-progress``), from their figures files.

The real-node recovery tests record what they measured (tests/helpers/figures.py), and the
bench-only runs of the same cases under training-operator v1.8.1
(tests/e2e/bench_training_operator_failures.py) record what it did; ``make bench-recovery`` runs
both with ``MXJOB_FIGURES`` set and then this module, which puts one table per ``table`` between
its markers in the page (``<!-- bench-recovery:<table>:begin -->`` … ``:end -->``): a row per
case in the order first measured, a column per operator. The prose around the tables stays
written by people; a figure never is.

Each value is phrased by :data:`PHRASES`, so a cell reads as a sentence and the JSON stays
numbers. A key without a phrase, or a marker missing from the page, stops the rendering:
figures are never dropped quietly.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from bench.recovery_figures import OURS, THEIRS, Figure, Value, read
from bench.report_tables import table

OPERATORS: Final = (OURS, THEIRS)
COMPARED: Final = frozenset({"resume", "node"})
"""The tables with a column for training-operator v1.8.1; the others show what it has no
counterpart of (a hang's deadline, progress reports), this operator's column alone."""
ABSENT: Final = "not run side by side"


def number(template: str, *, digits: int = 1) -> Callable[[Value], str]:
    return lambda value: template.format(f"{float(value or 0):.{digits}f}")


def plain(template: str) -> Callable[[Value], str]:
    return template.format


def counted(noun: str, then: str = "") -> Callable[[Value], str]:
    return lambda value: f"{value} {noun}" + ("" if value == 1 else "s") + then


def either(yes: str, no: str) -> Callable[[Value], str]:
    return lambda value: yes if value else no


PHRASES: Final[dict[str, Callable[[Value], str]]] = {
    "named_after_s": number("named {} s after the create"),
    "named_as": plain("as `{}`"),
    "killed_after_s": number("killed {} s after the create"),
    "restarted_at_epoch": plain("restarted at epoch {}"),
    "back_after_s": number("back in {} s"),
    "not_ready_after_s": number("the node `NotReady` {} s after the create"),
    "evicted_after_s": number("the worker evicted {} s after the create"),
    "preemptor_cpu": plain("the preemptor asked for {} CPU"),
    "refused_for_s": number("the eviction refused for {} s, the job untouched", digits=0),
    "succeeded_after_s": number("`Succeeded` {} s after the create"),
    "failed_after_s": number("`Failed` {} s after the create"),
    "failed_reason": plain("reason `{}`"),
    "drained_after_end": either("the drain went through once the job ended", "never drained"),
    "restarts": counted("restart"),
    "cause": plain("cause: {}"),
    "counted": either("counted against `backoffLimit`", "not counted against `backoffLimit`"),
    "pods_made": counted("pod", " made"),
    "made_twice": plain("{} made twice"),
    "resumed_from_epoch": plain("resumed from checkpoint epoch {}"),
    "final_accuracy": number("final accuracy {}", digits=4),
    "trials": counted("trial"),
    "measured": plain("{} measured"),
    "servers": counted("server"),
    "error_runs": counted("error run"),
    "best_kernel_us": number("the best kernel {} µs per run"),
    "speedup": number("{} times as fast as the untuned one"),
    "window_s": number("watched {} s", digits=0),
    "conditions": plain("conditions True: {}"),
    "restart_count": plain("`restartCount` {}"),
    "restarting_says": plain("`Restarting` says {!r}"),
    "ended": either("ended", "no end"),
    "restarted_after_stop_s": number("restarted {} s after the stop"),
    "still_running_after_stop_s": number("still `Running` {} s after the stop"),
    "progress_percentage": plain("its progress held at {} %"),
    "reports_sent": counted("report", " sent"),
    "reports_per_s": number("{} a second"),
    "status_writes": counted("status write"),
    "writes_per_report": number("{} writes per report", digits=4),
    "token_reviews": counted("TokenReview"),
    "last_written_after_s": number("the last report written {} s after the first"),
    "write_bound": plain("at most {} allowed"),
    "in_place_restarts": counted("in-place restart"),
    "reconciler_writes": plain("{} of the reconciler's status writes with a report present"),
    "report_writes": plain("{} report writes among them"),
    "status_updates_sent": counted("status update", " sent by the reconciler"),
    "reconcile_errors": counted("reconcile error"),
}


def cell(figure: Figure) -> str:
    """One operator's outcome of one case: its values as phrases, in the order recorded; a
    value recorded empty (a message never seen) says nothing."""
    missing = [key for key in figure.values if key not in PHRASES]
    if missing:
        raise ValueError(f"no phrase for {missing} of {figure.case!r} ({figure.test})")
    said = {key: value for key, value in figure.values.items() if value not in ("", None)}
    return "; ".join(PHRASES[key](value) for key, value in said.items())


def rendered(figures: Sequence[Figure], name: str) -> list[str]:
    """The Markdown table ``name``: a row per case, first measured first; the last record of a
    case and operator wins (a rerun of one test replaces its row)."""
    cells: dict[str, dict[str, str]] = {}
    for figure in figures:
        if figure.table == name:
            cells.setdefault(figure.case, {})[figure.operator] = cell(figure)
    operators = OPERATORS if name in COMPARED else (OURS,)
    rows = [[case, *(by.get(operator, ABSENT) for operator in operators)]
            for case, by in cells.items()]  # fmt: skip
    return table(["case", "this operator", *operators[1:]], rows)


def markers(name: str) -> tuple[str, str]:
    return f"<!-- bench-recovery:{name}:begin -->", f"<!-- bench-recovery:{name}:end -->"


def spliced(page: str, figures: Sequence[Figure]) -> str:
    """``page`` with every table of ``figures`` between its markers; a table without markers
    is a ValueError naming them."""
    for name in dict.fromkeys(figure.table for figure in figures):
        begin, end = markers(name)
        if begin not in page or end not in page:
            raise ValueError(f"the page has no {begin} … {end} for the table {name!r}")
        head, rest = page.split(begin, 1)
        _, tail = rest.split(end, 1)
        page = "\n".join([head + begin, *rendered(figures, name), end + tail])
    return page


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recovery", description=__doc__)
    parser.add_argument("figures", type=Path, help="the JSON make bench-recovery's tests wrote")
    parser.add_argument("--page", type=Path, default=Path("docs/explanation/recovery.md"))
    args = parser.parse_args(argv)
    try:
        page = spliced(args.page.read_text(encoding="utf-8"), read(args.figures))
    except (OSError, ValueError) as error:
        print(f"bench.recovery: {error}", file=sys.stderr)
        return 1
    args.page.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
