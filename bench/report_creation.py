"""The page's section for ``bench.creation_compare``: before, after, and the peer at its best.
Each candidate shows the mean of its segments; the ranges, the load averages and the profiles
stay in the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bench.creation_compare import PEER, ratios
from bench.report_tables import table

LABELS: Final = {
    "before": "before (v1beta1 served, both webhooks on CREATE, a log line per review)",
    "after": "**after** (the default install now)",
    PEER: "training-operator v1.8.1 at its best",
}
COLUMNS: Final = (
    ("submit_s", "jobs submitted s"),
    ("pods_and_services_s", "every pod and Service s"),
    ("all_running_s", "every job Running s"),
    ("succeeded_and_cleaned_s", "Succeeded + cleaned s"),
    ("apiserver_cpu_s_phase_a", "kube-apiserver CPU s, creation"),
    ("etcd_cpu_s_phase_a", "etcd CPU s, creation"),
    ("webhook_cpu_s", "our webhook CPU s, segment"),
    ("controller_cpu_s_phase_a", "controller CPU s, creation"),
)
RATIO_COLUMNS: Final = COLUMNS[1:5]
RATIOS: Final = (("after", PEER), ("after", "before"))
"""The ratios shown, each over every column of :data:`RATIO_COLUMNS` (below 1: ``after`` is
better)."""


def _ratio_header() -> list[str]:
    short = {
        "pods_and_services_s": "every pod and Service",
        "all_running_s": "Running",
        "succeeded_and_cleaned_s": "cleaned",
        "apiserver_cpu_s_phase_a": "kube-apiserver CPU",
    }
    return [
        "jobs",
        *(f"{over} / {under}: {short[key]}" for over, under in RATIOS for key, _ in RATIO_COLUMNS),
    ]


def creation_section(report: Mapping[str, Any]) -> list[str]:
    """One row per size and candidate (means), then one row of ratios per size."""
    order = ", ".join(report["runs"][0]["order"]) if report["runs"] else ""
    rows: list[list[Any]] = []
    ratio_rows: list[list[Any]] = []
    for run in report["runs"]:
        candidates = run["candidates"]
        for name, label in LABELS.items():
            if name in candidates:
                mean = candidates[name]["mean"]
                rows.append([run["jobs"], label, *(f"{mean.get(k, 0):g}" for k, _ in COLUMNS)])
        cells = []
        for over, under in RATIOS:
            found = ratios(candidates, over, under) if {over, under} <= set(candidates) else {}
            cells += [f"{found[k]:.2f}" if k in found else "-" for k, _ in RATIO_COLUMNS]
        ratio_rows.append([run["jobs"], *cells])
    return [
        "## Creation side by side: before, after, and training-operator at its best",
        "",
        "One plane per size; the same jobs as above (1 scheduler, 1 server, 2 workers, "
        f"`cleanPodPolicy: Running`, grace 0) through five segments in the order {order} "
        "(A B C B A): each of ours is the mean of its two segments. Each of our segments first "
        "checks, with a probe job, that the API server calls exactly that candidate's webhook "
        "process with the calls it configures. training-operator's webhook runs inside its "
        f"controller process (its CPU is the controller's). Measured by `{report['command']}` "
        "(no root; one plane per size).",
        "",
        *table(["jobs", "candidate", *(title for _, title in COLUMNS)], rows),
        "",
        *table(_ratio_header(), ratio_rows),
        "",
    ]
