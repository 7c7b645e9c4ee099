"""A test kubelet: plays the node agent of the local control plane.

There is no kubelet and no container runtime here, so tests and ``make demo`` use this instead. It
registers a Node, binds unscheduled pods to it (there is no scheduler either), and writes pod
status through the ``pods/status`` subresource exactly as a kubelet would: Pending → Running →
Succeeded/Failed with the ``mxnet`` container's ``exitCode`` and ``reason``, ``restartCount`` for
in-place restarts, and the Evicted shape (phase Failed, no exit code).

Two ways to drive pods:

- manual: tests call :meth:`TestKubelet.start_pod`, :meth:`terminate`, :meth:`evict`,
  :meth:`restart_in_place` to script an outcome;
- exec: :meth:`TestKubelet.run_pod` runs the ``mxnet`` container's command as a local process with
  the env a kubelet would give it (see :mod:`localkube.podenv`) and writes its real exit code.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localkube import hostsfile
from localkube.api import Api, ApiError
from localkube.podenv import PodEnvError, resolve_command, resolve_env

log = logging.getLogger(__name__)

MAIN_CONTAINER = "mxnet"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ExecSettings:
    """How exec mode runs a pod's container as a local process."""

    log_dir: Path
    """One ``<namespace>_<pod>.log`` per pod, holding the process's stdout and stderr."""
    path_prefix: tuple[str, ...] = ()
    """Directories put before the host's PATH (e.g. the virtualenv whose python runs the job)."""
    hosts_file: Path = Path("/etc/hosts")
    """Where the job's service names are pointed at 127.0.0.1 while its pods run."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Env a container image would carry (e.g. PYTHONPATH to the examples)."""


