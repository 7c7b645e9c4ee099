"""Exec mode's container processes: started with the pod's command and env, their output piped
into the container logs, reaped, stopped; their exit codes as a container runtime reports them.

These processes are not started through :mod:`localkube.base.programs`, the runner of this
machine's programs, on purpose: a container's stdout and stderr are two streams for ``kubectl
logs`` (each CRI log line names its stream), while the runner appends both to one file, so each
process here gets two pipes drained by threads into its container log and its pod's plain log;
its exit status is the container's (reported as 128 + N for a signal, read from ``wait`` by the
reaper thread, which the runner's polling stop would reap away), and a command that cannot start
is a container status (``StartError``), not an error of the harness.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

from localkube.kubelet.crilog import STDERR, STDOUT
from localkube.kubelet.logserver import ContainerLog
from localkube.kubelet.profile.entrypoints import ExecProfile

PodKey = tuple[str, str]
"""``(namespace, name)``."""


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

    def base_env(self, hostname: str) -> dict[str, str]:
        """What every process gets before the pod's own env: PATH (with the prefix), HOME,
        HOSTNAME (the pod's name) and a UTF-8 locale."""
        return {
            "PATH": os.pathsep.join([*self.path_prefix, os.environ.get("PATH", "")]),
            "HOME": os.environ.get("HOME", "/root"),
            "HOSTNAME": hostname,
            "LANG": "C.UTF-8",
        }

    def plain_log(self, namespace: str, name: str) -> Path:
        """The pod's plain log (its directory made)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return self.log_dir / f"{namespace}_{name}.log"


@dataclass(frozen=True)
class Launch:
    """What to run for a pod's container; kept to start it again after a restart."""

    argv: list[str]
    env: dict[str, str]
    log_path: Path
    host_names: tuple[str, ...]
    """The names pointed at 127.0.0.1 for it (its job's Services), removed when it ends."""
    container: Mapping[str, Any]


def container_exit_code(returncode: int) -> int:
    """A process killed by signal N reports -N; a container runtime reports 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


class PlainLog:
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


def _pump(source: IO[bytes], *, stream: str, log: ContainerLog, plain: PlainLog) -> None:
    """Copy one of a process's output pipes into its container log and the pod's plain log."""
    with source:
        while chunk := os.read(source.fileno(), 65536):
            plain.write(chunk)
            log.append(chunk, stream=stream)


@dataclass
class PodProcess:
    """A pod's running container process."""

    process: subprocess.Popen[bytes]
    namespace: str
    name: str
    uid: str
    restart_policy: str
    launch: Launch
    container_log: ContainerLog
    pumps: tuple[threading.Thread, ...]
    plain: PlainLog
    stopping: bool = False
    """Being stopped by the kubelet: its exit is not the container's to report."""

    @property
    def key(self) -> PodKey:
        return (self.namespace, self.name)


class ProcessTable:
    """The running container processes of one kubelet, one per pod."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[PodKey, PodProcess] = {}

    def start(
        self, pod: Mapping[str, Any], launch: Launch, container_log: ContainerLog
    ) -> PodProcess:
        """Start the container's process in a session of its own, its output pumped.

        A command that cannot start raises the ``OSError`` after saying so in both logs.
        """
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        working_dir = launch.container.get("workingDir")
        cwd = working_dir if working_dir and Path(working_dir).is_dir() else None
        plain = PlainLog(launch.log_path)
        try:
            process = subprocess.Popen(
                launch.argv,
                env=launch.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as error:
            message = f"cannot start {launch.argv!r}: {error}\n".encode()
            plain.write(message)
            plain.close()
            container_log.append(message, stream=STDERR)
            raise
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
        running = PodProcess(
            process=process,
            namespace=namespace,
            name=name,
            uid=meta["uid"],
            restart_policy=pod.get("spec", {}).get("restartPolicy", "Always"),
            launch=launch,
            container_log=container_log,
            pumps=pumps,
            plain=plain,
        )
        with self._lock:
            self._running[running.key] = running
        return running

    def watch(self, running: PodProcess, on_exit: Callable[[PodProcess, int], None]) -> None:
        """Reap the process in a thread; unless the kubelet stopped it, call
        ``on_exit(process, exit code)`` once its output is all in its logs."""
        threading.Thread(
            target=self._reap,
            args=(running, on_exit),
            daemon=True,
            name=f"reap-{running.namespace}/{running.name}",
        ).start()

    def _reap(self, running: PodProcess, on_exit: Callable[[PodProcess, int], None]) -> None:
        returncode = running.process.wait()
        # The output is complete before the exit is reported, so a log read after the pod shows
        # terminated has it all (a child that kept the pipes open is not waited for long).
        for pump in running.pumps:
            pump.join(timeout=2)
        running.plain.close()
        running.container_log.end()
        with self._lock:
            if self._running.get(running.key) is running:
                del self._running[running.key]
        if not running.stopping:
            on_exit(running, container_exit_code(returncode))

    def running(self, key: PodKey) -> bool:
        with self._lock:
            return key in self._running

    def pod_keys(self) -> list[PodKey]:
        with self._lock:
            return list(self._running)

    def claim(self, key: PodKey, *, uid: str | None) -> PodProcess | None:
        """Take the pod's process (of pod ``uid``, if given) out of the table to stop it."""
        with self._lock:
            running = self._running.get(key)
            if running is None or (uid is not None and running.uid != uid):
                return None
            running.stopping = True
            del self._running[key]
        return running

    def signal(self, key: PodKey, sig: int) -> None:
        """Send ``sig`` to the pod's process group, if it runs."""
        with self._lock:
            running = self._running.get(key)
        if running is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, sig)


def stop_pod_process(running: PodProcess, *, deadline: float) -> int:
    """SIGTERM the process group, SIGKILL it at ``deadline`` (monotonic); the exit code."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(running.process.pid, signal.SIGTERM)
    try:
        returncode = running.process.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.process.pid, signal.SIGKILL)
        returncode = running.process.wait()
    return container_exit_code(returncode)
