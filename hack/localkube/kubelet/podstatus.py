"""Pod statuses as a kubelet writes them, built from the pod alone: pure functions, no I/O.

The test kubelet writes every status through ``pods/status`` (see
:mod:`localkube.kubelet.transitions`); what it writes is decided here, so that the shapes the
operator reads (the phase, the main container's state with its ``exitCode`` and ``reason``,
``restartCount`` and ``lastState``, the Ready condition, the pod's addresses) can be tested
without an API server, and so that each shape is built in one place: a pod that starts and a
pod whose container was restarted in place get the same Running status from :func:`running`.

The main container is ``mxnet`` (the one the MXJob controller reads), or the pod's only
container; the others share its state but never count restarts.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

MAIN_CONTAINER = "mxnet"
HOST_IP = "127.0.0.1"
"""The node's address: every pod's ``hostIP``, and the ``podIP`` of pods without their own."""


def now() -> str:
    """The current time as the API's timestamps spell it (seconds, UTC)."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def containers(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(pod.get("spec", {}).get("containers", []))


def main_container_name(pod: Mapping[str, Any]) -> str:
    """``mxnet``, or the name of the pod's only container."""
    names = [str(c.get("name")) for c in containers(pod)]
    return MAIN_CONTAINER if MAIN_CONTAINER in names or len(names) != 1 else names[0]


def main_status(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The main container's status as last written ({} before the first)."""
    statuses = pod.get("status", {}).get("containerStatuses", []) or []
    for status in statuses:
        if status.get("name") == MAIN_CONTAINER:
            return dict(status)
    return dict(statuses[0]) if len(statuses) == 1 else {}


def restart_count(pod: Mapping[str, Any]) -> int:
    return int(main_status(pod).get("restartCount", 0))


def last_state(pod: Mapping[str, Any]) -> dict[str, Any]:
    return dict(main_status(pod).get("lastState", {}) or {})


def conditions(*, ready: bool) -> list[dict[str, Any]]:
    """The pod's conditions: scheduled and initialized; ready as told."""
    stamp = now()
    flag = "True" if ready else "False"
    return [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp},
        {"type": "Initialized", "status": "True", "lastTransitionTime": stamp},
        {"type": "ContainersReady", "status": flag, "lastTransitionTime": stamp},
        {"type": "Ready", "status": flag, "lastTransitionTime": stamp},
    ]


def container_statuses(
    pod: Mapping[str, Any],
    state: dict[str, Any],
    *,
    restart_count: int,
    ready: bool,
    last_state: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every container in ``state``; only the main one carries restarts and a last state."""
    main = main_container_name(pod)
    return [
        {
            "name": container.get("name"),
            "image": container.get("image", ""),
            "imageID": "",
            "containerID": f"localkube://{pod['metadata']['uid']}-{container.get('name')}",
            "ready": ready,
            "started": "running" in state,
            "restartCount": restart_count if container.get("name") == main else 0,
            "state": state,
            "lastState": (last_state or {}) if container.get("name") == main else {},
        }
        for container in containers(pod)
    ]


def terminated_state(
    pod: Mapping[str, Any], *, exit_code: int, reason: str | None = None, message: str | None = None
) -> dict[str, Any]:
    """The ``terminated`` state of a container that exited with ``exit_code``; the reason is
    ``Completed`` (0) or ``Error`` unless given."""
    terminated: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason or ("Completed" if exit_code == 0 else "Error"),
        "startedAt": pod.get("status", {}).get("startTime") or now(),
        "finishedAt": now(),
    }
    if message:
        terminated["message"] = message
    return {"terminated": terminated}


def addresses(pod_ip: str) -> dict[str, Any]:
    """The node's and the pod's addresses; ``podIPs`` always agrees with ``podIP`` (the API
    server would make it so anyway, ``podIP`` winning)."""
    return {"hostIP": HOST_IP, "podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}


def running(
    pod: Mapping[str, Any],
    *,
    pod_ip: str,
    ready: bool,
    restart_count: int,
    last_state: dict[str, Any],
) -> dict[str, Any]:
    """Running: every container started now, the pod's start time kept.

    The one builder for a starting pod and for a container restarted in place: they differ only
    in ``restart_count`` and ``last_state``.
    """
    return {
        "phase": "Running",
        **addresses(pod_ip),
        "startTime": pod.get("status", {}).get("startTime") or now(),
        "conditions": conditions(ready=ready),
        "containerStatuses": container_statuses(
            pod,
            {"running": {"startedAt": now()}},
            restart_count=restart_count,
            ready=ready,
            last_state=last_state,
        ),
    }


def terminated(
    pod: Mapping[str, Any],
    *,
    pod_ip: str,
    exit_code: int,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """Succeeded (exit code 0) or Failed, for good: the main container's exit code and reason."""
    return {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        **addresses(pod_ip),
        "startTime": pod.get("status", {}).get("startTime") or now(),
        "conditions": conditions(ready=False),
        "containerStatuses": container_statuses(
            pod,
            terminated_state(pod, exit_code=exit_code, reason=reason, message=message),
            restart_count=restart_count(pod),
            ready=False,
            last_state=last_state(pod),
        ),
    }


def evicted(pod: Mapping[str, Any], *, message: str) -> dict[str, Any]:
    """Evicted: phase Failed, reason Evicted, and no container exit code."""
    return {
        "phase": "Failed",
        "reason": "Evicted",
        "message": message,
        "conditions": conditions(ready=False),
        "containerStatuses": container_statuses(
            pod,
            {"waiting": {"reason": "ContainerStatusUnknown"}},
            restart_count=restart_count(pod),
            ready=False,
        ),
    }


def waiting(pod: Mapping[str, Any], *, reason: str, message: str) -> dict[str, Any]:
    """Still Pending: the container cannot be created yet (``ContainerCreating``) or its
    configuration is wrong (``CreateContainerConfigError``)."""
    return {
        "phase": "Pending",
        "conditions": conditions(ready=False),
        "containerStatuses": container_statuses(
            pod,
            {"waiting": {"reason": reason, "message": message}},
            restart_count=restart_count(pod),
            ready=False,
        ),
    }


def readiness(pod: Mapping[str, Any], *, ready: bool) -> dict[str, Any]:
    """The status change of a readiness probe's flip: conditions and every container's
    ``ready``, the rest as ``pod`` (the current pod) has it."""
    statuses = [
        {**status, "ready": ready}
        for status in pod.get("status", {}).get("containerStatuses", []) or []
    ]
    return {"conditions": conditions(ready=ready), "containerStatuses": statuses}
