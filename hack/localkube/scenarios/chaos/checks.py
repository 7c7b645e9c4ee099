"""The invariants a chaos run checks once its jobs have finished, each a function of what the
run saw (:class:`Evidence`) to an :class:`Invariant` row of the report."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localkube.scenarios.chaos.plan import INTENDED, NAMESPACE, RECOVERY_LIMIT, TERMINAL, JobPlan
from localkube.scenarios.chaos.report import Fault, Invariant
from localkube.scenarios.chaos.watch import History


@dataclass(frozen=True)
class Evidence:
    """What the checks read: the plans, the jobs' final statuses, what the watches saw, the
    API server's audit log, the faults and the controller's fate."""

    jobs: dict[str, JobPlan]
    final: dict[str, dict[str, Any]]
    """job → its status as last read"""
    history: History
    audit_log: Path
    logs: Path
    """Where the controllers' logs (``controller-*.log``) are."""
    faults: list[Fault]
    controller_processes: int
    controller_kills: int
    controller_crashes: int
    create_retries: int
    failpoints: tuple[str, ...] = ()
    """The points of a restart a controller was armed to die at, one process each."""
    failpoint_kills: tuple[str, ...] = ()
    """The points that did kill one."""


def outcomes(e: Evidence) -> Invariant:
    """Every job reached the terminal state (and restart count) its script intended."""
    problems = []
    for name, plan in sorted(e.jobs.items()):
        state, restarts = INTENDED[plan.script]
        got = e.final.get(name, {})
        if got.get("state") != state or int(got.get("restartCount") or 0) != restarts:
            problems.append(
                f"{name} ({plan.script}): {got.get('state')} with {got.get('restartCount')} "
                f"restarts, intended {state} with {restarts}"
            )
    by_script = Counter(p.script for p in e.jobs.values() if not p.probe)
    return Invariant(
        "every job reached the terminal state its script intended",
        not problems,
        f"{len(e.jobs) - len(problems)} / {len(e.jobs)} jobs ({by_script['succeed']} succeed, "
        f"{by_script['retry']} exit 137 then succeed, {by_script['fail']} exit 1, "
        f"{sum(p.probe for p in e.jobs.values())} probes)",
        problems,
    )


def audit_creations(audit_log: Path) -> tuple[Counter[str], Counter[str]]:
    """Pod creations the API server accepted, and those it refused as AlreadyExists."""
    created: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for line in audit_log.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError):
            event = json.loads(line)
            ref = event["objectRef"]
            if (
                event["verb"] != "create"
                or ref.get("namespace") != NAMESPACE
                or ref.get("subresource")
            ):
                continue
            code = event.get("responseStatus", {}).get("code", 0)
            name = ref.get("name") or ""
            if code == 201:
                created[name] += 1
            elif code == 409:
                refused[name] += 1
    return created, refused


def _generations(history: History, name: str) -> list[str]:
    """The uids of pod ``name``, in the order they were created."""
    uids = history.pod_seen.get(name, {})
    return sorted(uids, key=lambda u: history.pod_created_rv.get(u, uids[u][0][0]))


def replacements(history: History) -> tuple[int, int, list[str]]:
    """Pods that replaced another in their slot: how many, how many were seen created after
    their predecessor Failed, and those created before it did."""
    count = verified = 0
    problems = []
    for name, uids in history.pod_seen.items():
        for previous, current in itertools.pairwise(_generations(history, name)):
            count += 1
            failed = [rv for rv, phase, _ in uids[previous] if phase == "Failed"]
            created_rv = history.pod_created_rv.get(current)
            if failed and created_rv is not None:
                verified += 1
                if created_rv <= min(failed):
                    problems.append(f"{name}: {current} created before {previous} failed")
    return count, verified, problems


def attempts_apart(history: History, jobs: dict[str, JobPlan]) -> list[str]:
    """A job restarted as a whole makes its new pods only once every old one is gone: no pod
    of its second generation was created before the last event of one of its first."""
    problems = []
    for plan in jobs.values():
        old_events: list[int] = []
        new_created: list[int] = []
        for slot in plan.slots:
            uids = _generations(history, slot)
            if uids:
                old_events += [rv for rv, _, _ in history.pod_seen[slot][uids[0]]]
            if len(uids) > 1 and uids[1] in history.pod_created_rv:
                new_created.append(history.pod_created_rv[uids[1]])
        if old_events and new_created and min(new_created) <= max(old_events):
            problems.append(f"job {plan.name}: a new attempt's pod made while an old one lived")
    return problems


def pod_creations(e: Evidence) -> Invariant:
    """No duplicate pods: creations per slot exactly as scripted, replacements after failure.

    A slot's creations are what the audit log accepted, or the pods of that name the watch saw
    if it saw more: a create that reached etcd while kube-apiserver was stopping may never get
    its ResponseComplete audit entry, and a pod seen is a pod created. Either source showing one
    pod too many is a duplicate."""
    created, refused = audit_creations(e.audit_log)
    for name, uids in e.history.pod_seen.items():
        created[name] = max(created[name], len(uids))
    problems = []
    expected: Counter[str] = Counter()
    for plan in e.jobs.values():
        expected.update(plan.expected_creations())
    for name in sorted(set(expected) | set(created)):
        if created[name] != expected[name]:
            problems.append(f"{name}: created {created[name]} times, scripted {expected[name]}")
    replaced, verified, premature = replacements(e.history)
    premature += attempts_apart(e.history, e.jobs)
    return Invariant(
        "no two pods for one replica slot (no duplicate, no premature replacement)",
        not problems and not premature,
        f"{sum(created.values())} pod creations for {len(expected)} slots, "
        f"{sum(expected.values())} scripted; {replaced} replacements, {verified} seen "
        f"created after their predecessor Failed; {sum(refused.values())} creates refused "
        "as AlreadyExists",
        problems + premature,
    )


