"""The top of ``docs/benchmarks.md``: this operator against training-operator, then against the
raw API server doing the same creations (both from ``bench.controller_scale``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from bench.report_tables import request_counts, table, verdict

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
        f"{verdict(ours['writes'] < theirs['writes'])}",
        f"no Event dropped ({dropped}): {verdict(dropped == 0)}",
    ]
    if name.endswith("-best"):
        faster = all(ours[k] < theirs[k] for k in ("pods_services_s", "running_s", "cleaned_s"))
        checks.insert(0, f"faster at every step: {verdict(faster)}")
    else:
        speedup = theirs["pods_services_s"] / ours["pods_services_s"]
        checks.insert(
            0,
            f"≥ {PEER_TARGET_SPEEDUP:.0f}x faster to every pod and Service ({speedup:.1f}x): "
            f"{verdict(speedup >= PEER_TARGET_SPEEDUP)}",
        )
    return f"- {run['jobs']} jobs, against {label}: " + "; ".join(checks)


def _over(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs else "-"


PEER_COLUMNS: Final = (
    "every pod and Service s",
    "every job Running s",
    "Succeeded + cleaned s",
    "API writes/job",
    "controller CPU s",
    "peak RSS MiB",
)
"""The figures of :func:`_figures`, in its order: both tables of the section share them."""


def _peer_intro() -> list[str]:
    """What is compared and how, before any figure: the peer, its two setups, the jobs."""
    return [
        "## Against training-operator",
        "",
        "The operator users migrate from, kubeflow training-operator v1.8.1 (only its MXJob "
        "controller, `--enable-scheme=mxjob`), built from the pinned module by "
        "`hack/build-training-operator.sh` and run by `localkube.thirdparty.training_operator` "
        "on the same control plane, in the same run, on the same jobs, one controller after "
        "the other, each in a fresh namespace (the previous one deleted first). Jobs: MXTrain of "
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


@dataclass
class PeerTables:
    """The section's tables, filled one size at a time.

    Every side's figures go in one table and ours over each peer's in the other, so each ratio
    sits beside the two rows it divides; the targets are judged on the same figures.
    """

    rows: list[list[Any]] = field(default_factory=list)
    ratio_rows: list[list[Any]] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)

    def add(self, run: Mapping[str, Any]) -> None:
        """The raw limit (when measured), this operator, then each peer that ran to the end."""
        ours = _figures(run)
        raw = run.get("raw_baseline")
        if raw:
            self.rows.append(
                [run["jobs"], RAW_LABEL, raw["posted_seconds"], raw["seconds"]]
                + ["-"] * (len(ours) - 1)
            )
        self.rows.append(
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
            self.rows.append(
                [
                    run["jobs"],
                    label,
                    peer["phase_a"]["submit_seconds"],
                    *theirs.values(),
                    _dropped(peer),
                ]
            )
            self.ratio_rows.append([run["jobs"], label, *(_over(ours[k], theirs[k]) for k in ours)])
            self.targets.append(_peer_targets(run, name, ours=ours, theirs=theirs))

    def lines(self) -> list[str]:
        """Every side's figures, ours over each peer's, then the targets."""
        header = ["jobs", "controller", "jobs submitted s", *PEER_COLUMNS, "Events dropped"]
        lines = table(header, self.rows)
        lines += ["", "mxjob-operator / training-operator:", ""]
        lines += table(["jobs", "against", *PEER_COLUMNS], self.ratio_rows)
        lines += ["", "Targets:", "", *self.targets]
        return lines


def _peer_notes() -> list[str]:
    """How each figure of the tables was measured, so a reader can weigh it."""
    return [
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


def _whole_run_requests(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each side's requests over the jobs' whole life: where the writes per job come from."""
    lines = []
    for run in runs:
        for name, side in (("mxjob-operator", run), *run["peers"].items()):
            if "whole_run" in side:
                lines.append(
                    f"- {run['jobs']} jobs, {PEER_LABELS.get(name, name)}: "
                    f"{request_counts(side['whole_run']['controller_requests'])}"
                )
    return lines


def peer_section(report: Mapping[str, Any]) -> list[str]:
    """The top of the page: this operator against training-operator, same jobs, same run."""
    runs = [r for r in report["runs"] if r.get("peers") and "phase_b" in r]
    if not runs:
        return []
    tables = PeerTables()
    for run in runs:
        tables.add(run)
    return [
        *_peer_intro(),
        *tables.lines(),
        *_peer_notes(),
        *_whole_run_requests(runs),
        "",
        f"Reproduce: `{report['command']}`",
        "",
    ]


RAW_TIMES_HEADER: Final = (
    "jobs",
    "raw objects",
    "raw s (before / after)",
    "raw s (mean)",
    "phase A s",
    "phase A / raw",
    "pods-and-Services baseline s",
    "phase A / that baseline (old ratio)",
)
RAW_CPU_HEADER: Final = (
    "jobs",
    "run",
    "kube-apiserver",
    "etcd",
    "kube-controller-manager",
    "controller",
    "sum measured",
    "2 cores x wall s",
)


def _raw_times(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each size's raw runs beside phase A and the pods-and-Services baseline, with ratios."""
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
    return table(RAW_TIMES_HEADER, rows)


def _raw_cpu_rows(run: Mapping[str, Any]) -> list[list[Any]]:
    """The raw runs' mean and phase A of one size: each process's CPU against what 2 cores had."""
    raw, a = run["raw_baseline"], run["phase_a"]
    rows = []
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
    return rows


def raw_limit_section(report: Mapping[str, Any]) -> list[str]:
    """Phase A against the raw API server doing the same creations, with the CPU split."""
    runs = [r for r in report["runs"] if "runs" in r.get("raw_baseline", {})]
    if not runs:
        return []
    return [
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
        *_raw_times(runs),
        "",
        "Where the CPU goes (seconds; 2 cores: twice the wall time is all there is):",
        "",
        *table(RAW_CPU_HEADER, [row for run in runs for row in _raw_cpu_rows(run)]),
        "",
        f"Reproduce: `{report['command']}` (`raw_baseline` of its JSON)",
        "",
    ]
