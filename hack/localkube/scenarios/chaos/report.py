"""The chaos run's figures: the faults it caused, the invariants it checked, as markdown for
``docs/explanation/recovery.md``. The figures name the run by its seed, not its date: the page
says what holds now, and a seed reproduces the run's fault schedule."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from localkube.scenarios.chaos.plan import ChaosConfig

REPORT_BEGIN: Final = "<!-- chaos:begin -->"
REPORT_END: Final = "<!-- chaos:end -->"


@dataclass
class Fault:
    kind: str
    started: float
    """Seconds since the run started."""
    detail: str = ""
    outage: float = 0.0
    """Seconds the control-plane component was away (its stop and start); 0 for the operator's
    own processes, whose restart is part of the operator's recovery."""
    recovered_after: float | None = None
    """Seconds from the end of the outage (for a killed operator process: the kill) until the
    operator had admitted a new MXJob and the controller had written its status."""


@dataclass
class Invariant:
    name: str
    ok: bool
    figure: str
    problems: list[str] = field(default_factory=list)


@dataclass
class ChaosReport:
    config: ChaosConfig
    seed: int
    duration: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    invariants: list[Invariant] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.invariants) and all(i.ok for i in self.invariants)

    def markdown(self) -> str:
        c = self.config
        lines = [
            f"A run with seed {self.seed}: "
            f"{c.jobs} jobs, {c.controller_kills} controller SIGKILLs, {c.webhook_kills} webhook "
            f"worker SIGKILL, {c.apiserver_restarts} kube-apiserver restart, {c.etcd_restarts} "
            f"etcd restart, {c.compactions} etcd compactions; {self.duration:.1f} s in all.",
            "",
            "| invariant | held | figure |",
            "| --- | --- | --- |",
        ]
        for inv in self.invariants:
            lines.append(f"| {inv.name} | {'yes' if inv.ok else '**no**'} | {inv.figure} |")
        lines += [
            "",
            "| fault | at (s) | component away (s) | operator recovered after (s) | detail |",
            "| --- | --- | --- | --- | --- |",
        ]
        for fault in self.faults:
            recovered = "—" if fault.recovered_after is None else f"{fault.recovered_after:.2f}"
            outage = f"{fault.outage:.1f}" if fault.outage else "—"
            lines.append(
                f"| {fault.kind} | {fault.started:.1f} | {outage} | {recovered} | {fault.detail} |"
            )
        lines += ["", "| figure | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in self.figures.items()]
        problems = [f"- {inv.name}: {p}" for inv in self.invariants for p in inv.problems[:20]]
        if problems:
            lines += ["", "Problems:", "", *problems]
        return "\n".join(lines) + "\n"


def write_report(report: ChaosReport, path: Path) -> None:
    """Replace the figures between the chaos markers of ``path`` (the prose stays)."""
    text = path.read_text() if path.exists() else f"{REPORT_BEGIN}\n{REPORT_END}\n"
    begin, end = text.index(REPORT_BEGIN) + len(REPORT_BEGIN), text.index(REPORT_END)
    path.write_text(text[:begin] + "\n" + report.markdown() + text[end:])
