"""The install profile on one kubelet: which pods it runs, what each one's process is given, and
what is left to clean up (addresses, mount points, volume files, probes).

:meth:`ProfilePods.prepare` turns a profile pod into the :class:`localkube.kubelet.execs.Launch`
exec mode starts: its own address, its env, its volumes written and mounted in a private mount
namespace, listen addresses bound to its address. Exec mode
(:mod:`localkube.kubelet.execpods`) starts, restarts and stops it. See
:mod:`localkube.kubelet.profile` for what the profile is.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localkube.base.api import ApiError
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet import podstatus
from localkube.kubelet.execs import ExecSettings, Launch
from localkube.kubelet.kubeapi import KubeletApi
from localkube.kubelet.podenv import resolve_command, resolve_env
from localkube.kubelet.profile.podips import PodIpPool
from localkube.kubelet.profile.probes import PodProbes
from localkube.kubelet.profile.sandbox import (
    bind_to_pod_ip,
    in_mount_namespace,
    missing_mount_points,
    mounted_anywhere,
    remove_empty_tree,
)
from localkube.kubelet.profile.volumes import Mount, VolumeError, decode_data, write_volumes

log = logging.getLogger(__name__)


class ProfilePods:
    """The profile's pods on one kubelet; without a profile, no pod is one of them."""

    def __init__(self, settings: ExecSettings | None, kube: KubeletApi) -> None:
        self.settings = settings
        self.kube = kube
        self.pod_ips = PodIpPool()
        """Addresses of the pods run by the profile (others share 127.0.0.1)."""
        self.probes = PodProbes()
        self._lock = threading.Lock()
        self._made_mount_points: set[Path] = set()
        """Directories made on this machine as mount points of profile pods (removed at stop)."""

    def container(self, pod: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
        """The container the profile runs, and its program; None: not a profile pod."""
        profile = self.settings.profile if self.settings is not None else None
        if profile is None:
            return None
        for container in podstatus.containers(pod):
            program = profile.entrypoint(str(container.get("image", "")))
            if program is not None:
                return container, program
        return None

    def pod_ip(self, pod: Mapping[str, Any]) -> str:
        """The pod's own address while it has one, the node's otherwise."""
        return self.pod_ips.get(pod["metadata"]["uid"]) or podstatus.HOST_IP

    def pod_dir(self, uid: str) -> Path:
        """Where the pod's volumes are written."""
        assert self.settings is not None
        return self.settings.log_dir / "pods" / uid

    def prepare(self, pod: dict[str, Any]) -> Launch:
        """Everything the pod's process needs, made ready: its address, env and volumes.

        Raises :class:`VolumeError` or :class:`localkube.kubelet.podenv.PodEnvError` when the
        pod cannot start yet (a kubelet keeps it waiting and retries).
        """
        assert self.settings is not None and self.settings.profile is not None
        profile = self.settings.profile
        found = self.container(pod)
        assert found is not None
        container, program = found
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        pod_ip = self.pod_ips.allocate(meta["uid"])
        # The Downward API's status.podIP is this pod's own address.
        pod = {**pod, "status": {**pod.get("status", {}), "podIP": pod_ip}}
        config_map_key, secret_key = self.kube.env_sources(namespace)
        env = resolve_env(pod, container, config_map=config_map_key, secret=secret_key)
        mounts = self.write_mounts(pod, container)
        # The image's entrypoint is the profile's program; `command`, when set, replaces it.
        argv = resolve_command({**container, "command": container.get("command") or [program]}, env)
        # The program runs from this checkout and its virtualenv (the "image"): a volume over
        # their directory (an emptyDir on /tmp, a checkout under /tmp) must not hide them.
        venv = str(Path(program).parent.parent)
        keep = [str(PROJECT_ROOT)] + ([] if venv.startswith(f"{PROJECT_ROOT}/") else [venv])
        argv = in_mount_namespace(mounts, bind_to_pod_ip(argv, pod_ip), keep_visible=keep)
        process_env = {
            **self.settings.base_env(name),
            # What every container gets, enableServiceLinks or not: the API server's address.
            "KUBERNETES_SERVICE_HOST": profile.api_host,
            "KUBERNETES_SERVICE_PORT": str(profile.api_port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(profile.api_port),
            **env,
        }
        log_path = self.settings.plain_log(namespace, name)
        return Launch(argv, process_env, log_path, host_names=(), container=container)

    def write_mounts(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[Mount]:
        """Write the volumes ``container`` mounts into the pod's directory (removed with the
        pod, :meth:`release`); their mounts. Every exec-mode pod's volumes are made here, the
        profile's and the jobs' alike, so the mount points made on this machine for any of them
        are known and removed at stop (:meth:`release_all`).

        Raises :class:`VolumeError` while a volume cannot be made (a kubelet keeps the pod
        waiting and retries).
        """
        meta = pod["metadata"]
        namespace = meta["namespace"]
        mounts = write_volumes(
            pod,
            container,
            root=self.pod_dir(meta["uid"]) / "volumes",
            secret=lambda n: self._object_data(namespace, "secrets", n),
            config_map=lambda n: self._object_data(namespace, "configmaps", n),
            token=lambda account, audiences, seconds: self._token(pod, account, audiences, seconds),
        )
        with self._lock:
            self._made_mount_points.update(missing_mount_points(mounts))
        return mounts

    def _object_data(self, namespace: str, plural: str, name: str) -> dict[str, bytes] | None:
        obj = self.kube.get_object(namespace, plural, name)
        return None if obj is None else decode_data(obj, binary=plural == "secrets")

    def _token(
        self, pod: Mapping[str, Any], account: str, audiences: list[str], seconds: int
    ) -> str:
        try:
            return self.kube.request_token(pod, account, audiences, seconds)
        except ApiError as error:
            raise VolumeError(f"token for service account {account!r}: {error.reason}") from error

    def run_pre_stop(
        self, container: Mapping[str, Any], *, timeout: float, stopping: threading.Event
    ) -> None:
        """The container's ``preStop`` hook: an ``exec`` command or a ``sleep`` (cut short when
        the kubelet stops)."""
        hook = (container.get("lifecycle") or {}).get("preStop") or {}
        if "sleep" in hook:
            stopping.wait(min(timeout, float(hook["sleep"].get("seconds", 0))))
        elif "exec" in hook:
            command = [str(part) for part in hook["exec"].get("command", [])]
            try:
                subprocess.run(command, timeout=timeout, check=False, capture_output=True)
            except (OSError, subprocess.TimeoutExpired) as error:
                log.info("preStop hook %r: %s", command, error)

    def release(self, uid: str) -> None:
        """A pod's process is gone for good: its probes, address and files go."""
        self.probes.stop(uid)
        self.pod_ips.release(uid)
        if self.settings is not None:
            shutil.rmtree(self.pod_dir(uid), ignore_errors=True)

    def release_all(self) -> None:
        """The kubelet stops: every address goes, and the mount points it made on this machine."""
        self.pod_ips.release_all()
        with self._lock:
            made, self._made_mount_points = sorted(self._made_mount_points), set()
        for path in made:
            # Another kubelet's pods may use the mount point still: removing it would unmount
            # their volumes (see mounted_anywhere). It stays then, an empty directory.
            if not mounted_anywhere(path):
                remove_empty_tree(path)