@dataclass
class _Running:
    process: subprocess.Popen[bytes]
    namespace: str
    name: str
    uid: str
    restart_policy: str
    host_names: tuple[str, ...]
    stopping: bool = False


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
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.namespaces = namespaces
        self.exec_settings = exec_settings
        self.auto_start = auto_start
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], _Running] = {}
        self.on_pod_event: Callable[[str, dict[str, Any]], None] | None = None

    # -- raw API helpers -----------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> Any:
        return self.api.request(method, path, body=body, content_type=content_type, query=query)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        pod: dict[str, Any] = self._request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        return pod

    def _patch_status(self, namespace: str, name: str, status: dict[str, Any], uid: str) -> None:
        # The uid precondition makes a late write for a deleted pod fail instead of landing on a
        # newer pod of the same name (the controller recreates pods under the same name).
        self._request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            body={"metadata": {"uid": uid}, "status": status},
            content_type="application/merge-patch+json",
        )

    # -- node ----------------------------------------------------------------------------------
    def register_node(self) -> None:
        """Create (or refresh) the Node and mark it Ready."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": {"kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux"},
            },
        }
        with contextlib.suppress(ApiError):
            self._request("POST", "/api/v1/nodes", body=node)
        capacity = {"cpu": "64", "memory": "256Gi", "pods": "10000", "nvidia.com/gpu": "8"}
        status = {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": self.node_name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "test kubelet is posting ready status",
                    "lastHeartbeatTime": _now(),
                    "lastTransitionTime": _now(),
                }
            ],
        }
        self._request(
            "PATCH",
            f"/api/v1/nodes/{self.node_name}/status",
            body={"status": status},
            content_type="application/merge-patch+json",
        )

    def bind(self, namespace: str, name: str) -> None:
        """Bind a pod to this node, as the scheduler would."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node_name},
        }
        self._request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=binding)

    # -- status transitions --------------------------------------------------------------------
    @staticmethod
    def _containers(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        return list(pod.get("spec", {}).get("containers", []))

    def _container_statuses(
        self,
        pod: Mapping[str, Any],
        main_state: dict[str, Any],
        *,
        restart_count: int,
        last_state: dict[str, Any] | None = None,
        ready: bool,
    ) -> list[dict[str, Any]]:
        statuses = []
        for container in self._containers(pod):
            is_main = container.get("name") == MAIN_CONTAINER or len(self._containers(pod)) == 1
            statuses.append(
                {
                    "name": container.get("name"),
                    "image": container.get("image", ""),
                    "imageID": "",
                    "containerID": f"localkube://{pod['metadata']['uid']}-{container.get('name')}",
                    "ready": ready,
                    "started": "running" in main_state,
                    "restartCount": restart_count if is_main else 0,
                    "state": main_state,
                    "lastState": (last_state or {}) if is_main else {},
                }
            )
        return statuses

    def _conditions(self, *, ready: bool) -> list[dict[str, Any]]:
        now = _now()
        flag = "True" if ready else "False"
        return [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
            {"type": "Initialized", "status": "True", "lastTransitionTime": now},
            {"type": "ContainersReady", "status": flag, "lastTransitionTime": now},
            {"type": "Ready", "status": flag, "lastTransitionTime": now},
        ]

    def start_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """Pending → Running: every container started and ready."""
        pod = self.get_pod(namespace, name)
        restart_count = self._restart_count(pod)
        status = {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
            "startTime": pod.get("status", {}).get("startTime") or _now(),
            "conditions": self._conditions(ready=True),
            "containerStatuses": self._container_statuses(
                pod,
                {"running": {"startedAt": _now()}},
                restart_count=restart_count,
                ready=True,
                last_state=self._last_state(pod),
            ),
        }
        self._patch_status(namespace, name, status, pod["metadata"]["uid"])
        return pod

    @staticmethod
    def _main_status(pod: Mapping[str, Any]) -> dict[str, Any]:
        for status in pod.get("status", {}).get("containerStatuses", []) or []:
            if status.get("name") == MAIN_CONTAINER:
                return dict(status)
        return {}

    def _restart_count(self, pod: Mapping[str, Any]) -> int:
        return int(self._main_status(pod).get("restartCount", 0))

    def _last_state(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        return dict(self._main_status(pod).get("lastState", {}) or {})

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
        pod = self.get_pod(namespace, name)
        reason = reason or ("Completed" if exit_code == 0 else "Error")
        terminated: dict[str, Any] = {
            "exitCode": exit_code,
            "reason": reason,
            "startedAt": pod.get("status", {}).get("startTime") or _now(),
            "finishedAt": _now(),
        }
        if message:
            terminated["message"] = message
        status = {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "startTime": pod.get("status", {}).get("startTime") or _now(),
            "conditions": self._conditions(ready=False),
            "containerStatuses": self._container_statuses(
                pod,
                {"terminated": terminated},
                restart_count=self._restart_count(pod),
                ready=False,
                last_state=self._last_state(pod),
            ),
        }
        self._patch_status(namespace, name, status, pod["metadata"]["uid"])

    def evict(
        self, namespace: str, name: str, *, message: str = "The node was low on resource: memory."
    ) -> None:
        """The pod was evicted: phase Failed, reason Evicted, and no container exit code."""
        pod = self.get_pod(namespace, name)
        status = {
            "phase": "Failed",
            "reason": "Evicted",
            "message": message,
            "conditions": self._conditions(ready=False),
            "containerStatuses": self._container_statuses(
                pod,
                {"waiting": {"reason": "ContainerStatusUnknown"}},
                restart_count=self._restart_count(pod),
                ready=False,
            ),
        }
        self._patch_status(namespace, name, status, pod["metadata"]["uid"])

    def restart_in_place(
        self, namespace: str, name: str, *, exit_code: int, reason: str | None = None
    ) -> int:
        """The container exited and the kubelet restarted it in the same pod (Always/OnFailure).

        Returns the new ``restartCount``.
        """
        pod = self.get_pod(namespace, name)
        count = self._restart_count(pod) + 1
        last = {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                "startedAt": pod.get("status", {}).get("startTime") or _now(),
                "finishedAt": _now(),
            }
        }
        status = {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": "127.0.0.1",
            "startTime": pod.get("status", {}).get("startTime") or _now(),
            "conditions": self._conditions(ready=True),
            "containerStatuses": self._container_statuses(
                pod,
                {"running": {"startedAt": _now()}},
                restart_count=count,
                ready=True,
                last_state=last,
            ),
        }
        self._patch_status(namespace, name, status, pod["metadata"]["uid"])
        return count

    # -- exec mode -----------------------------------------------------------------------------
    def _env_sources(
        self, namespace: str
    ) -> tuple[Callable[[str, str], str | None], Callable[[str, str], str | None]]:
        def config_map(name: str, key: str) -> str | None:
            try:
                obj = self._request("GET", f"/api/v1/namespaces/{namespace}/configmaps/{name}")
            except ApiError:
                return None
            value = obj.get("data", {}).get(key)
            return None if value is None else str(value)

        def secret(name: str, key: str) -> str | None:
            try:
                obj = self._request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
            except ApiError:
                return None
            value = obj.get("data", {}).get(key)
            return None if value is None else base64.b64decode(value).decode()

        return config_map, secret

    def run_pod(self, namespace: str, name: str) -> None:
        """Run the pod's ``mxnet`` container as a local process (exec mode)."""
        if self.exec_settings is None:
            raise RuntimeError("exec mode needs ExecSettings")
        pod = self.get_pod(namespace, name)
        container = next(
            (c for c in self._containers(pod) if c.get("name") == MAIN_CONTAINER),
            self._containers(pod)[0] if self._containers(pod) else None,
        )
        if container is None:
            self.terminate(namespace, name, exit_code=128, reason="ContainerCannotRun")
            return
        config_map, secret = self._env_sources(namespace)
        try:
            env = resolve_env(pod, container, config_map=config_map, secret=secret)
            argv = resolve_command(container, env)
        except PodEnvError as error:
            self._waiting(pod, "CreateContainerConfigError", str(error))
            return
        base_env = {
            "PATH": os.pathsep.join([*self.exec_settings.path_prefix, os.environ.get("PATH", "")]),
            "HOME": os.environ.get("HOME", "/root"),
            "HOSTNAME": name,
            "LANG": "C.UTF-8",
            **self.exec_settings.extra_env,
        }
        process_env = {**base_env, **env}
        host_names = self._service_host_names(namespace, pod)
        hostsfile.add(self.exec_settings.hosts_file, host_names, owner=f"{namespace}/{name}")
        self.exec_settings.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.exec_settings.log_dir / f"{namespace}_{name}.log"
        self._start_process(
            pod,
            argv=argv,
            env=process_env,
            log_path=log_path,
            host_names=host_names,
            container=container,
        )

    def _service_host_names(self, namespace: str, pod: Mapping[str, Any]) -> tuple[str, ...]:
        """Every Service of the pod's job, under the names a cluster DNS would answer."""
        job = pod["metadata"].get("labels", {}).get("training.kubeflow.org/job-name")
        selector = f"training.kubeflow.org/job-name={job}" if job else None
        query = [("labelSelector", selector)] if selector else []
        services = self._request(
            "GET", f"/api/v1/namespaces/{namespace}/services", query=query
        ).get("items", [])
        names: list[str] = []
        for service in services:
            short = service["metadata"]["name"]
            names += [
                short,
                f"{short}.{namespace}",
                f"{short}.{namespace}.svc",
                f"{short}.{namespace}.svc.cluster.local",
            ]
        names.append(pod["metadata"]["name"])
        return tuple(dict.fromkeys(names))

    def _waiting(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        status = {
            "phase": "Pending",
            "conditions": self._conditions(ready=False),
            "containerStatuses": self._container_statuses(
                pod,
                {"waiting": {"reason": reason, "message": message}},
                restart_count=self._restart_count(pod),
                ready=False,
            ),
        }
        self._patch_status(
            pod["metadata"]["namespace"], pod["metadata"]["name"], status, pod["metadata"]["uid"]
        )

    def _start_process(
        self,
        pod: Mapping[str, Any],
        *,
        argv: list[str],
        env: dict[str, str],
        log_path: Path,
        host_names: tuple[str, ...],
        container: Mapping[str, Any],
    ) -> None:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        working_dir = container.get("workingDir")
        cwd = working_dir if working_dir and Path(working_dir).is_dir() else None
        with log_path.open("ab") as log_file:
            try:
                process = subprocess.Popen(
                    argv,
                    env=env,
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=cwd,
                    start_new_session=True,
                )
            except OSError as error:
                # What a runtime reports when the command cannot be started.
                code = 127 if isinstance(error, FileNotFoundError) else 126
                log_file.write(f"cannot start {argv!r}: {error}\n".encode())
                self.terminate(
                    namespace, name, exit_code=code, reason="StartError", message=str(error)
                )
                hostsfile.remove(self.exec_settings.hosts_file, owner=f"{namespace}/{name}")  # type: ignore[union-attr]
                return
        running = _Running(
            process=process,
            namespace=namespace,
            name=name,
            uid=pod["metadata"]["uid"],
            restart_policy=pod.get("spec", {}).get("restartPolicy", "Always"),
            host_names=host_names,
        )
        with self._lock:
            self._running[(namespace, name)] = running
        self.start_pod(namespace, name)
        threading.Thread(
            target=self._reap,
            args=(running, argv, env, log_path, container),
            daemon=True,
            name=f"reap-{namespace}/{name}",
        ).start()

    def _reap(
        self,
        running: _Running,
        argv: list[str],
        env: dict[str, str],
        log_path: Path,
        container: Mapping[str, Any],
    ) -> None:
        returncode = running.process.wait()
        # A process killed by signal N reports -N; a container runtime reports 128 + N.
        exit_code = 128 - returncode if returncode < 0 else returncode
        key = (running.namespace, running.name)
        with self._lock:
            if self._running.get(key) is running:
                del self._running[key]
        if running.stopping:
            return
        try:
            restart = running.restart_policy == "Always" or (
                running.restart_policy == "OnFailure" and exit_code != 0
            )
            if restart:
                self.restart_in_place(running.namespace, running.name, exit_code=exit_code)
                pod = self.get_pod(running.namespace, running.name)
                self._start_process(
                    pod,
                    argv=argv,
                    env=env,
                    log_path=log_path,
                    host_names=running.host_names,
                    container=container,
                )
                return
            self.terminate(running.namespace, running.name, exit_code=exit_code)
        except ApiError as error:
            log.info("pod %s/%s gone before its exit was recorded: %s", *key, error.reason)
        finally:
            if self.exec_settings is not None and key not in self._running:
                hostsfile.remove(self.exec_settings.hosts_file, owner=f"{key[0]}/{key[1]}")

    def kill_process(self, namespace: str, name: str, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a pod's process (exec mode), as an OOM kill or preemption would."""
        with self._lock:
            running = self._running.get((namespace, name))
        if running is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, sig)

    # -- background loop -----------------------------------------------------------------------
    def _watch_pods(self, resource_version: str) -> Iterator[dict[str, Any]]:
        query = [
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "60"),
        ]
        for event in self.api.watch("/api/v1/pods", query=query):
            if self._stop.is_set():
                return
            yield event

    def _wanted(self, pod: Mapping[str, Any]) -> bool:
        namespace = pod.get("metadata", {}).get("namespace")
        return self.namespaces is None or namespace in self.namespaces

    def _handle(self, event_type: str, pod: dict[str, Any]) -> None:
        if self._stop.is_set() or not self._wanted(pod):
            return
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if event_type == "DELETED" or meta.get("deletionTimestamp"):
            self._kill(namespace, name, uid=meta.get("uid"))
            if meta.get("deletionTimestamp") and event_type != "DELETED":
                # A kubelet confirms graceful deletion once the containers are gone.
                with contextlib.suppress(ApiError):
                    self._request(
                        "DELETE",
                        f"/api/v1/namespaces/{namespace}/pods/{name}",
                        body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta.get("uid")}},
                    )
            return
        if not pod.get("spec", {}).get("nodeName"):
            with contextlib.suppress(ApiError):
                self.bind(namespace, name)
            return
        if pod["spec"]["nodeName"] != self.node_name:
            return
        phase = pod.get("status", {}).get("phase", "Pending")
        if phase == "Pending" and not pod.get("status", {}).get("containerStatuses"):
            if self.exec_settings is not None:
                with self._lock:
                    already = (namespace, name) in self._running
                if not already:
                    self.run_pod(namespace, name)
            elif self.auto_start:
                with contextlib.suppress(ApiError):
                    self.start_pod(namespace, name)
        if self.on_pod_event is not None:
            self.on_pod_event(event_type, pod)

    def _kill(self, namespace: str, name: str, *, uid: str | None) -> None:
        with self._lock:
            running = self._running.get((namespace, name))
            if running is None or (uid is not None and running.uid != uid):
                return
            running.stopping = True
            del self._running[(namespace, name)]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.process.pid, signal.SIGTERM)
        try:
            running.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait()
        if self.exec_settings is not None:
            hostsfile.remove(self.exec_settings.hosts_file, owner=f"{namespace}/{name}")

    def _loop(self) -> None:
        resource_version = ""
        while not self._stop.is_set():
            try:
                if not resource_version:
                    listing = self._request("GET", "/api/v1/pods")
                    for pod in listing.get("items", []):
                        self._handle("ADDED", pod)
                    resource_version = listing["metadata"]["resourceVersion"]
                for event in self._watch_pods(resource_version):
                    kind, obj = event.get("type"), event.get("object", {})
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            resource_version = ""
                        break
                    resource_version = obj.get("metadata", {}).get(
                        "resourceVersion", resource_version
                    )
                    if kind != "BOOKMARK":
                        try:
                            self._handle(str(kind), obj)
                        except ApiError as error:
                            log.info(
                                "test kubelet: %s %s: %s",
                                kind,
                                obj.get("metadata", {}).get("name"),
                                error.reason,
                            )
            except Exception as error:
                if self._stop.is_set():
                    return
                log.info("test kubelet watch restarting: %s", error)
                resource_version = ""
                time.sleep(0.5)

    def start(self) -> TestKubelet:
        """Register the node and start binding (and, in exec mode, running) pods."""
        self.register_node()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="test-kubelet")
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the loop and every process it started; remove its host entries."""
        self._stop.set()
        with self._lock:
            keys = list(self._running)
        for namespace, name in keys:
            self._kill(namespace, name, uid=None)
        if self._thread is not None:
            self._thread.join(timeout=0.5)
        if self.exec_settings is not None:
            hostsfile.remove_all(self.exec_settings.hosts_file)

    def __enter__(self) -> TestKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
