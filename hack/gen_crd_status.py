"""The MXJob CRD's status schema, for ``hack/gen_crd.py``: what the controller writes.

Structural schemas prune what they do not name, so every field the controller writes to
``status`` is here (``controller/job/status/``, ``controller/job/recovery.py``). Every field has a
description: ``kubectl explain mxjob.status`` and docs/reference/api.md (made from this CRD by
``make generate``) show nothing else about it.
"""

from __future__ import annotations

from typing import Any

from shared.conditions import ConditionType


def non_negative(description: str) -> dict[str, Any]:
    return {"type": "integer", "format": "int32", "minimum": 0, "description": description}


def timestamp(description: str) -> dict[str, Any]:
    """An RFC 3339 time, as every time of a Kubernetes status."""
    return {"type": "string", "format": "date-time", "description": description}


def text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _names(values: list[str]) -> str:
    return ", ".join(values[:-1]) + " or " + values[-1]


def _replica_statuses() -> dict[str, Any]:
    status = {
        "type": "object",
        "properties": {
            "active": non_negative("Pods of this type that are pending or running."),
            "succeeded": non_negative("Pods of this type that exited 0."),
            "failed": non_negative("Pods of this type that failed."),
            "selector": text("Label selector of these pods."),
        },
    }
    return {
        "type": "object",
        "description": "Pod counts per replica type, keyed by type (Scheduler, Worker...).",
        "additionalProperties": status,
    }


def _restart_entry() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "time": timestamp("When the controller decided the restart."),
            "scope": text("Job (a new attempt) or Replica (its pod alone)."),
            "attempt": non_negative("The attempt that ran after this restart."),
            "replicaType": text("The replica type of the pod whose end caused the restart."),
            "index": non_negative("The replica's index."),
            "pod": text("The pod whose end caused the restart."),
            "podUID": text("The UID of that pod."),
            "exitCode": {
                "type": "integer",
                "format": "int32",
                "description": "The mxnet container's exit code; absent when the pod ended "
                "without one (evicted, preempted, its node lost).",
            },
            "reason": text("The kubelet's or the pod's reason (OOMKilled...)."),
            "disruption": text("The DisruptionTarget reason, if any."),
            "countedAgainstBackoff": {
                "type": "boolean",
                "description": "Whether this restart counted against runPolicy.backoffLimit "
                "(a disruption counts only under disruptionPolicy Count).",
            },
        },
    }


def _trainer_status() -> dict[str, Any]:
    """Kubeflow Trainer's TrainJob ``status.trainerStatus`` (its progress proposal), field for
    field: what the job's own pods report through the controller's progress endpoint."""
    return {
        "type": "object",
        "description": "The job's progress as its pods report it (the controller's progress "
        "endpoint writes it; docs/how-to/monitor.md). Absent until the first report.",
        "properties": {
            "progressPercentage": {
                "type": "integer",
                "format": "int32",
                "minimum": 0,
                "maximum": 100,
                "description": "How far the job is, in percent.",
            },
            "estimatedRemainingSeconds": {
                **non_negative("The reporter's estimate of the seconds left."),
                "format": "int64",
            },
            "metrics": {
                "type": "array",
                "description": "The newest values the job reported (loss, accuracy, the best "
                "latency of a tuning task...).",
                "maxItems": 32,
                "items": {
                    "type": "object",
                    "required": ["name", "value"],
                    "properties": {
                        "name": text("The metric's name."),
                        "value": text("Its value, as the job printed it."),
                    },
                },
            },
            "lastUpdatedTime": timestamp("When the controller received the newest report."),
        },
    }


def _condition() -> dict[str, Any]:
    types = [t.value for t in ConditionType]
    return {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": text(f"The condition's type: {_names(types)}."),
            "status": text("True or False."),
            "reason": text(
                "Why the condition last changed, in CamelCase (MXJobRunning, "
                "BackoffLimitExceeded...); a Pending condition carries the reason of what holds "
                "the job back (Kueue's, GangWaiting, Unschedulable)."
            ),
            "message": text("The same, for people."),
            "lastUpdateTime": timestamp("When the condition was last written."),
            "lastTransitionTime": timestamp("When the status last changed (True or False)."),
        },
    }


def status_schema(*, replica_statuses_key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "description": "The observed state of the job, written by the controller.",
        "properties": {
            "conditions": {
                "type": "array",
                "description": "The job's story: one condition per type, each with its newest "
                "reason. At most one of Running, Restarting, Succeeded and Failed is True.",
                "items": _condition(),
            },
            "state": {
                "type": "string",
                "description": "The current state: Created, Running, Restarting, Suspended, "
                "Succeeded or Failed.",
            },
            replica_statuses_key: _replica_statuses(),
            "restartCount": non_negative(
                "Restarts so far: whole-job ones, pods made again, in-place ones."
            ),
            "attempt": non_negative(
                "Whole-job restarts so far: the attempt whose pods run (0 or absent: the first)."
            ),
            "disruptionRestarts": non_negative(
                "Restarts, of restartCount, caused by a disruption (DisruptionTarget)."
            ),
            "inPlaceRestarts": {
                "type": "object",
                "description": "Per replica slot (<type>-<index>) whose pod restarted its "
                "container in place (restartPolicy OnFailure or Always): that pod and how many of "
                "its restarts restartCount counts. The controller's only record of them, so a "
                "restarted controller counts none twice; kept, even empty, for jobs that can "
                "restart in place.",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "podUID": text("The pod whose container restarts are counted."),
                        "restarts": non_negative("How many of them restartCount counts."),
                    },
                },
            },
            "restarts": {
                "type": "array",
                "description": "The newest restarts (at most 10): which replica ended how.",
                "items": _restart_entry(),
            },
            "startTime": timestamp(
                "When the job started: first reconciled while not suspended, set again when it "
                "resumes. runPolicy.activeDeadlineSeconds counts from it."
            ),
            "completionTime": timestamp("When the job succeeded or failed."),
            "lastReconcileTime": timestamp("When the controller last wrote this status."),
            "trainerStatus": _trainer_status(),
        },
    }
