"""A test kubelet: plays the node agent of the local control plane.

Most tests and ``make demo`` use it instead of the real node (:mod:`localkube.realnode`, which
needs root and half a minute to start): it starts in milliseconds and lets a test script every
pod's outcome. It registers a Node with a given capacity, binds unscheduled pods to it (unless
kube-scheduler runs on the plane, see ``ControlPlaneSettings.workload_scheduling``), and writes pod
status through the ``pods/status`` subresource exactly as a kubelet would: Pending → Running →
Succeeded/Failed with the ``mxnet`` container's ``exitCode`` and ``reason``, ``restartCount`` for
in-place restarts, and the Evicted shape (phase Failed, no exit code).

Two ways to drive pods:

- manual: tests call :meth:`TestKubelet.start_pod`, :meth:`terminate`, :meth:`evict`,
  :meth:`restart_in_place` to script an outcome;
- exec: :meth:`TestKubelet.run_pod` runs the ``mxnet`` container's command as a local process with
  the env a kubelet would give it (see :mod:`localkube.kubelet.execpods`) and writes its real exit
  code; with an install profile, the operator's own images run as its console scripts (see
  :mod:`localkube.kubelet.profile`).

Either way it serves the kubelet's ``/containerLogs`` endpoint over TLS on a free loopback port
advertised in the Node's status (see :mod:`localkube.kubelet.podlogs`), so ``kubectl logs [-f]``
works: in exec mode it shows the process's output, in manual mode what the test wrote with
:meth:`TestKubelet.write_log` (an empty log otherwise).

This module is the node: its watch loop, what each pod event means, and the public API. The
parts it holds: :class:`~localkube.kubelet.kubeapi.KubeletApi` (the API calls),
:class:`~localkube.kubelet.podlogs.PodLogs`, :class:`~localkube.kubelet.transitions.Transitions`
(status writes, built by :mod:`localkube.kubelet.podstatus`),
:class:`~localkube.kubelet.execpods.ExecPods` (exec mode's processes) and
:class:`~localkube.kubelet.profile.pods.ProfilePods` (the install profile).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from localkube.base.api import Api, ApiError
from localkube.kubelet import hostsfile
from localkube.kubelet.crilog import STDOUT
from localkube.kubelet.execpods import ExecPods
from localkube.kubelet.execs import ExecSettings
from localkube.kubelet.kubeapi import KubeletApi
from localkube.kubelet.podlogs import PodLogs
from localkube.kubelet.podstatus import MAIN_CONTAINER
from localkube.kubelet.profile.pods import ProfilePods
from localkube.kubelet.transitions import Transitions

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_CAPACITY", "MAIN_CONTAINER", "ExecSettings", "TestKubelet"]

DEFAULT_CAPACITY = {"cpu": "64", "memory": "256Gi", "pods": "10000", "nvidia.com/gpu": "8"}
"""Room for every test's pods when the kubelet binds them itself (no scheduler checks it)."""


