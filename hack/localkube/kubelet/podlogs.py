"""The test kubelet's container logs and the HTTPS endpoint that serves them to ``kubectl logs``.

Every container of a pod that starts gets a running log (the main container one per restart,
see :mod:`localkube.kubelet.podstatus`), ended when the container or the pod ends. The files live
under the exec-mode log directory (``<log_dir>/containers``, kept for reading post mortem) or, in
manual mode, in a temporary directory removed at stop. The store and the server are
:mod:`localkube.kubelet.logserver`'s; the serving certificate comes from
:mod:`localkube.kubelet.tls`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localkube.base.api import Api
from localkube.kubelet import podstatus
from localkube.kubelet import tls as kubelet_tls
from localkube.kubelet.logserver import ContainerLog, KubeletServer, LogStore, PodLookup


class PodLogs:
    """One kubelet's container logs; serving from :meth:`start` to :meth:`stop`."""

    def __init__(self, api: Api, *, node_name: str, exec_log_dir: Path | None) -> None:
        self.api = api
        self.node_name = node_name
        self.exec_log_dir = exec_log_dir
        """Exec mode's log directory (None in manual mode)."""
        self._root: Path | None = None
        self._own_root = False
        self._store: LogStore | None = None
        self._server: KubeletServer | None = None

    @property
    def port(self) -> int | None:
        """The loopback port of the HTTPS endpoint (None while not serving)."""
        return None if self._server is None else self._server.port

    def start(self, pods: PodLookup) -> None:
        """Make the store and serve it; ``pods`` says which pods are on the node."""
        if self.exec_log_dir is not None:
            self._root = self.exec_log_dir / "containers"
            self._own_root = False
        else:
            self._root = Path(tempfile.mkdtemp(prefix=f"test-kubelet-{self.node_name}-"))
            self._own_root = True
        self._store = LogStore(self._root)
        tls = kubelet_tls.bootstrap(self.api, node_name=self.node_name)
        self._server = KubeletServer(tls=tls, store=self._store, pods=pods).start()

    def stop(self) -> None:
        """End every log, stop serving, and remove a temporary log directory."""
        if self._store is not None:
            self._store.end_all()
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._own_root and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    def container_log(
        self, pod: Mapping[str, Any], container: str, *, restart: int
    ) -> ContainerLog | None:
        """The log of one container instance, created running; None before :meth:`start`."""
        if self._store is None:
            return None
        meta = pod["metadata"]
        return self._store.instance(
            namespace=meta["namespace"],
            pod=meta["name"],
            uid=meta["uid"],
            container=container,
            restart=restart,
        )

    def open(self, pod: Mapping[str, Any]) -> None:
        """Every container of a starting pod gets a (running) log; the main one per restart."""
        main = podstatus.main_container_name(pod)
        for container in podstatus.containers(pod):
            name = str(container.get("name"))
            restart = podstatus.restart_count(pod) if name == main else 0
            self.container_log(pod, name, restart=restart)

    def end(self, pod: Mapping[str, Any]) -> None:
        """Every container of the pod has stopped."""
        if self._store is not None:
            self._store.end_pod(pod["metadata"]["uid"])

    def write(self, pod: Mapping[str, Any], text: str, *, container: str, stream: str) -> None:
        """Append ``text`` to the running instance of ``container`` (manual mode's output)."""
        main = podstatus.main_container_name(pod)
        restart = podstatus.restart_count(pod) if container == main else 0
        container_log = self.container_log(pod, container, restart=restart)
        if container_log is None:
            raise RuntimeError("the kubelet is not started")
        container_log.append(text.encode(), stream=stream)

    def restart(self, pod: Mapping[str, Any], *, count: int) -> None:
        """The main container restarted in place: its previous log ends, log ``count`` starts."""
        main = podstatus.main_container_name(pod)
        ended = self.container_log(pod, main, restart=count - 1)
        if ended is not None:
            ended.end()
        self.container_log(pod, main, restart=count)
