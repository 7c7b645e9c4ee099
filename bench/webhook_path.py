"""The webhook's own path per review, with and without a log line per review.

Before, every answered review wrote an INFO line (its metadata); now that line is DEBUG and at
the default level nothing of it is built (webhook/app.py). The production server
(``bench.webhook_load.start_server``: gunicorn, TLS, JSON logs) is started at ``--log-level``
``debug`` (the line, as before) and ``info`` (none, as now), in A B B A order, each segment a
fresh server driven at saturation (closed loop) by the same load generator with the same
mutate reviews of a 3-template job. Per segment: reviews per second, and the CPU the gunicorn
process group spent per review (``/proc``), which is what the API server's machine pays.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.admission_cost import group_cpu
from bench.common import BENCH_DIR, emit, machine, ratio
from bench.webhook_load import (
    Endpoint,
    LoadGenerator,
    check_answer,
    make_certificates,
    review_bodies,
    start_server,
)
from webhook.app import MUTATE_PATH

ORDER: Final = ("debug", "info", "info", "debug")
"""``debug``: a line per review, as the webhook logged at INFO before; ``info``: the default now."""


def _segment(load: LoadGenerator, level: str, *, work_dir: Path, cafile: Path,
             bodies: tuple[bytes, ...]) -> dict[str, Any]:  # fmt: skip
    process, port = start_server("webhook", work_dir=work_dir, cafile=cafile, log_level=level)
    try:
        check_answer(port, cafile, MUTATE_PATH, bodies[0], expect_patch=True)
        cpu_before = group_cpu(process.pid)
        result = load.run(Endpoint(port=port, cafile=cafile, path=MUTATE_PATH, bodies=bodies),
                          rate=None)  # fmt: skip
        cpu = group_cpu(process.pid) - cpu_before
    finally:
        process.stop()
    # The CPU counts the warm-up's reviews too; the load generator counts only the measured
    # ones, so the rate over its whole span (warm-up included) is what the CPU is divided by.
    reviews_in_span = result["achieved_rps"] * (load.warmup + load.duration)
    return {
        "log_level": level,
        "saturation_rps": result["achieved_rps"],
        "p50_ms": result["p50_ms"],
        "errors": result["errors"],
        "cpu_ms_per_review": round(cpu / reviews_in_span * 1000, 4) if reviews_in_span else 0.0,
    }


def run(*, duration: float = 5.0, warmup: float = 1.0, processes: int = 4,
        work_dir: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """The four segments of ``ORDER``; each level's figures are the mean of its two."""
    work_dir = work_dir or BENCH_DIR / "webhook-path"
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    cafile = make_certificates(work_dir / "certs")
    bodies = review_bodies("mutate", templates=3, count=512)
    load = LoadGenerator(processes, warmup=warmup, duration=duration)
    try:
        segments = [_segment(load, level, work_dir=work_dir, cafile=cafile, bodies=bodies)
                    for level in ORDER]  # fmt: skip
    finally:
        load.close()
    levels = {
        level: {
            figure: round(
                statistics.fmean(s[figure] for s in segments if s["log_level"] == level), 4
            )
            for figure in ("saturation_rps", "p50_ms", "cpu_ms_per_review")
        }
        for level in dict.fromkeys(ORDER)
    }
    return {
        "benchmark": "webhook_path",
        "segments": segments,
        "levels": levels,
        "info_over_debug": {
            figure: round(ratio(levels["info"][figure], levels["debug"][figure]), 3)
            for figure in ("saturation_rps", "cpu_ms_per_review")
        },
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per segment")
    parser.add_argument("--processes", type=int, default=4, help="load-generator processes")
    parser.add_argument("--output", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    report = run(duration=args.duration, processes=args.processes)
    report["machine"] = machine()
    report["command"] = (
        f".venv/bin/python -m bench.webhook_path --duration {args.duration:g} "
        f"--processes {args.processes}"
    )
    return emit(report, args.output)


if __name__ == "__main__":
    main()
