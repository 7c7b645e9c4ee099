"""A test kubelet: plays the node agent of the local control plane.

There is no kubelet and no container runtime here, so tests and ``make demo`` use this instead. It
registers a Node with a given capacity, binds unscheduled pods to it (unless kube-scheduler runs
on the plane, see ``ControlPlaneSettings.workload_scheduling``), and writes pod
status through the ``pods/status`` subresource exactly as a kubelet would: Pending → Running →
Succeeded/Failed with the ``mxnet`` container's ``exitCode`` and ``reason``, ``restartCount`` for
in-place restarts, and the Evicted shape (phase Failed, no exit code).

Two ways to drive pods:

- manual: tests call :meth:`TestKubelet.start_pod`, :meth:`terminate`, :meth:`evict`,
  :meth:`restart_in_place` to script an outcome;
- exec: :meth:`TestKubelet.run_pod` runs the ``mxnet`` container's command as a local process with
  the env a kubelet would give it (see :mod:`localkube.kubelet.podenv`) and writes its real exit
  code.

Either way it serves the kubelet's ``/containerLogs`` endpoint over TLS on a free loopback port
advertised in the Node's status (see :mod:`localkube.kubelet.logserver`), so ``kubectl logs [-f]``
works: in exec mode it shows the process's output, in manual mode what the test wrote with
:meth:`TestKubelet.write_log` (an empty log otherwise).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

from localkube.base.api import Api, ApiError
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet import hostsfile
from localkube.kubelet import tls as kubelet_tls
from localkube.kubelet.crilog import STDERR, STDOUT
from localkube.kubelet.logserver import ContainerLog, KubeletServer, LogStore
from localkube.kubelet.podenv import PodEnvError, resolve_command, resolve_env
from localkube.kubelet.podvolumes import VolumeError, decode_data, write_volumes
from localkube.kubelet.probes import Prober, probe_spec
from localkube.kubelet.profile import (
    ExecProfile,
    PodIpPool,
    bind_to_pod_ip,
    in_mount_namespace,
    missing_mount_points,
    remove_empty_tree,
)

log = logging.getLogger(__name__)

MAIN_CONTAINER = "mxnet"
DEFAULT_CAPACITY = {"cpu": "64", "memory": "256Gi", "pods": "10000", "nvidia.com/gpu": "8"}
"""Room for every test's pods when the kubelet binds them itself (no scheduler checks it)."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ExecSettings:
    """How exec mode runs a pod's container as a local process."""

    log_dir: Path
    """One ``<namespace>_<pod>.log`` per pod, holding the process's stdout and stderr; the
    per-container CRI logs ``kubectl logs`` reads go under ``containers/``."""
    path_prefix: tuple[str, ...] = ()
    """Directories put before the host's PATH (e.g. the virtualenv whose python runs the job)."""
    hosts_file: Path = Path("/etc/hosts")
    """Where the job's service names are pointed at 127.0.0.1 while its pods run."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Env a container image would carry (e.g. PYTHONPATH to the examples)."""
    profile: ExecProfile | None = None
    """Images run as local programs with the pod's network address, volumes and probes (the
    operator's own Deployments, see :mod:`localkube.kubelet.profile`); other pods run as before."""


@dataclass
class _Running:
    process: subprocess.Popen[bytes]
    namespace: str
    name: str
    uid: str
    restart_policy: str
    host_names: tuple[str, ...]
    container_log: ContainerLog
    pumps: tuple[threading.Thread, ...]
    plain: _PlainLog
    stopping: bool = False


def _pump(source: IO[bytes], *, stream: str, log: ContainerLog, plain: _PlainLog) -> None:
    """Copy one of a process's output pipes into its container log and the pod's plain log."""
    with source:
        while chunk := os.read(source.fileno(), 65536):
            plain.write(chunk)
            log.append(chunk, stream=stream)