class TestKubelet:
    """One fake node that binds pods and drives their status."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(
        self,
        api: Api,
        *,
        node_name: str = "localkube-node",
        namespaces: tuple[str, ...] | None = None,
        exec_settings: ExecSettings | None = None,
        auto_start: bool = True,
        bind: bool = True,
        capacity: Mapping[str, str] | None = None,
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.namespaces = namespaces
        self.exec_settings = exec_settings
        self.auto_start = auto_start
        self.binds = bind
        """Bind unscheduled pods to this node; False where kube-scheduler runs and binds them."""
        self.capacity = dict(capacity or DEFAULT_CAPACITY)
        """The node's capacity and allocatable resources, which kube-scheduler fits pods into."""
        self.on_pod_event: Callable[[str, dict[str, Any]], None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pods: dict[tuple[str, str], dict[str, Any]] = {}
        """Pods bound to this node as last seen, for the log endpoint (a kubelet's pod manager)."""
        self._kube = KubeletApi(api)
        log_dir = exec_settings.log_dir if exec_settings is not None else None
        self._logs = PodLogs(api, node_name=node_name, exec_log_dir=log_dir)
        self._profile = ProfilePods(exec_settings, self._kube)
        self._transitions = Transitions(
            self._kube,
            self._logs,
            pod_ip=self._profile.pod_ip,
            has_readiness_probe=self._profile.probes.has_readiness,
        )
        self._execs = ExecPods(
            exec_settings,
            kube=self._kube,
            logs=self._logs,
            transitions=self._transitions,
            profile=self._profile,
            pods=self._pod_on_node,
            stopping=self._stop,
        )

    # -- the node --------------------------------------------------------------------------------
    def register_node(self) -> None:
        """Create (or refresh) the Node and mark it Ready."""
        self._kube.register_node(self.node_name, capacity=self.capacity, log_port=self.log_port)

    def bind(self, namespace: str, name: str) -> None:
        """Bind a pod to this node, as the scheduler would."""
        self._kube.bind(namespace, name, node_name=self.node_name)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        return self._kube.get_pod(namespace, name)

    @property
    def log_port(self) -> int | None:
        """The loopback port of this kubelet's HTTPS endpoint (None before :meth:`start`)."""
        return self._logs.port

    # -- scripted outcomes (manual mode) ---------------------------------------------------------
    def start_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """Pending → Running: every container started; ready unless a readiness probe decides."""
        return self._transitions.start(namespace, name)

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
        self._transitions.terminate(
            namespace, name, exit_code=exit_code, reason=reason, message=message
        )

    def evict(
        self, namespace: str, name: str, *, message: str = "The node was low on resource: memory."
    ) -> None:
        """The pod was evicted: phase Failed, reason Evicted, and no container exit code."""
        self._transitions.evict(namespace, name, message=message)

    def restart_in_place(
        self, namespace: str, name: str, *, exit_code: int, reason: str | None = None
    ) -> int:
        """The container exited and the kubelet restarted it in the same pod (Always/OnFailure).

        Returns the new ``restartCount``.
        """
        return self._transitions.restart_in_place(
            namespace, name, exit_code=exit_code, reason=reason
        )

    def write_log(
        self,
        namespace: str,
        name: str,
        text: str,
        *,
        container: str = MAIN_CONTAINER,
        stream: str = STDOUT,
    ) -> None:
        """Manual mode: make a running container "write" ``text``, for ``kubectl logs`` to show."""
        self._logs.write(self.get_pod(namespace, name), text, container=container, stream=stream)

    # -- exec mode -------------------------------------------------------------------------------
    def run_pod(self, namespace: str, name: str) -> None:
        """Run the pod's ``mxnet`` container as a local process (exec mode)."""
        self._execs.run(namespace, name)

    def kill_process(self, namespace: str, name: str, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a pod's process (exec mode), as an OOM kill or preemption would."""
        self._execs.kill_process(namespace, name, sig)

    # -- pod events ------------------------------------------------------------------------------
    def _wanted(self, pod: Mapping[str, Any]) -> bool:
        namespace = pod.get("metadata", {}).get("namespace")
        return self.namespaces is None or namespace in self.namespaces

    def _handle(self, event_type: str, pod: dict[str, Any]) -> None:
        """What a pod event means for this node: bind it, start it, or stop its process."""
        if self._stop.is_set() or not self._wanted(pod):
            return
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        self._remember(event_type, pod)
        if event_type == "DELETED" or meta.get("deletionTimestamp"):
            self._handle_deletion(event_type, pod)
            return
        if not pod.get("spec", {}).get("nodeName"):
            if self.binds:
                with contextlib.suppress(ApiError):
                    self.bind(namespace, name)
            return
        if pod["spec"]["nodeName"] != self.node_name:
            return
        phase = pod.get("status", {}).get("phase", "Pending")
        if phase == "Pending" and not pod.get("status", {}).get("containerStatuses"):
            if self.exec_settings is not None:
                if not self._execs.running((namespace, name)):
                    self.run_pod(namespace, name)
            elif self.auto_start:
                with contextlib.suppress(ApiError):
                    self.start_pod(namespace, name)
        if self.on_pod_event is not None:
            self.on_pod_event(event_type, pod)

    def _handle_deletion(self, event_type: str, pod: dict[str, Any]) -> None:
        """A pod being deleted (or gone): stop its process; confirm a graceful deletion."""
        meta = pod["metadata"]
        if self._execs.terminating(meta.get("uid")) and event_type != "DELETED":
            return  # a graceful termination is under way in its own thread
        if event_type != "DELETED" and self._profile.container(pod) is not None:
            self._execs.terminate_gracefully_async(pod, self._confirm_deletion)
            return
        exit_code = self._execs.kill(meta["namespace"], meta["name"], uid=meta.get("uid"))
        if meta.get("deletionTimestamp") and event_type != "DELETED":
            self._confirm_deletion(pod, exit_code)

    def _confirm_deletion(self, pod: Mapping[str, Any], exit_code: int | None) -> None:
        self._report_killed(pod, exit_code)
        # A kubelet confirms graceful deletion once the containers are gone. A pod held
        # by a finalizer stays (terminating, grace 0) until its owner removes it: asking
        # again would change nothing, so it is asked once.
        if pod["metadata"].get("deletionGracePeriodSeconds") != 0:
            with contextlib.suppress(ApiError):
                self._kube.confirm_deletion(pod)

    def _report_killed(self, pod: Mapping[str, Any], exit_code: int | None) -> None:
        """A deleted pod that was running ends with a final phase, as a real kubelet writes it.

        The container got SIGTERM: exec mode reports the process's own exit code; manual mode
        has no process and reports 143 (128 + SIGTERM), a container that honoured the signal.
        A pod that had already ended, or never ran, keeps its status.
        """
        meta = pod["metadata"]
        status = pod.get("status", {})
        if pod.get("spec", {}).get("nodeName") != self.node_name:
            return
        if status.get("phase") in ("Succeeded", "Failed"):
            return
        if exit_code is None and status.get("phase") != "Running":
            return
        code = exit_code if exit_code is not None else 128 + signal.SIGTERM
        with contextlib.suppress(ApiError):
            self.terminate(meta["namespace"], meta["name"], exit_code=code)

    def _remember(self, event_type: str, pod: dict[str, Any]) -> None:
        """Keep the pods bound to this node for the log endpoint; a deleted pod's logs end."""
        meta = pod["metadata"]
        key = (meta["namespace"], meta["name"])
        with self._lock:
            if event_type == "DELETED":
                if self._pods.get(key, {}).get("metadata", {}).get("uid") == meta.get("uid"):
                    del self._pods[key]
            elif pod.get("spec", {}).get("nodeName") == self.node_name:
                self._pods[key] = pod
        if event_type == "DELETED":
            self._logs.end(pod)

    def _pod_on_node(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._pods.get((namespace, name))

    # -- the watch loop --------------------------------------------------------------------------
    def _loop(self) -> None:
        """List and watch every pod until stopped; any failure starts over with a fresh list."""
        resource_version = ""
        while not self._stop.is_set():
            try:
                if not resource_version:
                    listing = self._kube.list_pods()
                    for pod in listing.get("items", []):
                        self._handle("ADDED", pod)
                    resource_version = listing["metadata"]["resourceVersion"]
                resource_version = self._follow(resource_version)
            except Exception as error:
                if self._stop.is_set():
                    return
                log.info("test kubelet watch restarting: %s", error)
                resource_version = ""
                time.sleep(0.5)

    def _follow(self, resource_version: str) -> str:
        """Handle one watch's events; the version to go on from ("" to list again: expired)."""
        for event in self._kube.watch_pods(resource_version):
            if self._stop.is_set():
                break
            kind, obj = event.get("type"), event.get("object", {})
            if kind == "ERROR":
                return "" if obj.get("code") == 410 else resource_version
            resource_version = obj.get("metadata", {}).get("resourceVersion", resource_version)
            if kind == "BOOKMARK":
                continue
            try:
                self._handle(str(kind), obj)
            except ApiError as error:
                name = obj.get("metadata", {}).get("name")
                log.info("test kubelet: %s %s: %s", kind, name, error.reason)
        return resource_version

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> TestKubelet:
        """Serve logs, register the node and start binding (and, in exec mode, running) pods."""
        self._logs.start(self._pod_on_node)
        self.register_node()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="test-kubelet")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the loop and every process it started; remove its host entries."""
        self._stop.set()
        self._execs.stop_all()
        if self._thread is not None:
            self._thread.join(timeout=0.5)
        if self.exec_settings is not None:
            hostsfile.remove_all(self.exec_settings.hosts_file)
        self._profile.release_all()
        self._logs.stop()

    def __enter__(self) -> TestKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
