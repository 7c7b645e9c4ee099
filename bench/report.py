"""``docs/benchmarks.md`` from the benchmarks' JSON reports.

Rendering is separate from measuring so the smoke test can check the page is built from any
report (tiny or full) and so a full run's JSON (``.local/bench/results.json``) can be re-rendered
without measuring again.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any


def _yes(flag: object) -> str:
    return "**met**" if flag else "**missed**"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


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


def webhook_section(report: Mapping[str, Any]) -> list[str]:
    targets = report["targets"]
    ceiling = targets["ceiling"]
    lines = [
        "## 1. Webhook under load",
        "",
        f"Server: {report['config']['server']}. Load: {report['config']['load_processes']} "
        "spawned processes, one keep-alive TLS connection each, on loopback; "
        f"{report['config']['duration_s']} s measured after {report['config']['warmup_s']} s "
        "of warm-up per point. Baseline (the ceiling): the same server configuration answering "
        "a precomputed constant review (`bench/constant_webhook.py`). Jobs: `3` = MXTrain with "
        "Scheduler, Server x2, Worker x4, one realistic container per template; `12` = the same "
        "with four containers per template (12 container templates). Mutate gets the job as "
        "written, validate gets it defaulted.",
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
                else f"{_yes(target['meets_throughput_target'])} / "
                f"{_yes(target['meets_latency_target'])} ({half['p99_ms']:.1f} ms)",
            ]
        )
    lines += _table(
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
    lines += ["", f"Ceiling: {ceiling['saturation_rps']} reviews/s.", ""]
    if "worker_ab" in report:
        lines += worker_ab_lines(report["worker_ab"])
    lines += [f"Reproduce: `{report['command']}`", ""]
    return lines


def worker_ab_lines(ab: Mapping[str, Any]) -> list[str]:
    """The ceiling under the project's gunicorn worker and under gunicorn's own gthread."""
    lines = [
        "The ceiling's server under its two possible gunicorn workers, fresh server per "
        "segment, in the order shown: `webhook/worker.py` (the connection-age limit; what "
        "`mxjob-webhook` runs) and gunicorn's own `gthread`, which it subclasses. Latency at "
        f"one offered rate for both, {ab['offered_rps']} reviews/s (half the ceiling above).",
        "",
    ]
    rows = [
        [
            segment["worker"],
            segment["saturation_rps"],
            f"{segment['p50_ms']:.2f} / {segment['p99_ms']:.2f}",
            segment["errors"],
        ]
        for segment in ab["segments"]
    ]
    lines += _table(
        ["worker", "reviews/s at saturation", "p50 / p99 ms at the offered rate", "errors"],
        rows,
    )
    over = ab["webhook_over_gthread"]
    lines += [
        "",
        f"`webhook/worker.py` over `gthread` (means of their segments): saturation "
        f"{over['saturation_rps']:.2f}, p50 {over['p50_ms']:.2f}, p99 {over['p99_ms']:.2f}.",
        "",
    ]
    return lines


def admission_section(report: Mapping[str, Any]) -> list[str]:
    lines = [
        "## 2. Admission overhead end to end",
        "",
        f"{report['jobs_per_configuration']} MXJobs per configuration created through the API "
        f"server from {report['threads']} threads, in A-B-C-C-B-A segments; the webhook's own "
        "review counter confirms each segment (two reviews per job with the webhooks, none "
        "without). C splits the difference: no webhooks, but each job is sent already defaulted, "
        "so the API server stores the same object as with them.",
        "",
    ]
    lines += _table(
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
        f"Ratio A / B: **{report['ratio']:.2f}** (target ≤ 1.3: {_yes(report['meets_target'])}) "
        f"= C / B {report['defaults_ratio']:.2f} (storing the defaulted job: the injected env "
        f"makes it larger) times A / C {report['webhook_calls_ratio']:.2f} (calling the two "
        "webhooks).",
        "",
        f"Reproduce: `{report['command']}`",
        "",
    ]
    return lines


def _requests(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"


PEER_LABELS = {
    "training-operator": "training-operator v1.8.1, defaults",
    "training-operator-best": "training-operator v1.8.1, at its best",
}


RAW_LABEL = "raw API server: jobs, pods, Services POSTed, no webhooks"


def _figures(side: Mapping[str, Any]) -> dict[str, float]:
    """What the comparison with the peer puts side by side, from one side's report."""
    a, b, whole = side["phase_a"], side["phase_b"], side["whole_run"]
    return {
        "pods_services_s": a["seconds"],
        "running_s": b["all_running_s"],
        "cleaned_s": b["succeeded_and_cleaned_s"],
        "writes": whole["controller_writes_per_job"],
        "cpu_s": whole["controller_cpu_s"],
        "rss_mib": whole["controller_peak_rss_mib"],
    }


