"""This controller's code against another revision of it, A B A, on one plane at one size.

A refactor of the controller must not cost CPU or API writes per job. This measures it: the
same phases A and B as ``bench.controller_scale`` (every pod and Service created; every job
Running, then Succeeded and cleaned up), on one fresh plane with the webhook registered as
installed, three times in the order A B A. ``A`` is the controller of another source tree (a
``git worktree`` of the revision before, given with ``--before``); ``B`` is this tree's. The
two A segments bracket B, so a drift over the run (etcd growing, a warming API server) falls on
both sides, and their spread is the noise the B figure is judged against.

The controller of a tree is its console script run with ``PYTHONPATH`` set to the tree: the
path wins over the editable install, whose finder Python consults last. Each segment checks
which tree its controller process imported before it is counted.

    .venv/bin/python -m bench.controller_ab --before /tmp/before --jobs 500
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import bench_plane, emit, machine
from bench.controller_scale import SizeRun, ours_side
from bench.controller_scale_phases import Side
from controller.runtime.client import KubeClient
from localkube.base.processes import stop_process
from localkube.plane.operator import LocalOperator

FIGURES = (
    ("phase_a", "seconds"),
    ("phase_a", "controller_cpu_ms_per_job"),
    ("phase_a", "controller_writes_per_job"),
    ("phase_b", "total_s"),
    ("phase_b", "controller_writes_per_job"),
    ("whole_run", "controller_cpu_s"),
    ("whole_run", "controller_writes_per_job"),
    ("whole_run", "controller_peak_rss_mib"),
)
"""The figures compared: where each sits in a segment's report, and its name there."""


def imported_tree(pid: int) -> str:
    """The source tree the controller process ``pid`` imports: its ``PYTHONPATH``, else the
    editable install (this tree)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    for entry in environ:
        if entry.startswith(b"PYTHONPATH="):
            return entry.split(b"=", 1)[1].decode()
    return "editable install"


def tree_side(operator: LocalOperator, *, tree: Path | None, log_name: str) -> Side:
    """:func:`bench.controller_scale.ours_side`, its process importing ``tree`` when given."""
    side = ours_side(operator, log_name=log_name)

    def start(namespace: str) -> int:
        saved = os.environ.get("PYTHONPATH")
        if tree is not None:
            os.environ["PYTHONPATH"] = str(tree)
        try:
            pid = side.start(namespace)
        finally:
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved
        expected = str(tree) if tree is not None else "editable install"
        assert imported_tree(pid) == expected, f"the controller runs {imported_tree(pid)}"
        return pid

    return Side(side.name, start, side.stop, side.events_dropped)


def figures(report: dict[str, Any]) -> dict[str, float]:
    return {f"{part}.{name}": float(report[part][name]) for part, name in FIGURES}


def compare(segments: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """B against the mean of both A segments, with the A segments' spread as the noise."""
    a_runs = [figures(r) for label, r in segments if label == "A"]
    b_run = next(figures(r) for label, r in segments if label == "B")
    table: dict[str, Any] = {}
    for key, b_value in b_run.items():
        a_values = [run[key] for run in a_runs]
        a_mean = statistics.fmean(a_values)
        table[key] = {
            "A": a_values,
            "B": b_value,
            "B_over_A": round(b_value / a_mean, 3) if a_mean else None,
            "A_spread": round((max(a_values) - min(a_values)) / a_mean, 3) if a_mean else None,
        }
    return table


def run(*, before: Path, jobs: int, submit_threads: int) -> dict[str, Any]:
    plane = bench_plane(f"ab-{jobs}")
    try:
        client = KubeClient.from_kubeconfig(plane.kubeconfig, pool_size=12)
        size = SizeRun(
            plane=plane,
            client=client,
            jobs=jobs,
            baseline_threads=8,
            submit_threads=submit_threads,
            lifecycle=True,
            timeout=120 + jobs * 2.0,
        )
        operator = LocalOperator(plane)
        webhook_pid, port = operator.start_webhook()
        try:
            operator.install_crd(webhook_port=port)
            operator.register_webhooks(webhook_port=port)
            segments = []
            for number, (label, tree) in enumerate((("A", before), ("B", None), ("A", before))):
                side = tree_side(operator, tree=tree, log_name=f"ab-{number}-{label}.log")
                segments.append((label, size.measure(side)))
        finally:
            operator.unregister_webhooks()
            stop_process(webhook_pid)
        return {
            "benchmark": "controller_ab",
            "jobs": jobs,
            "before": str(before),
            "segments": [{"label": label, **report} for label, report in segments],
            "comparison": compare(segments),
            "machine": machine(plane),
        }
    finally:
        plane.down()


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="This controller against another tree, A B A.")
    parser.add_argument("--before", type=Path, required=True, help="the other source tree (A)")
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--submit-threads", type=int, default=8)
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    report = run(before=args.before.resolve(), jobs=args.jobs, submit_threads=args.submit_threads)
    return emit(report, args.output)


if __name__ == "__main__":
    main()
