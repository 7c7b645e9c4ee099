"""``python -m bench`` (``make bench``): every benchmark at full size, then
``docs/explanation/performance.md``.

The JSON of each benchmark is kept in ``.local/bench/results.json``, every figure of the run in
it; the page is its summary, and ``--render-only`` rebuilds the page from it. The findings
written by people (profiles, fixes, before/after figures) are in ``bench/findings.md``, apart
from the page.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import (
    admission_cost,
    admission_overhead,
    controller_scale,
    creation_compare,
    scheduler_scale,
    webhook_load,
    webhook_path,
)
from bench.common import BENCH_DIR
from bench.report import render
from localkube.base.paths import PROJECT_ROOT

RESULTS = BENCH_DIR / "results.json"
PAGE = PROJECT_ROOT / "docs" / "explanation" / "performance.md"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--output", type=Path, default=PAGE, help="the Markdown page to write")
    parser.add_argument("--results", type=Path, default=RESULTS, help="JSON of every report")
    parser.add_argument("--render-only", action="store_true", help="re-render saved results")
    parser.add_argument(
        "--scale-jobs", type=int, nargs="+", default=[100, 500], help="growth sizes"
    )
    parser.add_argument(
        "--scheduler-jobs",
        type=int,
        nargs="*",
        default=list(scheduler_scale.SIZES),
        help="sizes on kube-scheduler and kwok nodes (none: skip)",
    )
    parser.add_argument(
        "--compare-jobs",
        type=int,
        nargs="*",
        default=list(creation_compare.SIZES),
        help="sizes of the before/after/peer comparison (none: skip)",
    )
    parser.add_argument("--admission-jobs", type=int, default=500)
    parser.add_argument("--webhook-duration", type=float, default=5.0)
    args = parser.parse_args(argv)
    results: dict[str, Any]
    if args.render_only:
        results = json.loads(args.results.read_text())
    else:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        results = {}
        started = time.monotonic()

        def save() -> None:
            args.results.write_text(json.dumps(results, indent=2) + "\n")

        results["webhook_load"] = webhook_load.main(
            ["--duration", str(args.webhook_duration), "--output", "/dev/null"]
        )
        save()
        results["webhook_path"] = webhook_path.main(
            ["--duration", str(args.webhook_duration), "--output", "/dev/null"]
        )
        save()
        results["admission_overhead"] = admission_overhead.main(
            ["--jobs", str(args.admission_jobs), "--output", "/dev/null"]
        )
        save()
        results["admission_cost"] = admission_cost.main(
            ["--jobs", str(args.admission_jobs), "--output", "/dev/null"]
        )
        save()
        results["controller_scale"] = controller_scale.main(
            ["--jobs", *map(str, args.scale_jobs), "--output", "/dev/null"]
        )
        save()
        if args.compare_jobs:
            results["creation_compare"] = creation_compare.main(
                ["--jobs", *map(str, args.compare_jobs), "--output", "/dev/null"]
            )
            save()
        if args.scheduler_jobs:
            results["scheduler_scale"] = scheduler_scale.main(
                ["--jobs", *map(str, args.scheduler_jobs), "--output", "/dev/null"]
            )
            save()
        results["run"] = {
            "seconds": round(time.monotonic() - started),
            "argv": list(sys.argv[1:] if argv is None else argv),
        }
        save()
    args.output.write_text(render(results))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