def _dropped(side: Mapping[str, Any]) -> Any:
    """Events the controller gave up on over the run (its metric, or client-go's log lines)."""
    return side["whole_run"].get("events_dropped", "-")


PEER_TARGET_SPEEDUP = 10.0
"""Against the peer at its defaults: at least this many times faster to every pod and Service."""


def _peer_targets(
    run: Mapping[str, Any], name: str, *, ours: Mapping[str, float], theirs: Mapping[str, float]
) -> str:
    """One line: the targets against one peer at one size, each met or missed, with figures."""
    label = PEER_LABELS.get(name, name)
    dropped = _dropped(run)
    checks = [
        f"fewer writes per job ({ours['writes']} vs {theirs['writes']}): "
        f"{_yes(ours['writes'] < theirs['writes'])}",
        f"no Event dropped ({dropped}): {_yes(dropped == 0)}",
    ]
    if name.endswith("-best"):
        faster = all(ours[k] < theirs[k] for k in ("pods_services_s", "running_s", "cleaned_s"))
        checks.insert(0, f"faster at every step: {_yes(faster)}")
    else:
        speedup = theirs["pods_services_s"] / ours["pods_services_s"]
        checks.insert(
            0,
            f"≥ {PEER_TARGET_SPEEDUP:.0f}x faster to every pod and Service ({speedup:.1f}x): "
            f"{_yes(speedup >= PEER_TARGET_SPEEDUP)}",
        )
    return f"- {run['jobs']} jobs, against {label}: " + "; ".join(checks)


