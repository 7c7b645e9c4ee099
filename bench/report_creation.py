"""The page's sections for ``bench.creation_compare`` (before, after, and the peer at its best)
and ``bench.webhook_path`` (the review line's cost)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bench.creation_compare import PEER, ratios

LABELS: Final = {
    "before": (
        "mxjob-operator before (v1beta1 served, both webhooks on CREATE, a log line per review)"
    ),
    "after": "**mxjob-operator after** (the default install now)",
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


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _load(segment: Mapping[str, Any]) -> str:
    start, end = segment["load_average"]["start"], segment["load_average"]["end"]
    return f"{segment['candidate']} {start[0]:.2f} → {end[0]:.2f}"


def creation_section(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Creation side by side: before, after, and training-operator at its best",
        "",
        "One plane per size; the same jobs as above (1 scheduler, 1 server, 2 workers, "
        "`cleanPodPolicy: Running`, grace 0) through five segments in the order "
        f"{', '.join(report['runs'][0]['order']) if report['runs'] else ''} (A B C B A): each of "
        "ours is the mean of its two segments (the range in parentheses). Each of our segments "
        "first checks, with a probe job, that the API server calls exactly that candidate's "
        "webhook process with the calls it configures. training-operator's webhook runs inside "
        "its controller process (its CPU is the controller's).",
        "",
    ]
    for run in report["runs"]:
        candidates = run["candidates"]
        lines += [
            f"### {run['jobs']} jobs",
            "",
            _row(["candidate", *(title for _, title in COLUMNS)]),
            _row(["---"] * (len(COLUMNS) + 1)),
        ]
        for name, label in LABELS.items():
            if name not in candidates:
                continue
            mean, spread = candidates[name]["mean"], candidates[name]["range"]
            cells = []
            for key, _ in COLUMNS:
                low, high = spread.get(key, [0, 0])
                shown = f"{mean.get(key, 0):g}"
                cells.append(shown if low == high else f"{shown} ({low:g}-{high:g})")
            lines.append(_row([label, *cells]))
        lines += ["", _row(["ratio", *(title for _, title in RATIO_COLUMNS)]),
                  _row(["---"] * (len(RATIO_COLUMNS) + 1))]  # fmt: skip
        for over, under in (("after", PEER), ("before", PEER), ("after", "before")):
            if over in candidates and under in candidates:
                found = ratios(candidates, over, under)
                cells = [f"{found.get(key, float('nan')):.2f}" for key, _ in RATIO_COLUMNS]
                lines.append(_row([f"{over} / {under}", *cells]))
        loads = ", ".join(_load(segment) for segment in run["segments"])
        lines += ["", f"Load average (1 min) at each segment's start → end: {loads}.", ""]
    lines += [f"Reproduce: `{report['command']}` (no root; one plane per size).", ""]
    return lines


def webhook_path_section(report: Mapping[str, Any]) -> list[str]:
    """``bench.webhook_path``: the review line's cost, at saturation, A B B A."""
    levels = report["levels"]
    lines = [
        "## The webhook's path per review: the log line",
        "",
        "The production server at saturation (mutate reviews of a 3-template job), a fresh "
        "server per segment, in the order "
        + ", ".join(segment["log_level"] for segment in report["segments"])
        + ": `debug` writes a line per review, as the webhook did at INFO before; `info`, the "
        "default now, builds none. CPU per review is the gunicorn process group's (`/proc`).",
        "",
        _row(["log level", "reviews/s", "p50 ms", "CPU ms per review"]),
        _row(["---"] * 4),
    ]
    for level, figures in levels.items():
        lines.append(
            _row(
                [
                    level,
                    f"{figures['saturation_rps']:g}",
                    f"{figures['p50_ms']:g}",
                    f"{figures['cpu_ms_per_review']:g}",
                ]
            )
        )
    found = report["info_over_debug"]
    lines += [
        "",
        f"info / debug: reviews/s {found['saturation_rps']:.2f}, CPU per review "
        f"{found['cpu_ms_per_review']:.2f}. Reproduce: `{report['command']}`",
        "",
    ]
    return lines
