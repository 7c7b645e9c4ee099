"""Exec mode: each pod's container runs as a local process, and its exit is the container's.

A pod bound to the node is started with the env a kubelet would give it
(:mod:`localkube.kubelet.podenv`), the files of its API volumes at their mount paths and the
operator's progress Service beside its job's Service names pointed at 127.0.0.1
(:mod:`localkube.kubelet.jobmounts`, :mod:`localkube.kubelet.hostsfile`), and its output in the
container logs; its status goes Running when the process starts. A volume that cannot be made yet
keeps the pod waiting (``ContainerCreating``), retried each second in a thread of its own. When
the process exits, the pod's ``restartPolicy`` decides, as a kubelet's does: restart it in the
same pod (``restartCount`` + 1, the exit as ``lastState``) or write the final phase with the
real exit code. A deleted pod's process is stopped (SIGTERM, SIGKILL after 5 s), or, for the
install profile's pods (:mod:`localkube.kubelet.profile`), after its ``preStop`` hook and grace
period, in a thread of its own.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from localkube.base.api import ApiError
from localkube.kubelet import hostsfile, podstatus
from localkube.kubelet.execs import (
    ExecSettings,
    Launch,
    PodKey,
    PodProcess,
    ProcessTable,
    stop_pod_process,
)
from localkube.kubelet.jobmounts import api_volume_container, progress_host_names, with_mounts
from localkube.kubelet.kubeapi import KubeletApi
from localkube.kubelet.logserver import PodLookup
from localkube.kubelet.podenv import PodEnvError, resolve_command, resolve_env
from localkube.kubelet.podlogs import PodLogs
from localkube.kubelet.profile.pods import ProfilePods
from localkube.kubelet.profile.volumes import VolumeError
from localkube.kubelet.transitions import Transitions

log = logging.getLogger(__name__)

Confirm = Callable[[dict[str, Any], "int | None"], None]
"""What the kubelet does once a deleted pod's process is gone: ``(pod, exit code or None)``."""


def _exec_container(pod: Mapping[str, Any]) -> dict[str, Any] | None:
    """The container exec mode runs: ``mxnet``, else the first one."""
    containers = podstatus.containers(pod)
    return next(
        (c for c in containers if c.get("name") == podstatus.MAIN_CONTAINER),
        containers[0] if containers else None,
    )