def _over(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs else "-"


def peer_section(report: Mapping[str, Any]) -> list[str]:
    """The top of the page: this operator against training-operator, same jobs, same run."""
    runs = [r for r in report["runs"] if r.get("peers") and "phase_b" in r]
    if not runs:
        return []
    lines = [
        "## Against training-operator",
        "",
        "The operator users migrate from, kubeflow training-operator v1.8.1 (only its MXJob "
        "controller, `--enable-scheme=mxjob`), built from the pinned module by "
        "`hack/build-training-operator.sh` and run by `localkube.thirdparty.training_operator` "
        "on the same "
        "control plane, in the same run, on the same jobs, one controller after the other, "
        "each in a fresh namespace (the previous one deleted first). Jobs: MXTrain of "
        "1 scheduler, 1 server, 2 workers, submitted at once from 8 threads, with "
        "`cleanPodPolicy: Running` (this operator's default; training-operator's is None) and "
        "`terminationGracePeriodSeconds: 0` (this operator lets a finished job's running pods "
        "use their grace period before deleting them, training-operator does not wait: with 0 "
        '"Succeeded and cleaned" measures the controllers). This operator runs with its '
        "webhooks registered as installed; training-operator with its own CRD and validating "
        "webhook. The test kubelet binds and runs the pods; when every job is Running every "
        "scheduler exits 0.",
        "",
        "- **defaults**: the release as its users ran it: one reconcile thread "
        "(`--controller-threads` 1) and controller-runtime's client limit of 20 requests/s, "
        "burst 30, which no flag changes.",
        "- **at its best**: built with `hack/training-operator/patches/client-rate-limits.patch` "
        "(QPS 1000, burst 2000; the patched build has its own cache directory) and "
        "`--controller-threads=4`, as many as this controller's workers.",
        "",
        "Ratios are this operator's figure over training-operator's: below 1 is better.",
        "",
    ]
    rows: list[list[Any]] = []
    ratio_rows: list[list[Any]] = []
    targets: list[str] = []
    for run in runs:
        ours = _figures(run)
        raw = run.get("raw_baseline")
        if raw:
            rows.append(
                [run["jobs"], RAW_LABEL, raw["posted_seconds"], raw["seconds"]]
                + ["-"] * (len(ours) - 1)
            )
        rows.append(
            [
                run["jobs"],
                "**mxjob-operator**",
                run["phase_a"]["submit_seconds"],
                *ours.values(),
                _dropped(run),
            ]
        )
        for name, peer in run["peers"].items():
            if "phase_b" not in peer:
                continue
            theirs = _figures(peer)
            label = PEER_LABELS.get(name, name)
            rows.append(
                [
                    run["jobs"],
                    label,
                    peer["phase_a"]["submit_seconds"],
                    *theirs.values(),
                    _dropped(peer),
                ]
            )
            ratio_rows.append([run["jobs"], label, *(_over(ours[k], theirs[k]) for k in ours)])
            targets.append(_peer_targets(run, name, ours=ours, theirs=theirs))
    columns = [
        "every pod and Service s",
        "every job Running s",
        "Succeeded + cleaned s",
        "API writes/job",
        "controller CPU s",
        "peak RSS MiB",
    ]
    lines += _table(["jobs", "controller", "jobs submitted s", *columns, "Events dropped"], rows)
    lines += ["", "mxjob-operator / training-operator:", ""]
    lines += _table(["jobs", "against", *columns], ratio_rows)
    lines += ["", "Targets:", "", *targets]
    lines += [
        "",
        "The raw row (when measured) is the API server's own limit for the same objects: "
        "a client POSTs every job (defaulted, the webhooks removed) and the pods and Services "
        "both controllers make, from 8 threads, its clock stopped by the same watches. "
        "Jobs submitted: the 8 threads' POSTs of every job, through each operator's admission "
        "webhooks (this operator's two in Python, training-operator's validating one in Go); "
        '"every pod and Service" includes it. '
        "Times run from the first job POST (pods and Services: to the last one seen by the "
        "driver's watches), from the test kubelet's start (Running), from the schedulers' exit "
        "(Succeeded and every pod but the schedulers gone). Writes: `apiserver_request_total` "
        "deltas over pods, Services, events and MXJobs, minus the requests the driver and the "
        "test kubelet counted themselves, over the job's whole life. CPU and peak RSS: "
        "`/proc/<pid>` of the controller process, from its start (ready) to the end.",
        "",
    ]
    for run in runs:
        for name, side in (("mxjob-operator", run), *run["peers"].items()):
            if "whole_run" in side:
                lines.append(
                    f"- {run['jobs']} jobs, {PEER_LABELS.get(name, name)}: "
                    f"{_requests(side['whole_run']['controller_requests'])}"
                )
    lines += ["", f"Reproduce: `{report['command']}`", ""]
    return lines


def scale_section(report: Mapping[str, Any]) -> list[str]:
    runs = report["runs"]
    lines = [
        "## 3. Controller at scale",
        "",
        "Jobs of 1 scheduler, 1 server and 2 workers, submitted at once from 8 threads with the "
        "webhooks registered; phase A ends when every pod and Service exists (driver's watches). "
        "Baseline: a client POSTing the same pods and Services (built by `controller.desired`, "
        "no owner references) from 8 threads as fast as the API server accepts them, its clock "
        "stopped the same way (when the driver's watches have seen every object). Phase B: "
        "the test kubelet binds and starts every pod; when every job is Running, every "
        "scheduler exits 0; it ends when every job is Succeeded and its running pods are "
        "deleted (`cleanPodPolicy: Running`).",
        "",
    ]
    rows = []
    for run in runs:
        a = run["phase_a"]
        b = run.get("phase_b", {})
        rows.append(
            [
                run["jobs"],
                run["baseline"]["objects"],
                run["baseline"]["seconds"],
                a["seconds"],
                f"{a['ratio_to_baseline']:.2f} ({_yes(a['meets_target'])})",
                b.get("all_running_s", "-"),
                b.get("succeeded_and_cleaned_s", "-"),
            ]
        )
    lines += _table(
        [
            "jobs",
            "objects",
            "baseline s",
            "controller s (phase A)",
            "ratio (≤ 1.5)",
            "all Running s",
            "Succeeded + cleaned s",
        ],
        rows,
    )
    lines += [
        "",
        "Where the time goes (CPU seconds of the control plane during the baseline and during "
        "phase A; the machine has 2 cores, so phase A is bound by the CPU everything shares):",
        "",
    ]
    cpu_rows = []
    for run in runs:
        base_cpu = run["baseline"].get("control_plane_cpu_s", {})
        a_cpu = run["phase_a"].get("control_plane_cpu_s", {})
        cpu_rows.append(
            [
                run["jobs"],
                base_cpu.get("kube-apiserver", "-"),
                base_cpu.get("etcd", "-"),
                a_cpu.get("kube-apiserver", "-"),
                a_cpu.get("etcd", "-"),
                run["phase_a"]["controller_cpu_s"],
                run["phase_a"]["submit_seconds"],
            ]
        )
    lines += _table(
        [
            "jobs",
            "baseline: kube-apiserver CPU s",
            "baseline: etcd CPU s",
            "phase A: kube-apiserver CPU s",
            "phase A: etcd CPU s",
            "phase A: controller CPU s",
            "phase A: submitting the jobs s",
        ],
        cpu_rows,
    )
    lines += ["", "## 4. Economy", ""]
    rows = []
    for run in runs:
        a = run["phase_a"]
        whole = run.get("whole_run", {})
        rows.append(
            [
                run["jobs"],
                f"{a['controller_writes_per_job']} ({_yes(a['meets_write_target'])})",
                whole.get("controller_writes_per_job", "-"),
                whole.get("controller_lists_after_start", a["controller_lists"]),
                a["controller_cpu_s"],
                whole.get("controller_cpu_s", "-"),
                f"{a['controller_peak_rss_mib']} ({_yes(a['meets_rss_target'])})",
                whole.get("controller_peak_rss_mib", "-"),
            ]
        )
    lines += _table(
        [
            "jobs",
            "writes/job, creation (≤ 8 + 3)",
            "writes/job, whole life",
            "LISTs after start-up",
            "CPU s, creation",
            "CPU s, whole run",
            "peak RSS MiB with every pod cached (≤ 200)",
            "peak RSS MiB, end",
        ],
        rows,
    )
    lines += [""]
    for run in runs:
        a = run["phase_a"]
        lines.append(f"- {run['jobs']} jobs, creation: {_requests(a['controller_requests'])}")
        if "phase_b" in run:
            b = run["phase_b"]
            lines.append(
                f"- {run['jobs']} jobs, run to Succeeded and clean-up: "
                f"{_requests(b['controller_requests'])} (the test kubelet meanwhile: "
                f"{_requests(b['kubelet_requests'])})"
            )
    lines += [
        "",
        "Requests are `apiserver_request_total` deltas minus what the benchmark's driver and "
        "the test kubelet counted on their side; the rest is the controller's, except `GET "
        "mxjobs`: the controller reads jobs from its informer cache and GETs one only to "
        "confirm it is gone before letting go of its pods' tracking finalizers (no job is "
        "deleted here), so those are kube-controller-manager's garbage collector verifying the "
        "owners of new or deleted pods. Writes and LISTs are counted over pods, services, "
        "events and mxjobs.",
        "",
        "## 5. Growth: cost per job",
        "",
    ]
    rows = []
    for run in runs:
        a = run["phase_a"]
        jobs = run["jobs"]
        rows.append(
            [
                jobs,
                round(run["baseline"]["seconds"] / jobs * 1000, 2),
                round(a["seconds"] / jobs * 1000, 2),
                a["controller_cpu_ms_per_job"],
                a["controller_writes_per_job"],
                round(a["controller_peak_rss_mib"] / jobs * 1024, 1),
            ]
        )
    lines += _table(
        [
            "jobs",
            "baseline ms/job",
            "controller ms/job (phase A)",
            "controller CPU ms/job",
            "writes/job",
            "peak RSS KiB/job",
        ],
        rows,
    )
    lines += ["", f"Reproduce: `{report['command']}`", ""]
    return lines


CANDIDATE_LABELS = {
    "today": "both webhooks, v1beta1 served, no matchConditions (before)",
    "match-conditions": "+ matchConditions (**the install now**)",
    "mutate-only": "validating webhook removed (one call)",
    "two-workers": "webhook with 2 gunicorn workers",
    "no-webhooks": "no webhooks (floor; job stored as written)",
    "no-webhooks-defaulted": "no webhooks, job sent defaulted (stored as with them)",
    "no-v1beta1": "v1beta1 not served",
    "lean": "matchConditions + v1beta1 not served (install option)",
}


def admission_cost_section(report: Mapping[str, Any]) -> list[str]:
    """Per-job cost of each way of installing the admission path (``bench.admission_cost``)."""
    candidates = report["candidates"]
    first = next(iter(candidates))
    jobs = report["jobs_per_candidate"]
    lines = [
        "## 2b. What admission costs the API server, per job",
        "",
        f"{jobs} MXJobs per candidate on one control plane, from {report['threads']} threads, "
        "candidates in A B … B A order after a warm-up; each job is created, labelled (a "
        "metadata-only merge PATCH, as `kubectl label`) and deleted in the foreground (the "
        "garbage collector's finalizer removal is another metadata-only UPDATE). Webhook calls "
        "are the API server's own counts (`apiserver_admission_webhook_request_total`, and the "
        "CRD conversion histogram); CPU is `/proc` of kube-apiserver, etcd and every webhook "
        "process; bytes are what etcd stores per job, read from etcd. Each segment checks the "
        "API server made exactly the calls its candidate configures.",
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
    lines += _table(
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
    lines += [
        "",
        f"Ratios are to the first row. Life = create + label + foreground delete. Reproduce: "
        f"`{report['command']}`",
        "",
    ]
    return lines


def raw_limit_section(report: Mapping[str, Any]) -> list[str]:
    """Phase A against the raw API server doing the same creations, with the CPU split."""
    runs = [r for r in report["runs"] if "runs" in r.get("raw_baseline", {})]
    if not runs:
        return []
    lines = [
        "## The physical limit: the raw API server",
        "",
        "The raw baseline POSTs everything a user and the operator create (every MXJob, defaulted "
        "as the mutating webhook stores it, without webhooks registered; then the same pods and "
        "Services) from 8 threads, its clock stopped by the same watches as phase A's. It runs "
        "after a warm-up (a fifth of the jobs, not counted) and twice: before the pods-and-"
        "Services baseline and again after this controller's phases, so drift falls on both "
        "sides of phase A; its figure is the mean. Phase A also writes what the raw client "
        "does not: one status and two Events per job, and the webhook calls.",
        "",
    ]
    rows = []
    for run in runs:
        raw, a = run["raw_baseline"], run["phase_a"]
        rows.append(
            [
                run["jobs"],
                raw["objects"],
                " / ".join(str(r["seconds"]) for r in raw["runs"]),
                raw["seconds"],
                a["seconds"],
                f"{a['ratio_to_raw']:.2f}",
                run["baseline"]["seconds"],
                f"{a['ratio_to_baseline']:.2f}",
            ]
        )
    lines += _table(
        [
            "jobs",
            "raw objects",
            "raw s (before / after)",
            "raw s (mean)",
            "phase A s",
            "phase A / raw",
            "pods-and-Services baseline s",
            "phase A / that baseline (old ratio)",
        ],
        rows,
    )
    lines += [
        "",
        "Where the CPU goes (seconds; 2 cores: twice the wall time is all there is):",
        "",
    ]
    rows = []
    for run in runs:
        raw, a = run["raw_baseline"], run["phase_a"]
        for label, cpu, wall, controller in (
            ("raw (mean)", raw["control_plane_cpu_s"], raw["seconds"], 0.0),
            ("phase A", a["control_plane_cpu_s"], a["seconds"], a["controller_cpu_s"]),
        ):
            measured = sum(cpu.values()) + controller
            rows.append(
                [
                    run["jobs"],
                    label,
                    cpu.get("kube-apiserver", "-"),
                    cpu.get("etcd", "-"),
                    cpu.get("kube-controller-manager", "-"),
                    controller if label == "phase A" else "-",
                    round(measured, 2),
                    round(2 * wall, 2),
                ]
            )
    lines += _table(
        [
            "jobs",
            "run",
            "kube-apiserver",
            "etcd",
            "kube-controller-manager",
            "controller",
            "sum measured",
            "2 cores x wall s",
        ],
        rows,
    )
    lines += ["", f"Reproduce: `{report['command']}` (`raw_baseline` of its JSON)", ""]
    return lines


def scheduler_section(report: Mapping[str, Any]) -> list[str]:
    """Growth on kube-scheduler and kwok nodes: a table per size, then what stayed flat."""
    runs = report["runs"]
    lines = [
        "## Growth on a real scheduler: cost per job from 100 to 5,000 jobs",
        "",
        "A fresh control plane per size running kube-scheduler (client raised to 500 "
        "requests/s, burst 1,000: its default 50/s would make it the clock; PodTopologySpread's "
        "cluster-wide default constraints off: with them, placing a pod costs more the more "
        "Services and pods the namespace holds, and binding fell to 6 pods/s at 13,000 pods, "
        "see docs/operations.md) and kwok "
        "(`localkube.thirdparty.kwok`: simulated nodes of 110 pods, enough for every pod; its "
        "stages make "
        "a bound pod Running and end a pod the driver annotates with its exit code), the "
        "webhook registered and `mxjob-controller` watching the run's namespace. Jobs of 1 "
        "scheduler, 1 server and 2 workers (`cleanPodPolicy: Running`, no grace period) are "
        "submitted at once from 8 threads; once every job is Running every scheduler pod exits "
        "0, and the run ends when every job is Succeeded and only the schedulers are left. "
        "Times from the driver's watches; the controller's writes are its own count plus the "
        "Events the API server counted; CPU and RSS from `/proc`.",
        "",
    ]
    for run in runs:
        load = ", ".join(str(x) for x in run.get("machine", {}).get("load_average", []))
        lines += [
            f"### {run['jobs']:,} jobs ({run['pods']:,} pods, {run['nodes']} nodes)",
            "",
            f"Load average (1, 5, 15 min) at the end: {load or 'not measured'}.",
            "",
        ]
        lines += _table(
            ["figure", "value", "per job"],
            [
                [
                    "every pod and Service exists",
                    f"{run['all_created_s']} s",
                    f"{run['ms_per_job']['created']} ms",
                ],
                ["every pod bound", f"{run['all_bound_s']} s", "-"],
                [
                    "every job Running",
                    f"{run['all_running_s']} s",
                    f"{run['ms_per_job']['running']} ms",
                ],
                [
                    "every job Succeeded and cleaned",
                    f"{run['succeeded_and_cleaned_s']} s",
                    f"{run['ms_per_job']['succeeded_and_cleaned']} ms",
                ],
                [
                    "controller writes",
                    sum(run["controller_writes"].values()),
                    run["controller_writes_per_job"],
                ],
                [
                    "controller CPU",
                    f"{run['controller_cpu_s']} s",
                    f"{run['controller_cpu_ms_per_job']} ms",
                ],
                [
                    "controller reconciles (changes seen, and every job each resync period)",
                    f"{run.get('controller_cpu_ms_per_reconcile', '-')} ms CPU each",
                    run.get("controller_reconciles_per_job", "-"),
                ],
                [
                    "controller RSS, every pod cached",
                    f"{run['controller_rss_every_pod_cached_mib']} MiB",
                    f"{run['rss_growth_kib_per_pod']} KiB per pod over its start",
                ],
                ["controller peak RSS", f"{run['controller_peak_rss_mib']} MiB", "-"],
                [
                    "kube-apiserver / etcd / kube-scheduler / kwok CPU",
                    " / ".join(
                        f"{run['control_plane_cpu_s'].get(name, 0)} s"
                        for name in ("kube-apiserver", "etcd", "kube-scheduler")
                    )
                    + f" / {run['kwok_cpu_s']} s",
                    "-",
                ],
            ],
        )
        dropped = run.get("controller_events_dropped", "not measured")
        lines += [
            "",
            f"Controller writes: {_requests(run['controller_writes'])}; Events dropped: {dropped}.",
            "",
        ]
    flat = report.get("flatness") or {}
    if flat:
        lines += [
            f"Flat from {flat['from_jobs']:,} to {flat['to_jobs']:,} jobs (largest size's "
            "per-job figure over the smallest's; flat within 1.25; times are shown, not "
            "judged: the API server, etcd, kube-scheduler and kwok share the two cores):",
            "",
        ]
        lines += _table(
            ["per job", "ratio", "flat"],
            [
                [name, value["ratio"], (_yes(value["flat"]) if value["judged"] else "(shown)")]
                for name, value in flat.items()
                if isinstance(value, Mapping)
            ],
        )
        lines.append("")
    lines += [
        f"RSS predicted at {report['target_pods']:,} pods from the largest size's growth per "
        f"pod: {report['predicted_rss_at_target_mib']} MiB (target ≤ "
        f"{report['target_rss_mib']:.0f} MiB: {_yes(report['meets_rss_target'])}).",
        "",
        f"Reproduce: `{report['command']}` ({report.get('duration_s', '?')} s).",
        "",
    ]
    return lines


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
    if "scheduler_scale" in results:
        lines += scheduler_section(results["scheduler_scale"])
    if "webhook_load" in results:
        lines += webhook_section(results["webhook_load"])
    if "admission_overhead" in results:
        lines += admission_section(results["admission_overhead"])
    if "admission_cost" in results:
        lines += admission_cost_section(results["admission_cost"])
    if "controller_scale" in results:
        lines += scale_section(results["controller_scale"])
    if notes:
        lines += [notes.strip(), ""]
    return "\n".join(lines)
