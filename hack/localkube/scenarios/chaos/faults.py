"""The fault loop: one fault at a time at random moments, each followed by a probe MXJob that
times how long the operator took to work again."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import signal
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from localkube.base.api import Api
from localkube.plane.controlplane import ControlPlane
from localkube.scenarios.chaos.jobs import Jobs
from localkube.scenarios.chaos.plan import (
    BYSTANDER_NAMESPACE,
    GROUP_PATH,
    NAMESPACE,
    RECOVERY_LIMIT,
    ChaosConfig,
    probe_plan,
)
from localkube.scenarios.chaos.report import Fault
from localkube.scenarios.chaos.supervisor import ControllerSupervisor, children


def fault_schedule(config: ChaosConfig, rng: random.Random) -> list[str]:
    """The kinds of fault the run causes, in a random order."""
    kinds = (
        ["controller"] * config.controller_kills
        + ["webhook"] * config.webhook_kills
        + ["apiserver"] * config.apiserver_restarts
        + ["etcd"] * config.etcd_restarts
        + ["compaction"] * config.compactions
    )
    rng.shuffle(kinds)
    return kinds


class FaultInjector:
    """Causes the faults of a :func:`fault_schedule`; each one becomes a :class:`Fault` row."""

    def __init__(
        self,
        *,
        rng: random.Random,
        jobs: Jobs,
        plane: ControlPlane,
        supervisor: ControllerSupervisor,
        webhook_pid: int,
        say: Callable[[str], None],
    ) -> None:
        self.random = rng
        self.jobs = jobs
        self.plane = plane
        self.supervisor = supervisor
        self.webhook_pid = webhook_pid
        self.say = say

    def run(self, schedule: list[str], gap: tuple[float, float], faults: list[Fault]) -> None:
        """Cause each fault of ``schedule`` after a random pause, appending it to ``faults``."""
        api = Api.from_kubeconfig(self.plane.kubeconfig)
        for number, kind in enumerate(schedule):
            time.sleep(self.random.uniform(*gap))
            fault = Fault(kind=kind, started=self.jobs.now())
            started = self._cause(fault, api)
            fault.recovered_after = self._probe(api, number, started + fault.outage)
            recovered = fault.recovered_after
            self.say(
                f"chaos: {fault.started:6.1f}s {kind:<10} {fault.detail}; recovered after "
                + ("never" if recovered is None else f"{recovered:.2f} s")
            )
            faults.append(fault)

    def _cause(self, fault: Fault, api: Api) -> float:
        """Cause ``fault``, filling in its detail and outage; return when its outage started
        (``time.monotonic()``)."""
        started = time.monotonic()
        if fault.kind == "controller":
            self.supervisor.kill_and_restart()
            fault.detail = f"SIGKILL, new process {self.supervisor.generation}"
        elif fault.kind == "webhook":
            workers = children(self.webhook_pid)
            victim = self.random.choice(workers)
            os.kill(victim, signal.SIGKILL)
            fault.detail = f"SIGKILL worker {victim} of {len(workers)}"
        elif fault.kind == "apiserver":
            revision = self._compact(api)
            started = time.monotonic()
            self.plane.restart_component("kube-apiserver")
            fault.outage = time.monotonic() - started
            fault.detail = f"SIGTERM, then started again; etcd compacted at {revision} first"
        elif fault.kind == "etcd":
            self.plane.restart_component("etcd")
            fault.outage = time.monotonic() - started
            fault.detail = "SIGTERM, then started again on the same data dir"
        else:
            revision = self._compact(api)
            fault.detail = f"compacted at revision {revision}"
        return started

    def _compact(self, api: Api) -> int:
        """Advance etcd's revision with writes nobody watches, then compact everything before it,
        so that every watcher's last resourceVersion is compacted away: the next watch it opens
        straight on etcd (or on a watch cache rebuilt after a restart) gets 410 Gone."""
        state = self.plane.state()
        assert state is not None
        for index in range(20):
            with contextlib.suppress(Exception):
                api.request(
                    "PUT" if index else "POST",
                    f"/api/v1/namespaces/{BYSTANDER_NAMESPACE}/configmaps"
                    + ("/tick" if index else ""),
                    body={"metadata": {"name": "tick"}, "data": {"n": str(index)}},
                )
        key = base64.b64encode(b"/").decode()
        revision = int(
            _etcd(state.etcd_url, "/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"]
        )
        _etcd(state.etcd_url, "/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def _probe(self, api: Api, number: int, started: float) -> float | None:
        """Seconds from ``started`` until a new MXJob was admitted and the controller wrote its
        status (None if not within three times the limit)."""
        plan = probe_plan(number)
        deadline = started + 3 * RECOVERY_LIMIT
        try:
            self.jobs.create(api, plan, deadline=deadline)
        except Exception:
            return None
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                job = api.request("GET", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs/{plan.name}")
                if (job.get("status") or {}).get("state"):
                    return time.monotonic() - started
            time.sleep(0.05)
        return None


def _etcd(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` to etcd's JSON gateway."""
    request = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer
