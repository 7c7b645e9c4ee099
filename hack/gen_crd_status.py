"""The MXJob CRD's status schema, for ``hack/gen_crd.py``: what the controller writes.

Structural schemas prune what they do not name, so every field the controller writes to
``status`` is here (``controller/job/status/``, ``controller/job/recovery.py``).
"""

from __future__ import annotations

from typing import Any


def non_negative(description: str) -> dict[str, Any]:
    return {"type": "integer", "format": "int32", "minimum": 0, "description": description}


def _replica_statuses() -> dict[str, Any]:
    status = {
        "type": "object",
        "properties": {
            "active": non_negative("Pods of this type that are pending or running."),
            "succeeded": non_negative("Pods of this type that exited 0."),
            "failed": non_negative("Pods of this type that failed."),
            "selector": {"type": "string", "description": "Label selector of these pods."},
        },
    }
    return {"type": "object", "additionalProperties": status}


def _restart_entry() -> dict[str, Any]:
    text = {"type": "string"}
    return {
        "type": "object",
        "properties": {
            "time": {"type": "string", "format": "date-time"},
            "scope": {**text, "description": "Job (a new attempt) or Replica (its pod alone)."},
            "attempt": non_negative("The attempt that ran after this restart."),
            "replicaType": text,
            "index": non_negative("The replica's index."),
            "pod": {**text, "description": "The pod whose end caused the restart."},
            "podUID": text,
            "exitCode": {"type": "integer", "format": "int32"},
            "reason": {**text, "description": "The kubelet's or the pod's reason (OOMKilled...)."},
            "disruption": {**text, "description": "The DisruptionTarget reason, if any."},
            "countedAgainstBackoff": {"type": "boolean"},
        },
    }


def status_schema(*, replica_statuses_key: str) -> dict[str, Any]:
    condition = {
        "type": "object",
        "required": ["type", "status"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastUpdateTime": {"type": "string", "format": "date-time"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    }
    return {
        "type": "object",
        "description": "The observed state of the job, written by the controller.",
        "properties": {
            "conditions": {"type": "array", "items": condition},
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
            "restarts": {
                "type": "array",
                "description": "The newest restarts (at most 10): which replica ended how.",
                "items": _restart_entry(),
            },
            "startTime": {"type": "string", "format": "date-time"},
            "completionTime": {"type": "string", "format": "date-time"},
            "lastReconcileTime": {"type": "string", "format": "date-time"},
        },
    }
