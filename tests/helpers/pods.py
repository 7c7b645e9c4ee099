"""The tests' one pod factory: :func:`pod` for a pod to create or to hand to a kubelet, and
:func:`pod_status` for the status a kubelet writes on one.

A pod's status is what the controller reads to decide a job's fate (a container's exit code, a
restart count, a ``DisruptionTarget`` condition), so the tests that feed it statuses write them
one way, here, as a kubelet does. The pods the controller itself makes are built by
``controller.job.desired.build_pod`` and given a status from here
(``tests/controller/samples.py``); containers are :func:`tests.helpers.mxjobs.container`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from tests.helpers.mxjobs import container

Obj = dict[str, Any]

NOW_TEXT = "2030-01-02T03:04:05Z"
"""When a sample container started and a sample condition last changed: one fixed instant, so
two statuses built alike compare equal."""


def pod(
    name: str,
    *,
    namespace: str | None = None,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    containers: Sequence[Mapping[str, Any]] | None = None,
    init_containers: Sequence[Mapping[str, Any]] | None = None,
    restart_policy: str | None = None,
    grace_seconds: int | None = None,
    spec: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> Obj:
    """A pod of ``containers`` (default: one ``mxnet`` container), or of the whole pod ``spec``
    given (a Deployment's template's); ``status`` as :func:`pod_status` or a test writes it."""
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if uid is not None:
        meta["uid"] = uid
    if labels is not None:
        meta["labels"] = dict(labels)
    found: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    if spec is not None:
        found["spec"] = copy.deepcopy(dict(spec))
    else:
        found["spec"] = _spec(
            containers, init_containers, restart_policy=restart_policy, grace_seconds=grace_seconds
        )
    if status is not None:
        found["status"] = copy.deepcopy(dict(status))
    return found


def _spec(
    containers: Sequence[Mapping[str, Any]] | None,
    init_containers: Sequence[Mapping[str, Any]] | None,
    *,
    restart_policy: str | None,
    grace_seconds: int | None,
) -> Obj:
    found: Obj = {}
    if restart_policy is not None:
        found["restartPolicy"] = restart_policy
    if init_containers is not None:
        found["initContainers"] = [copy.deepcopy(dict(c)) for c in init_containers]
    chosen = [container()] if containers is None else containers
    found["containers"] = [copy.deepcopy(dict(c)) for c in chosen]
    if grace_seconds is not None:
        found["terminationGracePeriodSeconds"] = grace_seconds
    return found


def container_status(
    name: str = "mxnet",
    *,
    phase: str = "Running",
    exit_code: int | None = None,
    restarts: int = 0,
    last_exit_code: int | None = None,
    finished_at: str | None = None,
    started_at: str = NOW_TEXT,
) -> Obj:
    """One container's status: terminated with ``exit_code`` when there is one, else running in
    a ``Running`` pod and waiting (``ContainerCreating``) in any other; ``last_exit_code`` is the
    previous instance's, as a kubelet keeps it after a restart in place."""
    state: Obj
    if exit_code is not None:
        reason = "Error" if exit_code else "Completed"
        state = {"terminated": {"exitCode": exit_code, "reason": reason}}
        if finished_at is not None:
            state["terminated"]["finishedAt"] = finished_at
    elif phase == "Running":
        state = {"running": {"startedAt": started_at}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    found: Obj = {"name": name, "restartCount": restarts, "state": state}
    if last_exit_code is not None:
        found["lastState"] = {"terminated": {"exitCode": last_exit_code}}
    return found


def pod_status(
    *,
    phase: str = "Running",
    exit_code: int | None = None,
    restarts: int = 0,
    reason: str | None = None,
    last_exit_code: int | None = None,
    finished_at: str | None = None,
    disruption: str | None = None,
) -> Obj:
    """A pod's status with its ``mxnet`` container's (:func:`container_status`); ``reason`` is
    the pod's (``Evicted``...), ``disruption`` the reason of a ``DisruptionTarget`` condition (the
    eviction API, a preemption, a node going away)."""
    main = container_status(
        phase=phase,
        exit_code=exit_code,
        restarts=restarts,
        last_exit_code=last_exit_code,
        finished_at=finished_at,
    )
    found: Obj = {"phase": phase, "containerStatuses": [main]}
    if reason:
        found["reason"] = reason
    if disruption:
        found["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": disruption,
             "lastTransitionTime": NOW_TEXT}
        ]  # fmt: skip
    return found
