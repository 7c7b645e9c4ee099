"""The job's story as the controller writes it: condition types and reasons, and Events.

The reasons are not listed by hand: :mod:`docgen.reasons` finds every call that writes one
(``set_condition``, ``EventSpec``, ``Notice``, ``EventRecorder.record``) and follows its
arguments back to their values. What stays written here is one line per reason on what it
means, and the reasons that come from data (the kubelet's, Kueue's); a reason found without a
line, or a line for a reason the code no longer writes, stops ``make generate``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from controller.job.observed import CANNOT_START_REASONS
from docgen.markdown import code, codes, page, table
from docgen.reasons import Dynamic, Sink, Source, Value
from docgen.sources import attribute_docs
from shared.conditions import ConditionType
from shared.constants import KIND

CONDITIONS = Sink("set_condition", {"type": (None, "type"), "status": (None, "status"),
                                    "reason": (None, "reason")})  # fmt: skip
EVENTS = (
    Sink("EventSpec", {"type": (0, "type"), "reason": (1, "reason")}),
    Sink("Notice", {"reason": (0, "reason"), "type": (2, "type")}, {"type": "Normal"}),
    Sink("record", {"type": (1, "event_type"), "reason": (2, "reason"), "kind": (None, "kind")}),
)
WAITS = Sink("Wait", {"reason": (0, "reason")})
FORWARDED = "forwarded"
"""A reason handed on (an ``EventSpec`` or ``Notice`` being recorded), found where it is made."""

TYPE_TEXT = {
    ConditionType.CREATED: "The controller has seen the job.",
    ConditionType.RUNNING: "Every pod of the job runs (False while a pod cannot start).",
    ConditionType.RESTARTING: "Replicas are being restarted after a retryable end.",
    ConditionType.SUCCEEDED: "The job succeeded: the replicas that decide it exited 0.",
    ConditionType.FAILED: "The job failed; the reason says why.",
    ConditionType.SUSPENDED: "runPolicy.suspend is true: the job has no pods.",
}
"""What each condition type means; Pending's docstring in shared/conditions.py says it."""

REASON_TEXT = {
    "MXJobCreated": "The job was seen for the first time.",
    "MXJobRunning": "The job's pods run.",
    "MXJobRestarting": "Replicas restart after a retryable end (a whole-job restart, pods made "
    "again, or containers restarted in place).",
    "MXJobSucceeded": "The job succeeded.",
    "MXJobFailed": "A replica ended with a permanent exit code.",
    "MXJobSuspended": "The job was suspended; its pods go.",
    "MXJobResumed": "The job was resumed.",
    "MXJobPending": "Something outside the job holds it back; the message says what.",
    "MXJobFailedValidation": "The job was stored without the validating webhook and is invalid.",
    "BackoffLimitExceeded": "More restarts than runPolicy.backoffLimit allows.",
    "DeadlineExceeded": "runPolicy.activeDeadlineSeconds passed.",
    "ProgressDeadlineExceeded": "No progress report for runPolicy.progressDeadlineSeconds: the "
    "job restarts as a whole (Progressing False), or fails once backoffLimit is spent.",
    "ProgressReported": "A progress report came after a restart for a lack of progress "
    "(Progressing True again).",
    "PodStartTimeout": "A pod could not start for the pod start timeout.",
    "ExitedWithCode": "How a replica's pod ended (its exit code) and what the controller does "
    "about it.",
    "ReplicasEnded": "Pods of a finished job ended by themselves within their grace period.",
    "SuccessfulCreatePod": "Pods created.",
    "SuccessfulCreateService": "Services created.",
    "SuccessfulDeletePod": "Pods deleted.",
    "SuccessfulDeleteService": "Services deleted.",
    "FailedCreatePod": "A pod could not be created; the message has the API server's error.",
    "FailedCreateService": "A Service could not be created.",
    "NameConflict": "An object of the name a replica needs exists and belongs to something else.",
    "ForeignObjectExists": "An object of the name of the job's PodDisruptionBudget, NetworkPolicy, "
    "PodGroup or Workload exists and is not the job's: it is left as it is (the message says "
    "whose it is); as the `Pending` reason, the job's pods wait for the name to be free.",
    "GangWaiting": "The job's pods exist but fewer than `minAvailable` are placed on nodes.",
    "GangFieldNotKept": "The API server dropped a field of the job's Workload or PodGroup.",
    "Unschedulable": "kube-scheduler finds no node for some of the job's pods.",
    "CreatedWorkload": "The Kueue Workload of a queued job was created.",
    "DeletedWorkload": "A Kueue Workload that no longer matches the job was deleted.",
    "FinishedWorkload": "The job's Kueue Workload was marked finished.",
    "Started": "Kueue admitted the job and the controller started it.",
    "Stopped": "The job was suspended: its Workload is gone, evicted or no longer admitted "
    "(the message says which).",
    "FailedToStart": "Kueue admitted the job but its pod sets cannot take the admission.",
    "CertificateIssued": "The webhook's serving certificate (or its CA) was made.",
    "CertificateReplaced": "A webhook certificate that could not be used was replaced.",
    "CABundleRepaired": "A webhook configuration's or the CRD's caBundle was put back.",
}


