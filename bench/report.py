"""``docs/benchmarks.md`` from the benchmarks' JSON reports.

Rendering is separate from measuring so the smoke test can check the page is built from any
report (tiny or full) and so a full run's JSON (``.local/bench/results.json``) can be re-rendered
without measuring again. Each section is a module of its own (``bench.report_admission``,
``report_peer``, ``report_creation``, ``report_scale``, ``report_scheduler``); this one puts
them in the page's order.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from bench.report_admission import admission_cost_section, admission_section, webhook_section
from bench.report_creation import creation_section, webhook_path_section
from bench.report_peer import peer_section, raw_limit_section
from bench.report_scale import scale_section
from bench.report_scheduler import scheduler_section


def machine_section(info: Mapping[str, Any]) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in info.get("versions", {}).items())
    return [
        f"- {info.get('cores')} cores ({info.get('cpu')}), {info.get('memory_gib')} GiB memory, "
        f"Linux {info.get('kernel')}",
        f"- {versions}",
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
    ]


def _run_length(run: Mapping[str, Any] | None) -> list[str]:
    """How long the whole run took, and with which arguments (none: the defaults)."""
    if not run:
        return []
    argv = " ".join(run["argv"]) or "no arguments: the default sizes"
    return [
        "",
        f"The whole run took {run['seconds'] / 60:.0f} min (`python -m bench` with {argv}).",
    ]


def render(results: Mapping[str, Any], *, notes: str = "") -> str:
    """The whole page from ``{"webhook_load": ..., "admission_overhead": ..., ...}``."""
    info: Mapping[str, Any] = next(
        (r["machine"] for r in results.values() if isinstance(r, Mapping) and "machine" in r),
        {},
    )
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmarks",
        "",
        f"Measured {stamp} by `make bench` (`.venv/bin/python -m bench`); every figure is "
        "compared with a baseline measured in the same run. `make test` runs every benchmark "
        "at a tiny size (`tests/bench/`), so these scripts keep working.",
        *_run_length(results.get("run")),
        "",
        "## Machine",
        "",
        *machine_section(info),
        "",
    ]
    # The table against the peer first, then the physical limit, then growth; the detail after.
    if "controller_scale" in results:
        lines += peer_section(results["controller_scale"])
        lines += raw_limit_section(results["controller_scale"])
    if "creation_compare" in results:
        lines += creation_section(results["creation_compare"])
    if "scheduler_scale" in results:
        lines += scheduler_section(results["scheduler_scale"])
    if "webhook_load" in results:
        lines += webhook_section(results["webhook_load"])
    if "webhook_path" in results:
        lines += webhook_path_section(results["webhook_path"])
    if "admission_overhead" in results:
        lines += admission_section(results["admission_overhead"])
    if "admission_cost" in results:
        lines += admission_cost_section(results["admission_cost"])
    if "controller_scale" in results:
        lines += scale_section(results["controller_scale"])
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines)