class ExecPods:
    """The exec-mode pods of one kubelet: their processes, from start to exit."""

    def __init__(
        self,
        settings: ExecSettings | None,
        *,
        kube: KubeletApi,
        logs: PodLogs,
        transitions: Transitions,
        profile: ProfilePods,
        pods: PodLookup,
        stopping: threading.Event,
    ) -> None:
        self.settings = settings
        self.kube = kube
        self.logs = logs
        self.transitions = transitions
        self.profile = profile
        self.pods = pods
        """The pods on the node as last seen."""
        self.stopping = stopping
        """Set when the kubelet stops."""
        self.processes = ProcessTable()
        self._lock = threading.Lock()
        self._starting: set[str] = set()
        """Pods (by uid) being prepared in a thread of their own: the profile's, and job pods
        whose volumes could not be made at once."""
        self._terminating: set[str] = set()
        """Profile pods (by uid) being stopped gracefully in a thread of their own."""

    def running(self, key: PodKey) -> bool:
        return self.processes.running(key)

    def terminating(self, uid: str) -> bool:
        """Whether a graceful termination of the pod is under way."""
        with self._lock:
            return uid in self._terminating

    # -- start -----------------------------------------------------------------------------------
    def run(self, namespace: str, name: str) -> None:
        """Run the pod's ``mxnet`` container (or its profile program) as a local process."""
        if self.settings is None:
            raise RuntimeError("exec mode needs ExecSettings")
        pod = self.kube.get_pod(namespace, name)
        if self.profile.container(pod) is not None:
            self._start_async(pod, self._start_profile_pod)
            return
        if _exec_container(pod) is None:
            self.transitions.terminate(namespace, name, exit_code=128, reason="ContainerCannotRun")
            return
        with self._lock:
            if pod["metadata"]["uid"] in self._starting:
                return  # waiting for its volumes in a thread of its own
        try:
            self._start_job_pod(pod)
        except PodEnvError as error:
            self.transitions.waiting(pod, "CreateContainerConfigError", str(error))
        except VolumeError:
            self._start_async(pod, self._start_job_pod)

    def _job_launch(self, pod: dict[str, Any]) -> Launch:
        """The job pod's process: its env, its volumes bound at their mount paths
        (:mod:`localkube.kubelet.jobmounts`), and the names pointed at 127.0.0.1 for it.

        Raises :class:`PodEnvError` or :class:`VolumeError` when it cannot start (yet).
        """
        assert self.settings is not None
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        container = _exec_container(pod)
        assert container is not None
        config_map, secret = self.kube.env_sources(namespace)
        env = resolve_env(pod, container, config_map=config_map, secret=secret)
        argv = resolve_command(container, env)
        mounts = self.profile.write_mounts(pod, api_volume_container(pod, container))
        argv = with_mounts(argv, mounts, path_prefix=self.settings.path_prefix)
        process_env = {**self.settings.base_env(name), **self.settings.extra_env, **env}
        names = self.kube.service_host_names(namespace, pod) + progress_host_names(env)
        log_path = self.settings.plain_log(namespace, name)
        return Launch(argv, process_env, log_path, tuple(dict.fromkeys(names)), container)

    def _start_job_pod(self, pod: dict[str, Any]) -> None:
        assert self.settings is not None
        launch = self._job_launch(pod)
        owner = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        hostsfile.add(self.settings.hosts_file, launch.host_names, owner=owner)
        self.start_process(pod, launch)

    def start_process(self, pod: Mapping[str, Any], launch: Launch) -> None:
        """Start the container's process and mark the pod Running; watch for its exit."""
        assert self.settings is not None
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        container_log = self.logs.container_log(
            pod, str(launch.container.get("name")), restart=podstatus.restart_count(pod)
        )
        assert container_log is not None  # started kubelets always have a log store
        try:
            running = self.processes.start(pod, launch, container_log)
        except OSError as error:
            # What a runtime reports when the command cannot be started.
            code = 127 if isinstance(error, FileNotFoundError) else 126
            self.transitions.terminate(
                namespace, name, exit_code=code, reason="StartError", message=str(error)
            )
            hostsfile.remove(self.settings.hosts_file, owner=f"{namespace}/{name}")
            self.profile.release(pod["metadata"]["uid"])  # its volume files, token included
            return
        self.transitions.start(namespace, name)
        self.processes.watch(running, self._on_exit)

    def _start_async(self, pod: Mapping[str, Any], start: Callable[[dict[str, Any]], None]) -> None:
        """Prepare and start a pod in a thread: its volumes may need a retry."""
        uid = pod["metadata"]["uid"]
        with self._lock:
            if uid in self._starting:
                return
            self._starting.add(uid)
        threading.Thread(
            target=self._start_retrying,
            args=(dict(pod), start),
            daemon=True,
            name=f"start-{pod['metadata']['name']}",
        ).start()

    def _start_retrying(
        self,
        pod: dict[str, Any],
        start: Callable[[dict[str, Any]], None],
        *,
        timeout: float = 60,
    ) -> None:
        """Retry each second while its volumes or env cannot be made (the pod shows why); a pod
        given up on (deleted, or still waiting at ``timeout``) leaves no files or address."""
        uid = pod["metadata"]["uid"]
        started = False
        try:
            deadline = time.monotonic() + timeout
            while not self.stopping.is_set():
                try:
                    start(pod)
                    started = True
                    return
                except (VolumeError, PodEnvError) as error:
                    reason = (
                        "ContainerCreating"
                        if isinstance(error, VolumeError)
                        else "CreateContainerConfigError"
                    )
                    with contextlib.suppress(ApiError):
                        self.transitions.waiting(pod, reason, str(error))
                    if time.monotonic() > deadline:
                        return
                    time.sleep(1)
                    try:
                        pod = self.kube.get_pod(
                            pod["metadata"]["namespace"], pod["metadata"]["name"]
                        )
                    except ApiError:
                        return
                    if pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
                        return
        finally:
            if not started:
                self.profile.release(uid)
            with self._lock:
                self._starting.discard(uid)

    def _start_profile_pod(self, pod: dict[str, Any]) -> None:
        launch = self.profile.prepare(pod)
        self._register_probes(pod, launch.container)
        self.start_process(pod, launch)
        self._start_probes(pod, launch.container)

    # -- probes of profile pods ------------------------------------------------------------------
    def _register_probes(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> None:
        """Create (not start) the pod's probers, so its first status knows it must wait."""
        self.profile.probes.register(
            pod["metadata"]["uid"],
            container,
            self.profile.pod_ip(pod),
            on_ready=lambda ready: self.transitions.set_ready(pod, ready),
            on_dead=lambda: self._liveness_failed(pod),
        )

    def _start_probes(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> None:
        if not self.profile.probes.start(pod["metadata"]["uid"]):
            self._register_probes(pod, container)
            self.profile.probes.start(pod["metadata"]["uid"])

    def _liveness_failed(self, pod: Mapping[str, Any]) -> None:
        """A kubelet kills a container whose liveness probe fails; the restart policy decides."""
        meta = pod["metadata"]
        log.info("liveness probe of %s/%s failed: restarting it", meta["namespace"], meta["name"])
        self.kill_process(meta["namespace"], meta["name"], signal.SIGKILL)

    # -- exit ------------------------------------------------------------------------------------
    def _on_exit(self, running: PodProcess, exit_code: int) -> None:
        """The process exited by itself: restart it in place, or the pod ends with its code."""
        restarted = False
        try:
            restart = running.restart_policy == "Always" or (
                running.restart_policy == "OnFailure" and exit_code != 0
            )
            if restart:
                profile_pod = self._back_off(running)
                if profile_pod is None:
                    return
                self.transitions.restart_in_place(
                    running.namespace, running.name, exit_code=exit_code
                )
                restarted = True  # from here on, the pod's address and files stay its own
                self._start_again(running, profile_pod=profile_pod)
                return
            self.transitions.terminate(running.namespace, running.name, exit_code=exit_code)
        except ApiError as error:
            log.info("pod %s/%s gone before its exit was recorded: %s", *running.key, error.reason)
        finally:
            if self.settings is not None and not self.processes.running(running.key):
                owner = f"{running.namespace}/{running.name}"
                hostsfile.remove(self.settings.hosts_file, owner=owner)
            if not restarted:
                self.profile.release(running.uid)

    def _back_off(self, running: PodProcess) -> bool | None:
        """Whether the pod is a profile pod, after its crash-loop back-off; None if it is going
        away meanwhile (deleted, or the kubelet stops) and must not restart."""
        pod = self.kube.get_pod(running.namespace, running.name)
        profile_pod = self.profile.container(pod) is not None
        if profile_pod:
            # A crash loop backs off (a kubelet's CrashLoopBackOff starts at 10 s).
            self.stopping.wait(1.0)
            if pod["metadata"].get("deletionTimestamp") or self.stopping.is_set():
                return None
        return profile_pod

    def _start_again(self, running: PodProcess, *, profile_pod: bool) -> None:
        """The same command in the same pod, with fresh probes for a profile pod."""
        pod = self.kube.get_pod(running.namespace, running.name)  # its new restartCount
        self.profile.probes.stop(running.uid)
        if profile_pod:
            self._register_probes(pod, running.launch.container)
        self.start_process(pod, running.launch)
        if profile_pod:
            self._start_probes(pod, running.launch.container)

    # -- stop ------------------------------------------------------------------------------------
    def kill(
        self, namespace: str, name: str, *, uid: str | None, grace: float | None = None
    ) -> int | None:
        """Stop the pod's process; return its exit code (None: no process).

        With ``grace`` (profile pods), as a kubelet does: the preStop hook, then SIGTERM, and
        SIGKILL once the grace period is over; without it, SIGTERM and 5 s.
        """
        running = self.processes.claim((namespace, name), uid=uid)
        if running is None:
            return None
        self.profile.probes.stop(running.uid)
        deadline = time.monotonic() + (5.0 if grace is None else grace)
        if grace is not None:
            pod = self.pods(namespace, name)
            found = self.profile.container(pod) if pod is not None else None
            if found is not None:
                self.profile.run_pre_stop(found[0], timeout=grace, stopping=self.stopping)
        exit_code = stop_pod_process(running, deadline=deadline)
        if self.settings is not None:
            hostsfile.remove(self.settings.hosts_file, owner=f"{namespace}/{name}")
        self.profile.release(running.uid)
        return exit_code

    def kill_process(self, namespace: str, name: str, sig: int = signal.SIGKILL) -> None:
        """Send a signal to a pod's process, as an OOM kill or preemption would."""
        self.processes.signal((namespace, name), sig)

    def stop_all(self) -> None:
        """Stop every process, in parallel: each gets its few seconds to stop at the same time."""
        stoppers = [
            threading.Thread(target=self.kill, args=key, kwargs={"uid": None}, daemon=True)
            for key in self.processes.pod_keys()
        ]
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()

    def terminate_gracefully_async(self, pod: dict[str, Any], then: Confirm) -> None:
        """A profile pod being deleted: preStop, SIGTERM, the grace period, in a thread; then
        ``then(pod, exit code)`` unless the kubelet stopped meanwhile.

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
            args=(pod, then),
            daemon=True,
            name=f"terminate-{pod['metadata']['name']}",
        ).start()

    def _terminate_gracefully(self, pod: dict[str, Any], then: Confirm) -> None:
        meta = pod["metadata"]
        try:
            grace = float(
                meta.get("deletionGracePeriodSeconds")
                or pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
            )
            exit_code = self.kill(meta["namespace"], meta["name"], uid=meta["uid"], grace=grace)
            if not self.stopping.is_set():  # a stopped kubelet's API server may be gone already
                then(pod, exit_code)
        finally:
            with self._lock:
                self._terminating.discard(meta["uid"])