@dataclass(frozen=True)
class DataReasons:
    """Reasons read from data at run time: the ones the code knows, and what they are."""

    values: tuple[str, ...]
    text: str
    open: bool = False
    """Other values are possible too (another project's reasons)."""


def data_reasons(source: Source) -> dict[tuple[str, str], DataReasons | str]:
    """Every place a reason comes from data, and what it holds."""
    waits = sorted({str(v) for _, call in source.calls(WAITS) if isinstance(v := call["reason"],
                                                                            str)})  # fmt: skip
    return {
        ("controller.job.status.unstartable", "problem.reason"): DataReasons(
            tuple(sorted(CANNOT_START_REASONS)),
            "The kubelet's reason a container cannot start (a False Running condition and a "
            "Warning; after the pod start timeout the job fails with PodStartTimeout).",
        ),
        ("controller.job.status.waiting", "wait.reason"): DataReasons(
            tuple(waits),
            "What holds the job back, or Kueue's reason for not admitting its Workload "
            "(`WaitingForQuota`, `TopologyPlacementFailed`...).",
            open=True,
        ),
        ("controller.integrations.kueue.integration", "*held"): FORWARDED,
        **{("controller.job.reconciler", f"{o}.{a}"): FORWARDED
           for o in ("event", "notice") for a in ("type", "reason")},
    }  # fmt: skip


Known = dict[tuple[str, str], DataReasons | str]


def _reason(value: Value, known: Known) -> tuple[str, str] | None:
    """A resolved reason as (its cell, its meaning); None when it is handed on."""
    if isinstance(value, str):
        if value not in REASON_TEXT:
            raise ValueError(f"say in docgen/story.py REASON_TEXT what {value} means")
        return code(value), REASON_TEXT[value]
    if isinstance(value, Dynamic):
        found = known.get((value.module, value.expression))
        if found is None:
            raise ValueError(f"say in docgen/story.py data_reasons what {value} holds")
        if isinstance(found, DataReasons):
            return codes(found.values) + (" or another" if found.open else ""), found.text
        return None
    raise ValueError(f"not a reason: {value!r}")


def _plain(values: Iterable[Value]) -> set[str]:
    return {v for v in values if isinstance(v, str)}


def conditions(source: Source, known: Known) -> tuple[str, set[str]]:
    """The condition section, and the reasons it names."""
    docs = attribute_docs(ConditionType)
    texts = {t: TYPE_TEXT.get(t) or docs.get(t.name, "") for t in ConditionType}
    if not all(texts.values()):
        raise ValueError("say in docgen/story.py TYPE_TEXT what each condition type means")
    order = list(ConditionType)
    calls = sorted(
        (call for _, call in source.calls(CONDITIONS)),
        key=lambda c: (order.index(ConditionType(str(c["type"]))), c["status"] is not True),
    )
    rows: list[list[str]] = []
    for call in calls:
        reason = _reason(call["reason"], known)
        row = [code(call["type"]), code(call["status"]), *(reason or ("", ""))]
        if row not in rows:
            rows.append(row)
    return page(
        "## Conditions",
        "`status.conditions` holds one condition per type; `kubectl get mxjobs` shows the "
        "state they make (`STATE`) and the Pending reason (`WAITING`).",
        table(["Type", "Meaning"], [[code(t.value), texts[t]] for t in ConditionType]),
        "The reasons the controller writes, by type and status:",
        table(["Type", "Status", "Reason", "Meaning"], rows),
    ), _plain(call["reason"] for call in calls)


def events(source: Source, known: Known) -> tuple[str, set[str]]:
    """The Event section, and the reasons it names."""
    found: dict[str, tuple[set[str], set[str], str]] = {}
    named: set[str] = set()
    for sink in EVENTS:
        for _, call in source.calls(sink):
            reason = _reason(call["reason"], known)
            if reason is None:
                continue
            types, kinds, _ = found.setdefault(reason[0], (set(), set(), reason[1]))
            types.add(str(call["type"]))
            kinds.add(str(call.get("kind") or KIND))
            named |= _plain([call["reason"]])
    rows = [
        [cell, ", ".join(sorted(types)), ", ".join(sorted(kinds)), text]
        for cell, (types, kinds, text) in sorted(found.items())
    ]
    return page(
        "## Events",
        "`kubectl describe mxjob` lists them. With the controller's `--events=warnings` only "
        "the Warning ones are written.",
        table(["Reason", "Type", "On", "Meaning"], rows),
    ), named


def render() -> str:
    source = Source()
    known = data_reasons(source)
    condition_part, in_conditions = conditions(source, known)
    event_part, in_events = events(source, known)
    waits = {v for d in known.values() if isinstance(d, DataReasons) for v in d.values}
    unused = set(REASON_TEXT) - in_conditions - in_events - waits
    if unused:
        raise ValueError(f"docgen/story.py describes reasons the code does not write: {unused}")
    return page(condition_part, event_part)
