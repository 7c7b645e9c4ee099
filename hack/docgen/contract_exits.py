"""The exit-code section of docs/reference/job-contract.md, from ``shared/exitcodes.py``.

Every code from 0 to 255 (and "no exit code") is run through the controller's own
classification, and the ranges are read off the result: the table cannot say one thing while
``classify_exit`` does another.
"""

from __future__ import annotations

from docgen.markdown import code, page, table
from shared.constants import RestartPolicy
from shared.defaults import DEFAULT_RESTART_POLICY
from shared.exitcodes import ExitClass, classify_exit, describe_exit

MAX_EXIT = 255
NO_CODE = "none (no exit code)"
EN_DASH = "\u2013"
NOTABLE = (0, 1, 2, 126, 127, 128, 130, 137, 138, 139, 143)
"""The codes whose meaning is worth a row of its own (``describe_exit`` names them)."""

WHAT_HAPPENS = {
    ExitClass.SUCCEEDED: (
        "The replica succeeded. The job succeeds when the replicas that decide it have: the "
        "Scheduler (MXTrain), the Tuner (MXTune), the Worker of a single-node job, or every "
        "Worker under `successPolicy: AllWorkers`."
    ),
    ExitClass.PERMANENT: (
        "The program chose to fail, or crashed: running it again would fail again. The job "
        "fails (`ExitedWithCode` event, then `MXJobFailed`)."
    ),
    ExitClass.RETRYABLE: (
        "Something outside the program ended it (a signal, an eviction, a preemption): it may "
        "succeed when run again. The operator restarts what the replica's `restartScope` says "
        "(the whole job, or the pod alone); the restart counts against `backoffLimit` unless a "
        "disruption caused it and `disruptionPolicy` is `Ignore`."
    ),
}
"""What the controller does with each class (controller/job/status/verdicts.py, restart.py)."""


def ranges() -> list[tuple[str, ExitClass]]:
    """Consecutive codes of one class, as ``a-b`` with an en dash, then "none" (no exit code)."""
    found: list[tuple[int, int, ExitClass]] = []
    for exit_code in range(MAX_EXIT + 1):
        kind = classify_exit(exit_code)
        if found and found[-1][2] is kind and found[-1][1] == exit_code - 1:
            found[-1] = (found[-1][0], exit_code, kind)
        else:
            found.append((exit_code, exit_code, kind))
    spans = [(str(a) if a == b else f"{a}{EN_DASH}{b}", kind) for a, b, kind in found]
    return [*spans, (NO_CODE, classify_exit(None))]


def render() -> str:
    if set(WHAT_HAPPENS) != set(ExitClass):
        raise ValueError(f"say what happens for every exit class: {list(ExitClass)}")
    classes = [[span if span == NO_CODE else code(span), kind.value] for span, kind in ranges()]
    notable: list[int | None] = [*NOTABLE, None]
    meanings = [
        [code(c) if c is not None else NO_CODE, describe_exit(c), classify_exit(c).value]
        for c in notable
    ]
    return page(
        "## Exit codes",
        f"With `restartPolicy: {RestartPolicy.EXIT_CODE.value}` (the default is "
        f"`{DEFAULT_RESTART_POLICY.value}`), the exit code of the `mxnet` container decides what "
        "happens to its replica. With `Never` any failure fails the job; with `Always` and "
        "`OnFailure` the kubelet restarts the container in place.",
        table(["Exit code", "Class"], classes),
        table(["Class", "What the operator does"], [[k.value, v] for k, v in WHAT_HAPPENS.items()]),
        "Codes with a meaning of their own:",
        table(["Exit code", "Meaning", "Class"], meanings),
    )
