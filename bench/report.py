"""``docs/explanation/performance.md`` from the benchmarks' JSON reports.

Rendering is separate from measuring so the smoke test can check the page is built from any
report (tiny or full) and so a full run's JSON (``.local/bench/results.json``) can be re-rendered
without measuring again. The page is the summary, under :data:`MAX_LINES` lines: each section's
headline table and the command that measures it. The detail (requests by verb, the range of each
A B A segment, load averages, CPU per process) stays in the JSON, and the findings written by
people are in ``bench/findings.md``. Each section is a module of its own
(``bench.report_peer``, ``report_creation``, ``report_scheduler``, ``report_admission``,
``report_scale``); this one puts them in the page's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bench.report_admission import admission_cost_section, admission_section, webhook_section
from bench.report_creation import creation_section
from bench.report_peer import peer_section
from bench.report_scale import scale_section
from bench.report_scheduler import scheduler_section
from bench.report_tables import table

MAX_LINES: Final = 150
"""The page stays shorter than this with every benchmark at its default sizes."""


def machine_section(info: Mapping[str, Any]) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items())
    return [
        "## Machine",
        "",
        f"- {info.get('cores')} cores ({info.get('cpu')}), {info.get('memory_gib')} GiB memory, "
        f"Linux {info.get('kernel')}; {versions}",
        *(
            [
                "- Load average (1, 5, 15 min) after the first size was measured: "
                + ", ".join(str(x) for x in info["load_average"])
            ]
            if info.get("load_average")
            else []
        ),
        "- The API server, etcd, kube-controller-manager, the webhook, the controller and the "
        "load generator all share these cores, and anything else the machine runs at the time "
        "shows in the load averages: absolute figures are noisy, ratios to a baseline measured "
        "in the same run are the result.",
        "",
    ]


def how_to_run(run: Mapping[str, Any] | None) -> list[str]:
    """The commands: the whole run (and how long it took, with which arguments), the page
    alone, the comparison, and the tiny sizes ``make test`` runs."""
    took = ""
    if run:
        argv = " ".join(run["argv"]) or "no arguments: the default sizes"
        took = f" ({run['seconds'] / 60:.0f} min on the machine below, with {argv})"
    return [
        "## How to run",
        "",
        *table(
            ["what", "command"],
            [
                ["every benchmark at full size, then this page", f"`make bench`{took}"],
                [
                    "this page again from the last run's JSON, without measuring",
                    "`.venv/bin/python -m bench --render-only`",
                ],
                [
                    "creation before and after against training-operator at its best, "
                    "A B C B A on one plane per size",
                    '`make bench-compare COMPARE_JOBS="100 500 2000"`',
                ],
                ["every benchmark at a tiny size, as a check", "`make test` (`tests/bench/`)"],
            ],
        ),
        "",
        "Each section names the command that measures it alone (no root). Every figure of a "
        "run, with the detail this page leaves out, is kept in `.local/bench/results.json`.",
        "",
    ]


def render(results: Mapping[str, Any]) -> str:
    """The whole page from ``{"webhook_load": ..., "admission_overhead": ..., ...}``."""
    info: Mapping[str, Any] = next(
        (r["machine"] for r in results.values() if isinstance(r, Mapping) and "machine" in r),
        {},
    )
    lines = [
        "# Performance",
        "",
        "What the operator costs and how fast it is, each figure next to a baseline measured in "
        "the same run on the same machine: training-operator v1.8.1 on the same jobs, the raw "
        "API server doing the same creations, a webhook answering a constant review. `make "
        "bench` writes this page.",
        "",
        *how_to_run(results.get("run")),
        *machine_section(info),
    ]
    # The table against the peer first, then creation side by side, then growth; the parts after.
    if "controller_scale" in results:
        lines += peer_section(results["controller_scale"])
    if "creation_compare" in results:
        lines += creation_section(results["creation_compare"])
    if "scheduler_scale" in results:
        lines += scheduler_section(results["scheduler_scale"])
    if "webhook_load" in results or "webhook_path" in results:
        lines += webhook_section(results.get("webhook_load"), results.get("webhook_path"))
    if "admission_overhead" in results:
        lines += admission_section(results["admission_overhead"])
    if "admission_cost" in results:
        lines += admission_cost_section(results["admission_cost"])
    if "controller_scale" in results:
        lines += scale_section(results["controller_scale"])
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