def restart_counts(e: Evidence) -> Invariant:
    """No job's restartCount and no pod's container restartCount ever went down."""
    down = []
    for name, states in e.history.job_states.items():
        for (_, _, before), (_, _, after) in itertools.pairwise(sorted(states)):
            if after < before:
                down.append(f"job {name}: restartCount {before} → {after}")
    for name, uids in e.history.pod_seen.items():
        for uid, seen in uids.items():
            counts = [c for _, _, c in sorted(seen)]
            if any(b < a for a, b in itertools.pairwise(counts)):
                down.append(f"pod {name} {uid}: restartCount {counts}")
    return Invariant(
        "no restart count went down",
        not down,
        f"{sum(len(s) for s in e.history.job_states.values())} job status observations, "
        f"{sum(len(u) for u in e.history.pod_seen.values())} pods followed",
        down,
    )


def terminal_states(e: Evidence) -> Invariant:
    """No job left a terminal state once it reached one, in the watches or in its final read."""
    changed = []
    for name, states in e.history.job_states.items():
        timeline = sorted(states)
        terminal = [s for _, s, _ in timeline if s in TERMINAL]
        if not terminal:
            continue
        first = next(i for i, (_, s, _) in enumerate(timeline) if s in TERMINAL)
        later = {s for _, s, _ in timeline[first:]}
        if later != {terminal[0]}:
            changed.append(f"job {name}: {terminal[0]} then {sorted(later)}")
        final_state = e.final.get(name, {}).get("state")
        if final_state != terminal[0]:
            changed.append(f"job {name}: {terminal[0]} then finally {final_state}")
    return Invariant(
        "no terminal state changed",
        not changed,
        f"{sum(1 for s in e.final.values() if s.get('state') in TERMINAL)} terminal jobs "
        "re-read 3 s after the last one finished",
        changed,
    )


def recovery(e: Evidence) -> Invariant:
    """The operator admitted and started a probe within the limit after every fault."""
    slow = [
        f"{f.kind} at {f.started:.1f} s: "
        + ("never" if f.recovered_after is None else f"{f.recovered_after:.2f} s")
        for f in e.faults
        if f.recovered_after is None or f.recovered_after > RECOVERY_LIMIT
    ]
    times = sorted(f.recovered_after for f in e.faults if f.recovered_after is not None)
    worst = f"{times[-1]:.2f}" if times else "—"
    median = f"{times[len(times) // 2]:.2f}" if times else "—"
    return Invariant(
        f"the operator recovered from each fault within {RECOVERY_LIMIT:.0f} s",
        not slow and len(e.faults) > 0,
        f"{len(e.faults)} faults; recovery median {median} s, worst {worst} s",
        slow,
    )


def no_crashes(e: Evidence) -> Invariant:
    """The controller never died on its own."""
    return Invariant(
        "the controller never crashed",
        e.controller_crashes == 0,
        f"{e.controller_crashes} exits nobody asked for, {e.controller_kills} SIGKILLs",
        [f"{e.controller_crashes} unrequested exits; see controller-*.log"]
        if e.controller_crashes
        else [],
    )


def killed_at_each_failpoint(e: Evidence) -> Invariant:
    """A controller died at each point of a restart it was armed at (the other invariants say
    that nothing was lost or counted twice meanwhile)."""
    missing = [point for point in e.failpoints if point not in e.failpoint_kills]
    return Invariant(
        "the controller died at each point of a restart, once",
        not missing and sorted(e.failpoint_kills) == sorted(e.failpoints),
        ", ".join(e.failpoint_kills) or "none armed",
        [f"never reached: {', '.join(missing)}"] if missing else [],
    )


CHECKS: tuple[Callable[[Evidence], Invariant], ...] = (
    outcomes,
    pod_creations,
    restart_counts,
    terminal_states,
    recovery,
    no_crashes,
    killed_at_each_failpoint,
)
"""The invariants, in the report's order."""


def figures(e: Evidence) -> dict[str, str]:
    """Figures that explain the run."""
    gone = 0
    for log in sorted(e.logs.glob("controller-*.log")):
        gone += len(re.findall(r"\(410\)", log.read_text(errors="replace")))
    relists = e.history.relists
    return {
        "controller processes (1 + restarts after SIGKILL)": str(e.controller_processes),
        "controller watches that got 410 Gone and relisted": str(gone),
        "chaos watcher relists after 410 (mxjobs / pods)": (
            f"{relists.get('mxjobs', 0)} / {relists.get('pods', 0)}"
        ),
        "MXJob creates retried (API server or webhook away)": str(e.create_retries),
    }


def check(e: Evidence) -> tuple[list[Invariant], dict[str, str]]:
    """Every invariant, and the figures."""
    return [each(e) for each in CHECKS], figures(e)
