"""``python -m localkube.scenarios.chaos`` (``make chaos``): the full run, its figures printed and
written into ``--report``; exits 1 unless every invariant held."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from localkube.base.paths import PROJECT_ROOT
from localkube.scenarios import chaos
from localkube.scenarios.chaos.plan import ChaosConfig
from localkube.scenarios.chaos.report import write_report
from localkube.scenarios.chaos.run import ChaosRun


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.chaos",
        description=(chaos.__doc__ or "").splitlines()[0],
    )
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / ".local" / "chaos")
    parser.add_argument("--report", type=Path, help="write the figures into this markdown file")
    parser.add_argument("--jobs", type=int, default=ChaosConfig.jobs)
    parser.add_argument("--controller-kills", type=int, default=ChaosConfig.controller_kills)
    parser.add_argument("--seed", type=int)
    args = parser.parse_args(argv)
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so the control plane and processes are stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    config = ChaosConfig(jobs=args.jobs, controller_kills=args.controller_kills, seed=args.seed)
    report = ChaosRun(
        config, args.state_dir.resolve(), log=lambda line: print(line, flush=True)
    ).run()
    print(report.markdown())
    if args.report is not None:
        write_report(report, args.report)
        print(f"chaos: figures written to {args.report}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