class _PlainLog:
    """``<log_dir>/<namespace>_<pod>.log``: stdout and stderr as they arrive, from two pumps."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = path.open("ab")
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._file is None:  # a child outlived the process and still writes
                with self.path.open("ab") as late:
                    late.write(data)
                return
            self._file.write(data)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


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
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._running: dict[tuple[str, str], _Running] = {}
        self._pods: dict[tuple[str, str], dict[str, Any]] = {}
        """Pods bound to this node as last seen, for the log endpoint (a kubelet's pod manager)."""
        self._log_root: Path | None = None
        self._own_log_root = False
        self._logs: LogStore | None = None
        self._server: KubeletServer | None = None
        self.on_pod_event: Callable[[str, dict[str, Any]], None] | None = None
        self.pod_ips = PodIpPool()
        # Directories made on this machine as mount points of profile pods (removed at stop).
        self._made_mount_points: set[Path] = set()
        """Addresses of the pods run by the exec profile (others share 127.0.0.1)."""
        self._probers: dict[str, list[Prober]] = {}
        """Probes of the running profile pods, by pod uid."""
        self._starting: set[str] = set()
        """Profile pods (by uid) being prepared in a thread of their own."""
        self._terminating: set[str] = set()
        """Profile pods (by uid) being stopped gracefully in a thread of their own."""

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
        # The API server taints a new Node not-ready; the node lifecycle controller (not run here)
        # lifts the taint once the node reports Ready, which is what kube-scheduler waits for.
        self._request(
            "PATCH",
            f"/api/v1/nodes/{self.node_name}",
            body={"spec": {"taints": None}},
            content_type="application/merge-patch+json",
        )
        status: dict[str, Any] = {
            "capacity": self.capacity,
            "allocatable": self.capacity,
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
        if self._server is not None:
            # Where the API server dials this kubelet for `kubectl logs`.
            status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self._server.port}}
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

    # -- container logs ------------------------------------------------------------------------
    def _container_log(
        self, pod: Mapping[str, Any], container: str, *, restart: int
    ) -> ContainerLog | None:
        if self._logs is None:
            return None
        meta = pod["metadata"]
        return self._logs.instance(
            namespace=meta["namespace"],
            pod=meta["name"],
            uid=meta["uid"],
            container=container,
            restart=restart,
        )

    def _main_name(self, pod: Mapping[str, Any]) -> str:
        names = [str(c.get("name")) for c in self._containers(pod)]
        return MAIN_CONTAINER if MAIN_CONTAINER in names or len(names) != 1 else names[0]

    def _open_logs(self, pod: Mapping[str, Any]) -> None:
        """Every container of a starting pod gets a (running) log; the main one per restart."""
        for container in self._containers(pod):
            name = str(container.get("name"))
            main = name == self._main_name(pod)
            self._container_log(pod, name, restart=self._restart_count(pod) if main else 0)

    def _end_logs(self, pod: Mapping[str, Any]) -> None:
        if self._logs is not None:
            self._logs.end_pod(pod["metadata"]["uid"])

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
        pod = self.get_pod(namespace, name)
        restart = self._restart_count(pod) if container == self._main_name(pod) else 0
        container_log = self._container_log(pod, container, restart=restart)
        if container_log is None:
            raise RuntimeError("the kubelet is not started")
        container_log.append(text.encode(), stream=stream)

    def _pod_ip(self, pod: Mapping[str, Any]) -> str:
        return self.pod_ips.get(pod["metadata"]["uid"]) or "127.0.0.1"

    def start_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """Pending → Running: every container started; ready unless a readiness probe decides."""
        pod = self.get_pod(namespace, name)
        ready = not self._has_readiness_probe(pod["metadata"]["uid"])
        restart_count = self._restart_count(pod)
        self._open_logs(pod)
        status = {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": self._pod_ip(pod),
            "podIPs": [{"ip": self._pod_ip(pod)}],
            "startTime": pod.get("status", {}).get("startTime") or _now(),
            "conditions": self._conditions(ready=ready),
            "containerStatuses": self._container_statuses(
                pod,
                {"running": {"startedAt": _now()}},
                restart_count=restart_count,
                ready=ready,
                last_state=self._last_state(pod),
            ),
        }
        self._patch_status(namespace, name, status, pod["metadata"]["uid"])
        return pod

    @staticmethod
    def _main_status(pod: Mapping[str, Any]) -> dict[str, Any]:
        statuses = pod.get("status", {}).get("containerStatuses", []) or []
        for status in statuses:
            if status.get("name") == MAIN_CONTAINER:
                return dict(status)
        return dict(statuses[0]) if len(statuses) == 1 else {}

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
        self._end_logs(pod)
        status = {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "hostIP": "127.0.0.1",
            "podIP": self._pod_ip(pod),
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
        self._end_logs(pod)
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
        ended = self._container_log(pod, self._main_name(pod), restart=count - 1)
        if ended is not None:
            ended.end()
        self._container_log(pod, self._main_name(pod), restart=count)  # the new one, running
        last = {
            "terminated": {
                "exitCode": exit_code,
                "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                "startedAt": pod.get("status", {}).get("startTime") or _now(),
                "finishedAt": _now(),
            }
        }
        ready = not self._has_readiness_probe(pod["metadata"]["uid"])
        status = {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "podIP": self._pod_ip(pod),
            "startTime": pod.get("status", {}).get("startTime") or _now(),
            "conditions": self._conditions(ready=ready),
            "containerStatuses": self._container_statuses(
                pod,
                {"running": {"startedAt": _now()}},
                restart_count=count,
                ready=ready,
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
        if self._profile_container(pod) is not None:
            self._run_profile_pod_async(pod)
            return
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

    # -- exec profile (the operator's own pods) -------------------------------------------------
    def _profile_container(self, pod: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
        """The container the exec profile runs, and its program; None: not a profile pod."""
        profile = self.exec_settings.profile if self.exec_settings is not None else None
        if profile is None:
            return None
        for container in self._containers(pod):
            program = profile.entrypoint(str(container.get("image", "")))
            if program is not None:
                return container, program
        return None

    def _has_readiness_probe(self, uid: str) -> bool:
        with self._lock:
            return any(p.name == "readiness" for p in self._probers.get(uid, []))

    def _run_profile_pod_async(self, pod: Mapping[str, Any]) -> None:
        """Prepare and start a profile pod in a thread: its volumes may need a retry."""
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self._starting:
                return
            self._starting.add(uid)
        threading.Thread(
            target=self._run_profile_pod,
            args=(dict(pod),),
            daemon=True,
            name=f"start-{pod['metadata']['name']}",
        ).start()

    def _run_profile_pod(self, pod: dict[str, Any], *, timeout: float = 60) -> None:
        uid = pod["metadata"]["uid"]
        try:
            deadline = time.monotonic() + timeout
            while not self._stop.is_set():
                try:
                    self._start_profile_pod(pod)
                    return
                except (VolumeError, PodEnvError) as error:
                    reason = (
                        "ContainerCreating"
                        if isinstance(error, VolumeError)
                        else "CreateContainerConfigError"
                    )
                    with contextlib.suppress(ApiError):
                        self._waiting(pod, reason, str(error))
                    if time.monotonic() > deadline:
                        return
                    time.sleep(1)
                    try:
                        pod = self.get_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])
                    except ApiError:
                        return
                    if pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
                        return
        finally:
            with self._lock:
                self._starting.discard(uid)

    def _pod_dir(self, uid: str) -> Path:
        assert self.exec_settings is not None
        return self.exec_settings.log_dir / "pods" / uid

    def _start_profile_pod(self, pod: dict[str, Any]) -> None:
        assert self.exec_settings is not None and self.exec_settings.profile is not None
        profile = self.exec_settings.profile
        found = self._profile_container(pod)
        assert found is not None
        container, program = found
        meta = pod["metadata"]
        namespace, name, uid = meta["namespace"], meta["name"], meta["uid"]
        pod_ip = self.pod_ips.allocate(uid)
        # The Downward API's status.podIP is this pod's own address.
        pod = {**pod, "status": {**pod.get("status", {}), "podIP": pod_ip}}
        config_map_key, secret_key = self._env_sources(namespace)
        env = resolve_env(pod, container, config_map=config_map_key, secret=secret_key)
        mounts = write_volumes(
            pod,
            container,
            root=self._pod_dir(uid) / "volumes",
            secret=lambda n: self._object_data(namespace, "secrets", n),
            config_map=lambda n: self._object_data(namespace, "configmaps", n),
            token=lambda account, audiences, seconds: self._request_token(
                pod, account, audiences, seconds
            ),
        )
        # The image's entrypoint is the profile's program; `command`, when set, replaces it.
        argv = resolve_command({**container, "command": container.get("command") or [program]}, env)
        with self._lock:
            self._made_mount_points.update(missing_mount_points(mounts))
        # The program runs from this checkout and its virtualenv (the "image"): a volume over
        # their directory (an emptyDir on /tmp, a checkout under /tmp) must not hide them.
        venv = str(Path(program).parent.parent)
        keep = [str(PROJECT_ROOT)] + ([] if venv.startswith(f"{PROJECT_ROOT}/") else [venv])
        argv = in_mount_namespace(mounts, bind_to_pod_ip(argv, pod_ip), keep_visible=keep)
        process_env = {
            "PATH": os.pathsep.join([*self.exec_settings.path_prefix, os.environ.get("PATH", "")]),
            "HOME": os.environ.get("HOME", "/root"),
            "HOSTNAME": name,
            "LANG": "C.UTF-8",
            # What every container gets, enableServiceLinks or not: the API server's address.
            "KUBERNETES_SERVICE_HOST": profile.api_host,
            "KUBERNETES_SERVICE_PORT": str(profile.api_port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(profile.api_port),
            **env,
        }
        self.exec_settings.log_dir.mkdir(parents=True, exist_ok=True)
        self._register_probes(pod, container)
        self._start_process(
            pod,
            argv=argv,
            env=process_env,
            log_path=self.exec_settings.log_dir / f"{namespace}_{name}.log",
            host_names=(),
            container=container,
        )
        self._start_probes(pod, container)

    def _object_data(self, namespace: str, plural: str, name: str) -> dict[str, bytes] | None:
        try:
            obj = self._request("GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}")
        except ApiError:
            return None
        return decode_data(obj, binary=plural == "secrets")

    def _request_token(
        self, pod: Mapping[str, Any], account: str, audiences: list[str], seconds: int
    ) -> str:
        """A service-account token bound to the pod, from the TokenRequest API."""
        meta = pod["metadata"]
        spec: dict[str, Any] = {
            "expirationSeconds": seconds,
            "boundObjectRef": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
            },
        }
        if audiences:
            spec["audiences"] = audiences
        try:
            review = self._request(
                "POST",
                f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{account}/token",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": spec,
                },
            )
        except ApiError as error:
            raise VolumeError(f"token for service account {account!r}: {error.reason}") from error
        return str(review["status"]["token"])

    def _register_probes(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> None:
        """Create (not start) the pod's probers, so its first status knows it must wait."""
        uid = pod["metadata"]["uid"]
        address = self._pod_ip(pod)
        probers: list[Prober] = []
        readiness = probe_spec(container, "readinessProbe")
        if readiness is not None:
            probers.append(
                Prober(
                    readiness,
                    address,
                    initially=False,
                    name="readiness",
                    on_change=lambda ready: self._set_ready(pod, ready),
                )
            )
        liveness = probe_spec(container, "livenessProbe")
        if liveness is not None:
            probers.append(
                Prober(
                    liveness,
                    address,
                    initially=True,
                    name="liveness",
                    on_change=lambda alive: None if alive else self._liveness_failed(pod),
                )
            )
        with self._lock:
            self._probers[uid] = probers

    def _start_probes(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        with self._lock:
            probers = self._probers.get(uid)
        if probers is None or any(p.started for p in probers):
            self._register_probes(pod, container)
            with self._lock:
                probers = self._probers.get(uid, [])
        for prober in probers:
            prober.start()

    def _stop_probes(self, uid: str) -> None:
        with self._lock:
            probers = self._probers.pop(uid, [])
        for prober in probers:
            prober.stop()

    def _release_pod(self, uid: str) -> None:
        """A profile pod's process is gone for good: its probes, address and files go."""
        self._stop_probes(uid)
        self.pod_ips.release(uid)
        if self.exec_settings is not None:
            shutil.rmtree(self._pod_dir(uid), ignore_errors=True)

    def _set_ready(self, pod: Mapping[str, Any], ready: bool) -> None:
        """The readiness probe flipped: the pod's Ready condition (and EndpointSlice) follow."""
        meta = pod["metadata"]
        current = self.get_pod(meta["namespace"], meta["name"])
        if current.get("status", {}).get("phase") != "Running":
            return
        statuses = [
            {**status, "ready": ready}
            for status in current.get("status", {}).get("containerStatuses", []) or []
        ]
        self._patch_status(
            meta["namespace"],
            meta["name"],
            {"conditions": self._conditions(ready=ready), "containerStatuses": statuses},
            meta["uid"],
        )

    def _liveness_failed(self, pod: Mapping[str, Any]) -> None:
        """A kubelet kills a container whose liveness probe fails; the restart policy decides."""
        meta = pod["metadata"]
        log.info("liveness probe of %s/%s failed: restarting it", meta["namespace"], meta["name"])
        self.kill_process(meta["namespace"], meta["name"], signal.SIGKILL)

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
        container_log = self._container_log(
            pod, str(container.get("name")), restart=self._restart_count(pod)
        )
        assert container_log is not None  # started kubelets always have a log store
        plain = _PlainLog(log_path)
        try:
            process = subprocess.Popen(
                argv,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as error:
            # What a runtime reports when the command cannot be started.
            code = 127 if isinstance(error, FileNotFoundError) else 126
            message = f"cannot start {argv!r}: {error}\n".encode()
            plain.write(message)
            plain.close()
            container_log.append(message, stream=STDERR)
            self.terminate(namespace, name, exit_code=code, reason="StartError", message=str(error))
            hostsfile.remove(self.exec_settings.hosts_file, owner=f"{namespace}/{name}")  # type: ignore[union-attr]
            return
        assert process.stdout is not None and process.stderr is not None
        pumps = tuple(
            threading.Thread(
                target=_pump,
                args=(source,),
                kwargs={"stream": stream, "log": container_log, "plain": plain},
                daemon=True,
                name=f"{stream}-{namespace}/{name}",
            )
            for source, stream in ((process.stdout, STDOUT), (process.stderr, STDERR))
        )
        for pump in pumps:
            pump.start()
        running = _Running(
            process=process,
            namespace=namespace,
            name=name,
            uid=pod["metadata"]["uid"],
            restart_policy=pod.get("spec", {}).get("restartPolicy", "Always"),
            host_names=host_names,
            container_log=container_log,
            pumps=pumps,
            plain=plain,
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
        # The output is complete before the exit is reported, so a log read after the pod shows
        # terminated has it all (a child that kept the pipes open is not waited for long).
        for pump in running.pumps:
            pump.join(timeout=2)
        running.plain.close()
        running.container_log.end()
        # A process killed by signal N reports -N; a container runtime reports 128 + N.
        exit_code = 128 - returncode if returncode < 0 else returncode
        key = (running.namespace, running.name)
        with self._lock:
            if self._running.get(key) is running:
                del self._running[key]
        if running.stopping:
            return
        restarted = False
        try:
            restart = running.restart_policy == "Always" or (
                running.restart_policy == "OnFailure" and exit_code != 0
            )
            if restart:
                pod = self.get_pod(running.namespace, running.name)
                profile_pod = self._profile_container(pod) is not None
                if profile_pod:
                    # A crash loop backs off (a kubelet's CrashLoopBackOff starts at 10 s).
                    self._stop.wait(1.0)
                    if pod["metadata"].get("deletionTimestamp") or self._stop.is_set():
                        return
                self.restart_in_place(running.namespace, running.name, exit_code=exit_code)
                restarted = True
                pod = self.get_pod(running.namespace, running.name)  # its new restartCount
                self._stop_probes(running.uid)
                if profile_pod:
                    self._register_probes(pod, container)
                self._start_process(
                    pod,
                    argv=argv,
                    env=env,
                    log_path=log_path,
                    host_names=running.host_names,
                    container=container,
                )
                if profile_pod:
                    self._start_probes(pod, container)
                return
            self.terminate(running.namespace, running.name, exit_code=exit_code)
        except ApiError as error:
            log.info("pod %s/%s gone before its exit was recorded: %s", *key, error.reason)
        finally:
            if self.exec_settings is not None and key not in self._running:
                hostsfile.remove(self.exec_settings.hosts_file, owner=f"{key[0]}/{key[1]}")
            if not restarted:
                self._release_pod(running.uid)

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
        self._remember(event_type, pod)
        if event_type == "DELETED" or meta.get("deletionTimestamp"):
            with self._lock:
                terminating = meta.get("uid") in self._terminating
            if terminating and event_type != "DELETED":
                return  # a graceful termination is under way in its own thread
            if event_type != "DELETED" and self._profile_container(pod) is not None:
                self._terminate_gracefully_async(pod)
                return
            exit_code = self._kill(namespace, name, uid=meta.get("uid"))
            if meta.get("deletionTimestamp") and event_type != "DELETED":
                self._confirm_deletion(pod, exit_code)
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
                with self._lock:
                    already = (namespace, name) in self._running
                if not already:
                    self.run_pod(namespace, name)
            elif self.auto_start:
                with contextlib.suppress(ApiError):
                    self.start_pod(namespace, name)
        if self.on_pod_event is not None:
            self.on_pod_event(event_type, pod)

    def _confirm_deletion(self, pod: Mapping[str, Any], exit_code: int | None) -> None:
        meta = pod["metadata"]
        self._report_killed(pod, exit_code)
        # A kubelet confirms graceful deletion once the containers are gone. A pod held
        # by a finalizer stays (terminating, grace 0) until its owner removes it: asking
        # again would change nothing, so it is asked once.
        if meta.get("deletionGracePeriodSeconds") != 0:
            with contextlib.suppress(ApiError):
                self._request(
                    "DELETE",
                    f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta.get("uid")}},
                )

    def _terminate_gracefully_async(self, pod: dict[str, Any]) -> None:
        """A profile pod being deleted: preStop, SIGTERM, the grace period, in a thread.

        Its own thread because the preStop hook and the graceful stop take seconds (the
        webhook's sleep 10 s, then gunicorn's drain), while the kubelet keeps starting the
        replacement pods a rolling update creates meanwhile.
        """
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self._terminating:
                return
            self._terminating.add(uid)
        threading.Thread(
            target=self._terminate_gracefully,
            args=(pod,),
            daemon=True,
            name=f"terminate-{pod['metadata']['name']}",
        ).start()

    def _terminate_gracefully(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            grace = float(
                meta.get("deletionGracePeriodSeconds")
                or pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
            )
            exit_code = self._kill(meta["namespace"], meta["name"], uid=meta["uid"], grace=grace)
            if not self._stop.is_set():  # a stopped kubelet's API server may be gone already
                self._confirm_deletion(pod, exit_code)
        finally:
            with self._lock:
                self._terminating.discard(meta["uid"])

    def _run_pre_stop(self, container: Mapping[str, Any], *, timeout: float) -> None:
        """The container's ``preStop`` hook: an ``exec`` command or a ``sleep``."""
        hook = (container.get("lifecycle") or {}).get("preStop") or {}
        if "sleep" in hook:
            self._stop.wait(min(timeout, float(hook["sleep"].get("seconds", 0))))
        elif "exec" in hook:
            command = [str(part) for part in hook["exec"].get("command", [])]
            try:
                subprocess.run(command, timeout=timeout, check=False, capture_output=True)
            except (OSError, subprocess.TimeoutExpired) as error:
                log.info("preStop hook %r: %s", command, error)

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
            self._end_logs(pod)

    def _pod_on_node(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._pods.get((namespace, name))

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

    def _kill(
        self, namespace: str, name: str, *, uid: str | None, grace: float | None = None
    ) -> int | None:
        """Stop the pod's process (exec mode); return its exit code (None: no process).

        With ``grace`` (profile pods), as a kubelet does: the preStop hook, then SIGTERM, and
        SIGKILL once the grace period is over; without it, SIGTERM and 5 s.
        """
        with self._lock:
            running = self._running.get((namespace, name))
            if running is None or (uid is not None and running.uid != uid):
                return None
            running.stopping = True
            del self._running[(namespace, name)]
        self._stop_probes(running.uid)
        deadline = time.monotonic() + (5.0 if grace is None else grace)
        if grace is not None:
            with self._lock:
                pod = self._pods.get((namespace, name))
            found = self._profile_container(pod) if pod is not None else None
            if found is not None:
                self._run_pre_stop(found[0], timeout=grace)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.process.pid, signal.SIGTERM)
        try:
            returncode = running.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGKILL)
            returncode = running.process.wait()
        if self.exec_settings is not None:
            hostsfile.remove(self.exec_settings.hosts_file, owner=f"{namespace}/{name}")
        self._release_pod(running.uid)
        # A process killed by signal N reports -N; a container runtime reports 128 + N.
        return 128 - returncode if returncode < 0 else returncode

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

    def _start_log_server(self) -> None:
        if self.exec_settings is not None:
            self._log_root = self.exec_settings.log_dir / "containers"
            self._own_log_root = False
        else:
            self._log_root = Path(tempfile.mkdtemp(prefix=f"test-kubelet-{self.node_name}-"))
            self._own_log_root = True
        self._logs = LogStore(self._log_root)
        tls = kubelet_tls.bootstrap(self.api, node_name=self.node_name)
        self._server = KubeletServer(tls=tls, store=self._logs, pods=self._pod_on_node).start()

    @property
    def log_port(self) -> int | None:
        """The loopback port of this kubelet's HTTPS endpoint (None before :meth:`start`)."""
        return None if self._server is None else self._server.port

    def start(self) -> TestKubelet:
        """Serve logs, register the node and start binding (and, in exec mode, running) pods."""
        self._start_log_server()
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
        # In parallel: each process gets its few seconds to stop at the same time.
        stoppers = [
            threading.Thread(target=self._kill, args=key, kwargs={"uid": None}, daemon=True)
            for key in keys
        ]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        if self._thread is not None:
            self._thread.join(timeout=0.5)
        if self.exec_settings is not None:
            hostsfile.remove_all(self.exec_settings.hosts_file)
        self.pod_ips.release_all()
        for made in sorted(self._made_mount_points):
            remove_empty_tree(made)
        self._made_mount_points.clear()
        if self._logs is not None:
            self._logs.end_all()
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._own_log_root and self._log_root is not None:
            shutil.rmtree(self._log_root, ignore_errors=True)

    def __enter__(self) -> TestKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
