"""The webhook and admission sections of ``docs/explanation/performance.md``: the webhook under
load, admission end to end, and what each way of installing admission costs the API server per
job. The segments of each A B A order stay in the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.report_tables import table, verdict


def webhook_section(report: Mapping[str, Any] | None, path: Mapping[str, Any] | None) -> list[str]:
    """``bench.webhook_load`` (its table and the worker comparison) and ``bench.webhook_path``
    (the log line), under one heading; either may be missing."""
    lines = ["## Webhook under load", ""]
    if report is not None:
        lines += _load_lines(report)
    if path is not None:
        lines += webhook_path_lines(path)
    return lines


def _load_lines(report: Mapping[str, Any]) -> list[str]:
    targets = report["targets"]
    ceiling = targets["ceiling"]
    config = report["config"]
    lines = [
        f"Server: {config['server']}. Load: {config['load_processes']} spawned processes, one "
        f"keep-alive TLS connection each, on loopback; {config['duration_s']} s measured after "
        f"{config['warmup_s']} s of warm-up per point. Baseline (the ceiling): the same server "
        "answering a precomputed constant review (`bench/constant_webhook.py`). Jobs: `3` = "
        "MXTrain with Scheduler, Server x2, Worker x4, one realistic container per template; "
        "`12` = the same with four containers per template. Mutate gets the job as written, "
        f"validate gets it defaulted. Measured by `{report['command']}`.",
        "",
    ]
    rows = []
    for name, target in targets.items():
        half = next(p for p in target["points"] if p["fraction"] == 0.5)
        cells = [f"{point['p50_ms']:.2f} / {point['p99_ms']:.2f}" for point in target["points"]]
        rows.append(
            [
                name,
                target["request_bytes"],
                target["saturation_rps"],
                f"{target['ratio_to_ceiling']:.3f}",
                *cells,
                "baseline"
                if name == "ceiling"
                else f"{verdict(target['meets_throughput_target'])} / "
                f"{verdict(target['meets_latency_target'])} ({half['p99_ms']:.1f} ms)",
            ]
        )
    lines += table(
        [
            "target",
            "review bytes",
            "reviews/s at saturation",
            "ratio to ceiling",
            "p50 / p99 ms at 25 %",
            "p50 / p99 ms at 50 %",
            "p50 / p99 ms at 75 %",
            "≥ 0.70 of ceiling / p99 ≤ 5 ms at 50 %",
        ],
        rows,
    )
    lines += ["", f"Ceiling: {ceiling['saturation_rps']} reviews/s."]
    if "worker_ab" in report:
        lines[-1] += " " + worker_ab_sentence(report["worker_ab"])
    return [*lines, ""]


def worker_ab_sentence(ab: Mapping[str, Any]) -> str:
    """The ceiling under the project's gunicorn worker over gunicorn's own gthread, in one
    sentence (the segments stay in the JSON)."""
    order = " ".join(segment["worker"] for segment in ab["segments"])
    over = ab["webhook_over_gthread"]
    return (
        "The ceiling's server under `webhook/worker.py` (the connection-age limit; what "
        "`mxjob-webhook` runs) over the same under gunicorn's own `gthread`, which it "
        f"subclasses (fresh server per segment, {order}; latency at {ab['offered_rps']} "
        f"reviews/s offered): saturation {over['saturation_rps']:.2f}, p50 "
        f"{over['p50_ms']:.2f}, p99 {over['p99_ms']:.2f}."
    )


def admission_section(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Admission end to end",
        "",
        f"{report['jobs_per_configuration']} MXJobs per configuration created through the API "
        f"server from {report['threads']} threads, in A-B-C-C-B-A segments; the webhook's own "
        "review counter confirms each segment. C splits the difference: no webhooks, but each "
        "job is sent already defaulted, so the API server stores the same object as with them. "
        f"Measured by `{report['command']}`.",
        "",
    ]
    lines += table(
        ["configuration", "wall time s", "jobs/s"],
        [
            [
                "A: webhooks registered",
                report["with_webhooks_s"],
                report["with_webhooks_jobs_per_s"],
            ],
            [
                "B: webhooks removed (baseline)",
                report["without_webhooks_s"],
                report["without_webhooks_jobs_per_s"],
            ],
            [
                "C: webhooks removed, jobs sent defaulted",
                report["defaulted_without_webhooks_s"],
                report["defaulted_without_webhooks_jobs_per_s"],
            ],
        ],
    )
    lines += [
        "",
        f"Ratio A / B: **{report['ratio']:.2f}** (target ≤ 1.3: {verdict(report['meets_target'])}) "
        f"= C / B {report['defaults_ratio']:.2f} (storing the defaulted job: the injected env "
        f"makes it larger) times A / C {report['webhook_calls_ratio']:.2f} (calling the "
        "webhooks).",
        "",
    ]
    return lines


CANDIDATE_LABELS = {
    "today": "both webhooks on CREATE, v1beta1 served, no matchConditions (before)",
    "match-conditions": "+ matchConditions (the install before one call per CREATE)",
    "mutate-only": "one call per CREATE, v1beta1 served, no matchConditions",
    "two-workers": "webhook with 2 gunicorn workers",
    "no-webhooks": "no webhooks (floor; job stored as written)",
    "no-webhooks-defaulted": "no webhooks, job sent defaulted (stored as with them)",
    "no-v1beta1": "v1beta1 not served",
    "lean": "matchConditions + v1beta1 not served, both webhooks on CREATE",
    "default": "matchConditions + v1beta1 not served + one call per CREATE (**the install now**)",
}


def admission_cost_section(report: Mapping[str, Any]) -> list[str]:
    """Per-job cost of each way of installing the admission path (``bench.admission_cost``)."""
    candidates = report["candidates"]
    first = next(iter(candidates))
    jobs = report["jobs_per_candidate"]
    lines = [
        "## What admission costs, per job",
        "",
        f"{jobs} MXJobs per candidate on one control plane, from {report['threads']} threads, "
        "candidates in A B … B A order after a warm-up; each job is created, labelled (a "
        "metadata-only merge PATCH, as `kubectl label`) and deleted in the foreground (the "
        "garbage collector's finalizer removal is another metadata-only UPDATE). Webhook calls "
        "are the API server's own counts; CPU is `/proc` of kube-apiserver, etcd and every "
        "webhook process; bytes are what etcd stores per job. Each segment checks the API "
        "server made exactly the calls its candidate configures. Ratios are to the first row; "
        f"life = create + label + foreground delete. Measured by `{report['command']}`.",
        "",
    ]
    rows = []
    for name, c in candidates.items():
        create, life = c["create"], c["life"]
        ratios = c[f"ratios_to_{first}"]
        rows.append(
            [
                CANDIDATE_LABELS.get(name, name),
                create["seconds"],
                f"{ratios['create_seconds']:.2f}",
                create["kube-apiserver_cpu_ms_per_job"],
                f"{ratios['create_kube-apiserver_cpu']:.2f}",
                life["kube-apiserver_cpu_ms_per_job"],
                f"{ratios['life_kube-apiserver_cpu']:.2f}",
                life["etcd_cpu_ms_per_job"],
                life["webhook_cpu_ms_per_job"],
                ", ".join(f"{k} {v:g}" for k, v in create["calls_per_job"].items()) or "none",
                life["calls_per_job"],
                c["stored_bytes_per_job"],
            ]
        )
    lines += table(
        [
            "candidate",
            f"create {jobs} jobs s",
            "ratio",
            "API server CPU ms/job, create",
            "ratio",
            "API server CPU ms/job, life",
            "ratio",
            "etcd CPU ms/job, life",
            "webhook CPU ms/job, life",
            "calls/job, create",
            "calls/job, life",
            "bytes stored/job",
        ],
        rows,
    )
    return [*lines, ""]


def webhook_path_lines(report: Mapping[str, Any]) -> list[str]:
    """``bench.webhook_path``: the review line's cost at saturation, in one paragraph."""
    levels = report["levels"]
    order = ", ".join(segment["log_level"] for segment in report["segments"])
    figures = "; ".join(
        f"`{level}` {f['saturation_rps']:g} reviews/s, p50 {f['p50_ms']:g} ms, "
        f"{f['cpu_ms_per_review']:g} ms CPU per review"
        for level, f in levels.items()
    )
    found = report["info_over_debug"]
    return [
        "**The log line per review.** The production server at saturation (mutate reviews of a "
        f"3-template job), a fresh server per segment, in the order {order}: `debug` writes a "
        "line per review, `info`, the default, builds none; CPU per review is the gunicorn "
        f"process group's. {figures}; info / debug: reviews/s "
        f"{found['saturation_rps']:.2f}, CPU per review {found['cpu_ms_per_review']:.2f}. "
        f"Measured by `{report['command']}`.",
        "",
    ]
