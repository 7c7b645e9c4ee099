"""Leader election on a ``coordination.k8s.io/v1`` Lease: of several controllers, one acts.

The algorithm is client-go's: a candidate takes the Lease when it does not exist, when it is
released (no holder), or when its holder has not renewed it for ``leaseDurationSeconds`` as
measured on the candidate's own monotonic clock since the candidate last saw the record change
(so clocks of different machines are never compared). Every write carries the read
``resourceVersion``, so two candidates racing for an expired Lease cannot both win. The leader
renews every ``retry_period``; if it cannot renew for ``renew_deadline`` it stops leading, and the
process exits, because the others may already act. A graceful stop releases the Lease, so a
successor takes over at once instead of after the lease duration; so does a restarted container
that finds the Lease held under its own identity (its dead predecessor's).

Why not ``kubernetes.leaderelection`` (shipped with kubernetes 37): it talks through the global
default client and model objects, its loops sleep with ``time.sleep`` and cannot be stopped (no
graceful stop, no release), it exits the interpreter (``sys.exit``) on bad settings, it rejects
retry periods under one second (tests use shorter leases), and its lock logs and swallows every
API error, so a caller cannot tell a lost race (409) from an unreachable API server. What it gets
right is kept here: expiry measured from its own observation time, and replacing the Lease it
read (with that read's resourceVersion) so a lost race fails.
"""

from __future__ import annotations

import datetime
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.runtime.client import AlreadyExists, Conflict, KubeClient, NotFound, leases_path
from controller.runtime.settings import ControllerSettings
from shared.apitime import format_micro_time

log = logging.getLogger(__name__)

STANDBY_PRECEDENCE = 3
"""Retry periods a restarted process leaves a freed Lease to others (``_release_predecessors``)."""


@dataclass(frozen=True, kw_only=True)
class ElectionSettings:
    """Where the Lease lives and how fast leadership moves."""

    namespace: str
    """Namespace of the Lease (the controller's own namespace in a cluster)."""
    name: str = "mxjob-controller"
    """Name of the Lease; every replica of one deployment must use the same."""
    identity: str
    """This candidate's unique name (hostname + pid + a random suffix)."""
    lease_duration: float = 15.0
    """Seconds a stale Lease must stay unrenewed before another candidate takes it: the
    longest a dead leader's jobs wait for the next."""
    renew_deadline: float = 10.0
    """Seconds the leader keeps trying to renew before it gives up leading (must be below
    ``lease_duration`` so it stops before anyone else may start)."""
    retry_period: float = 2.0
    """Seconds between attempts to acquire or renew."""

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry_period < renew_deadline < lease_duration "
                f"(got {self.retry_period}, {self.renew_deadline}, {self.lease_duration})"
            )

    @classmethod
    def of(cls, settings: ControllerSettings) -> ElectionSettings:
        """The election the process's settings (its flags) ask for."""
        return cls(
            namespace=settings.lease_namespace,
            name=settings.lease_name,
            identity=settings.identity,
            lease_duration=settings.lease_duration,
            renew_deadline=settings.renew_deadline,
            retry_period=settings.retry_period,
        )


