"""Readiness and liveness probes of a pod run by the test kubelet, as a kubelet runs them.

An ``httpGet`` probe asks ``<scheme>://<pod IP>:<port><path>`` every ``periodSeconds`` after
``initialDelaySeconds``; any 2xx/3xx within ``timeoutSeconds`` is a success. HTTPS is not
verified (a kubelet does not verify either). ``failureThreshold`` failures in a row make the
probe fail, ``successThreshold`` successes make it pass again. Readiness starts failed and
drives the pod's Ready condition (and so the Service's EndpointSlice); a failed liveness probe
makes the kubelet restart the container. ``tcpSocket`` probes connect; ``exec`` and ``grpc``
probes are not supported (a pod using them is treated as having no such probe).

Only the install profile's pods are probed (see :mod:`localkube.kubelet.profile`): they have an
address of their own to probe, which other exec-mode pods (sharing 127.0.0.1) do not.
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProbeSpec:
    """One probe of a container, its port resolved to a number."""

    kind: str
    """``http`` or ``tcp``."""
    port: int
    path: str = "/"
    https: bool = False
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3


def _port(container: Mapping[str, Any], value: Any) -> int:
    if isinstance(value, int) or str(value).isdigit():
        return int(value)
    for port in container.get("ports", []) or []:
        if port.get("name") == value:
            return int(port["containerPort"])
    raise ValueError(f"container {container.get('name')!r} has no port named {value!r}")


def probe_spec(container: Mapping[str, Any], which: str) -> ProbeSpec | None:
    """``readinessProbe`` or ``livenessProbe`` of a container, None when absent/unsupported."""
    probe = container.get(which)
    if not probe:
        return None
    timing = {
        "initial_delay": float(probe.get("initialDelaySeconds", 0)),
        "period": float(probe.get("periodSeconds", 10)),
        "timeout": float(probe.get("timeoutSeconds", 1)),
        "success_threshold": int(probe.get("successThreshold", 1)),
        "failure_threshold": int(probe.get("failureThreshold", 3)),
    }
    if "httpGet" in probe:
        get = probe["httpGet"]
        return ProbeSpec(
            kind="http",
            port=_port(container, get.get("port")),
            path=str(get.get("path", "/")),
            https=str(get.get("scheme", "HTTP")).upper() == "HTTPS",
            **timing,  # type: ignore[arg-type]
        )
    if "tcpSocket" in probe:
        return ProbeSpec(
            kind="tcp",
            port=_port(container, probe["tcpSocket"].get("port")),
            **timing,  # type: ignore[arg-type]
        )
    return None


def check(spec: ProbeSpec, address: str) -> bool:
    """Run the probe once against ``address``."""
    try:
        if spec.kind == "tcp":
            with socket.create_connection((address, spec.port), timeout=spec.timeout):
                return True
        connection: http.client.HTTPConnection
        if spec.https:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            connection = http.client.HTTPSConnection(
                address, spec.port, timeout=spec.timeout, context=context
            )
        else:
            connection = http.client.HTTPConnection(address, spec.port, timeout=spec.timeout)
        try:
            connection.request("GET", spec.path, headers={"User-Agent": "kube-probe/localkube"})
            return 200 <= connection.getresponse().status < 400
        finally:
            connection.close()
    except (OSError, http.client.HTTPException):
        return False


class Prober:
    """Runs one probe in a thread; calls ``on_change(passing)`` when the result flips."""

    def __init__(
        self,
        spec: ProbeSpec,
        address: str,
        *,
        on_change: Callable[[bool], None],
        initially: bool,
        name: str,
    ) -> None:
        self.spec = spec
        self.address = address
        self.on_change = on_change
        self.passing = initially
        self.name = name
        """``readiness`` or ``liveness``."""
        self.started = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name=f"{name}-{address}")

    def start(self) -> Prober:
        if not self.started:
            self.started = True
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        if self._stop.wait(self.spec.initial_delay):
            return
        successes = failures = 0
        while not self._stop.is_set():
            ok = check(self.spec, self.address)
            successes, failures = (successes + 1, 0) if ok else (0, failures + 1)
            flip = (not self.passing and successes >= self.spec.success_threshold) or (
                self.passing and failures >= self.spec.failure_threshold
            )
            if flip and not self._stop.is_set():
                self.passing = not self.passing
                try:
                    self.on_change(self.passing)
                except Exception as error:  # the pod may be gone; the next flip retries
                    log.info("probe of %s: %s", self.address, error)
                    self.passing = not self.passing
            if self._stop.wait(self.spec.period):
                return


class PodProbes:
    """The probes of the running profile pods, by pod uid.

    Registered before the pod's first status is written (so that status knows a readiness probe
    decides), started once its process runs, stopped when it ends or restarts.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probers: dict[str, list[Prober]] = {}

    def register(
        self,
        uid: str,
        container: Mapping[str, Any],
        address: str,
        *,
        on_ready: Callable[[bool], None],
        on_dead: Callable[[], None],
    ) -> None:
        """Create (not start) the pod's probers: readiness starts failed, liveness passing."""
        probers: list[Prober] = []
        readiness = probe_spec(container, "readinessProbe")
        if readiness is not None:
            probers.append(
                Prober(readiness, address, initially=False, name="readiness", on_change=on_ready)
            )
        liveness = probe_spec(container, "livenessProbe")
        if liveness is not None:
            probers.append(
                Prober(
                    liveness,
                    address,
                    initially=True,
                    name="liveness",
                    on_change=lambda alive: None if alive else on_dead(),
                )
            )
        with self._lock:
            self._probers[uid] = probers

    def start(self, uid: str) -> bool:
        """Start the pod's registered probers; False (nothing started) when none are registered
        or they ran already: register them afresh first."""
        with self._lock:
            probers = self._probers.get(uid)
        if probers is None or any(p.started for p in probers):
            return False
        for prober in probers:
            prober.start()
        return True

    def stop(self, uid: str) -> None:
        with self._lock:
            probers = self._probers.pop(uid, [])
        for prober in probers:
            prober.stop()

    def has_readiness(self, uid: str) -> bool:
        """Whether a readiness probe decides when the pod is ready."""
        with self._lock:
            return any(p.name == "readiness" for p in self._probers.get(uid, []))
