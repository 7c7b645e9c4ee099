"""A pod's status transitions as the test kubelet writes them: read the pod, write its new status.

Each transition reads the pod as it is now, builds its next status with
:mod:`localkube.kubelet.podstatus`, keeps the container logs in step (a started container's log
runs, an ended one's ends) and writes through ``pods/status`` with the pod's uid as a
precondition. Manual mode's tests call these directly (through
:class:`localkube.kubelet.core.TestKubelet`); exec mode calls them when a process starts, exits
or cannot start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from localkube.kubelet import podstatus
from localkube.kubelet.kubeapi import KubeletApi
from localkube.kubelet.podlogs import PodLogs


class Transitions:
    """Writes the status transitions of the pods on one node."""

    def __init__(
        self,
        kube: KubeletApi,
        logs: PodLogs,
        *,
        pod_ip: Callable[[Mapping[str, Any]], str],
        has_readiness_probe: Callable[[str], bool],
    ) -> None:
        self.kube = kube
        self.logs = logs
        self.pod_ip = pod_ip
        """The pod's address: its own under the install profile, the node's otherwise."""
        self.has_readiness_probe = has_readiness_probe
        """Whether a readiness probe (by pod uid) decides when the pod is ready."""

    def _write(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.kube.patch_status(meta["namespace"], meta["name"], status, meta["uid"])

    def start(self, namespace: str, name: str) -> dict[str, Any]:
        """Pending → Running: every container started; ready unless a readiness probe decides.

        Returns the pod as read before the write.
        """
        pod = self.kube.get_pod(namespace, name)
        ready = not self.has_readiness_probe(pod["metadata"]["uid"])
        restart_count = podstatus.restart_count(pod)
        self.logs.open(pod)
        status = podstatus.running(
            pod,
            pod_ip=self.pod_ip(pod),
            ready=ready,
            restart_count=restart_count,
            last_state=podstatus.last_state(pod),
        )
        self._write(pod, status)
        return pod

    def restart_in_place(
        self, namespace: str, name: str, *, exit_code: int, reason: str | None = None
    ) -> int:
        """The main container exited and was restarted in the same pod; the new restartCount."""
        pod = self.kube.get_pod(namespace, name)
        count = podstatus.restart_count(pod) + 1
        self.logs.restart(pod, count=count)
        status = podstatus.running(
            pod,
            pod_ip=self.pod_ip(pod),
            ready=not self.has_readiness_probe(pod["metadata"]["uid"]),
            restart_count=count,
            last_state=podstatus.terminated_state(pod, exit_code=exit_code, reason=reason),
        )
        self._write(pod, status)
        return count

    def terminate(
        self,
        namespace: str,
        name: str,
        *,
        exit_code: int,
        reason: str | None = None,
        message: str | None = None,
    ) -> None:
        """The container exited with ``exit_code``: Succeeded (0) or Failed, for good."""
        pod = self.kube.get_pod(namespace, name)
        self.logs.end(pod)
        status = podstatus.terminated(
            pod, pod_ip=self.pod_ip(pod), exit_code=exit_code, reason=reason, message=message
        )
        self._write(pod, status)

    def evict(self, namespace: str, name: str, *, message: str) -> None:
        """The pod was evicted: phase Failed, reason Evicted, and no container exit code."""
        pod = self.kube.get_pod(namespace, name)
        self.logs.end(pod)
        self._write(pod, podstatus.evicted(pod, message=message))

    def waiting(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        """The container cannot be created (yet): the pod stays Pending with ``reason``."""
        self._write(pod, podstatus.waiting(pod, reason=reason, message=message))

    def set_ready(self, pod: Mapping[str, Any], ready: bool) -> None:
        """The readiness probe flipped: the pod's Ready condition (and EndpointSlice) follow."""
        meta = pod["metadata"]
        current = self.kube.get_pod(meta["namespace"], meta["name"])
        if current.get("status", {}).get("phase") != "Running":
            return
        self.kube.patch_status(
            meta["namespace"],
            meta["name"],
            podstatus.readiness(current, ready=ready),
            meta["uid"],
        )