def _released_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A Lease spec with no holder, which any candidate may take at once (client-go's release)."""
    now = format_micro_time(datetime.datetime.now(datetime.UTC))
    return {
        "leaseDurationSeconds": 1,
        "acquireTime": now,
        "renewTime": now,
        "leaseTransitions": spec.get("leaseTransitions") or 0,
    }


class LeaderElector:
    """Acquires, renews and releases one Lease."""

    def __init__(
        self,
        client: KubeClient,
        settings: ElectionSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.settings = settings
        self._clock = clock
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._holding = False
        """This process acquired the Lease (and has not released it). A Lease held under our
        identity that this process never acquired is a previous incarnation's: a restarted
        container keeps its pod name, and the kubelet starts it only after the old one died.
        That Lease is released at once (see ``_release_predecessors``) rather than waited out
        for ``lease_duration``."""
        self._deferring_until = 0.0
        """Until then this process does not take a released Lease: after releasing its
        predecessor's, it leaves the standby, whose cache is warm, the first pick."""
        self._leading = threading.Event()

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def _path(self, *, named: bool = True) -> str:
        return leases_path(self.settings.namespace, self.settings.name if named else None)

    def _spec(self, *, acquire_time: str, transitions: int, now: str) -> dict[str, Any]:
        return {
            "holderIdentity": self.settings.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.settings.lease_duration)),
            "acquireTime": acquire_time,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this candidate holds the Lease afterwards."""
        now = format_micro_time(datetime.datetime.now(datetime.UTC))
        try:
            lease = self.client.request("GET", self._path())
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.settings.name, "namespace": self.settings.namespace},
                "spec": self._spec(acquire_time=now, transitions=0, now=now),
            }
            try:
                self.client.request("POST", self._path(named=False), body=body)
            except AlreadyExists:
                return False
            self._mark_renewed()
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        mono = self._clock()
        if record != self._observed:
            self._observed = record
            self._observed_at = mono
        duration = spec.get("leaseDurationSeconds") or self.settings.lease_duration
        ours = holder == self.settings.identity and self._holding
        if holder == self.settings.identity and not ours:
            self._release_predecessors(lease, spec)
            return False
        if not holder and mono < self._deferring_until:
            return False
        if holder and not ours and mono < self._observed_at + duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)
        lease["spec"] = self._spec(
            acquire_time=(spec.get("acquireTime") or now) if ours else now,
            transitions=transitions,
            now=now,
        )
        try:
            self.client.request("PUT", self._path(), body=lease)
        except Conflict:
            return False
        if not ours:
            log.info("acquired lease %s/%s", self.settings.namespace, self.settings.name)
        self._mark_renewed()
        return True

    def _release_predecessors(self, lease: dict[str, Any], spec: dict[str, Any]) -> None:
        """Release the Lease a previous incarnation of this identity held, and stand back.

        The predecessor is dead (one container of a pod runs at a time), so nobody acts for the
        Lease now: waiting ``lease_duration`` for it to expire would only delay every job. Freed,
        it goes to a standby at its next attempt (within ``retry_period``); this process takes
        it only if nobody has after three retry periods (it runs alone, or the others are slow:
        a standby on a loaded node may miss one attempt).
        """
        lease["spec"] = _released_spec(spec)
        try:
            self.client.request("PUT", self._path(), body=lease)
        except Conflict:
            return
        self._observed = None
        self._deferring_until = self._clock() + STANDBY_PRECEDENCE * self.settings.retry_period
        log.info(
            "released lease %s/%s held by a previous process of %s",
            self.settings.namespace,
            self.settings.name,
            self.settings.identity,
        )

    def _mark_renewed(self) -> None:
        self._holding = True
        self._last_renew = self._clock()
        self._observed = None

    def run(
        self,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        stop: threading.Event,
    ) -> None:
        """Block until leading, call ``on_started_leading``, renew until ``stop`` or loss.

        On loss ``on_stopped_leading`` is called (the process should exit: others may act
        now). On ``stop`` it returns still holding the Lease, so that the caller can finish
        its in-flight work first and then :meth:`release` it.
        """
        settings = self.settings
        log.info(
            "waiting to lead as %s (lease %s/%s)",
            settings.identity,
            settings.namespace,
            settings.name,
        )
        while not stop.is_set():
            if self._attempt():
                break
            stop.wait(settings.retry_period)
        if stop.is_set():
            return
        self._leading.set()
        log.info("leading as %s", settings.identity)
        on_started_leading()
        while not stop.wait(settings.retry_period):
            if self._attempt():
                continue
            if self._clock() - self._last_renew >= settings.renew_deadline:
                self._leading.clear()
                log.error("lost the lease %s/%s: stopping", settings.namespace, settings.name)
                on_stopped_leading()
                return

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception as error:  # any failure is one failed attempt
            log.warning("lease %s/%s: %s", self.settings.namespace, self.settings.name, error)
            return False

    def release(self) -> None:
        """Give the Lease up (if held) so that another candidate takes it at once."""
        if not self._leading.is_set():
            return
        self._leading.clear()
        self._holding = False
        try:
            lease = self.client.request("GET", self._path())
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.settings.identity:
                return
            lease["spec"] = _released_spec(spec)
            self.client.request("PUT", self._path(), body=lease)
            log.info("released lease %s/%s", self.settings.namespace, self.settings.name)
        except Exception as error:
            log.warning("could not release lease: %s", error)
