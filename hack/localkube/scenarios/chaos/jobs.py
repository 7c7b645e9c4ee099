"""The chaos run's MXJobs: created through admission while faults happen, their scripts played
on their pods through the test kubelet."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from localkube.base.api import AlreadyExists, Api
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.scenarios.chaos.plan import GROUP_PATH, NAMESPACE, TERMINAL, JobPlan, live, phase


class Jobs:
    """The jobs created so far, and the clock of the run (seconds since it started)."""

    def __init__(self, stop: threading.Event, *, say: Callable[[str], None]) -> None:
        self.stop = stop
        self.say = say
        self.plans: dict[str, JobPlan] = {}
        self.lock = threading.Lock()
        self.create_retries = 0
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def create(self, api: Api, plan: JobPlan, *, deadline: float) -> None:
        """Create through admission, retrying while the API server or webhook is away."""
        while True:
            try:
                api.request(
                    "POST", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs", body=plan.manifest()
                )
                break
            except AlreadyExists:
                break  # an earlier attempt went through and only its answer was lost
            except Exception:
                if time.monotonic() > deadline:
                    raise
                self.create_retries += 1
                time.sleep(0.2)
        plan.created_at = self.now()
        with self.lock:
            self.plans[plan.name] = plan

    def create_all(self, plane: ControlPlane, plans: list[JobPlan]) -> None:
        """Create ``plans`` from eight threads at once."""
        self.say(f"chaos: creating {len(plans)} MXJobs")
        batches = [plans[i::8] for i in range(8)]

        def create(batch: list[JobPlan]) -> None:
            api = Api.from_kubeconfig(plane.kubeconfig)
            for plan in batch:
                self.create(api, plan, deadline=time.monotonic() + 60)

        threads = [threading.Thread(target=create, args=(b,)) for b in batches if b]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def drive(self, api: Api, kubelet: TestKubelet) -> None:
        """Play each job's script on its pods; level-triggered, so faults only delay it."""
        while not self.stop.is_set():
            time.sleep(0.25)
            try:
                items = api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
            except Exception:
                continue
            pods = {p["metadata"]["name"]: p for p in items if live(p)}
            with self.lock:
                plans = list(self.plans.values())
            for plan in plans:
                with contextlib.suppress(Exception):
                    self._advance(plan, pods, kubelet)

    def _advance(
        self, plan: JobPlan, pods: dict[str, dict[str, Any]], kubelet: TestKubelet
    ) -> None:
        mine = [pods.get(slot) for slot in plan.slots]
        running = all(p is not None and phase(p) == "Running" for p in mine)
        now = self.now()
        first = plan.slots[-1] if plan.probe else f"{plan.name}-worker-0"
        if plan.step == 0:
            if not running:
                return
            if plan.due is None:
                plan.due = now + (0.2 if plan.probe else plan.delays[0])
            if now < plan.due:
                return
            if plan.probe or plan.script == "succeed":
                target = plan.slots[0] if not plan.probe else first
                kubelet.terminate(NAMESPACE, target, exit_code=0)
                plan.step = 2
            elif plan.script == "fail":
                kubelet.terminate(NAMESPACE, first, exit_code=1)
                plan.step = 2
            else:
                plan.replaced_uid = pods[first]["metadata"]["uid"]
                kubelet.terminate(NAMESPACE, first, exit_code=137)
                plan.step, plan.due = 1, None
        elif plan.step == 1:
            new = pods.get(first)
            if not running or new is None or new["metadata"]["uid"] == plan.replaced_uid:
                return
            if plan.due is None:
                plan.due = now + plan.delays[1]
            if now >= plan.due:
                kubelet.terminate(NAMESPACE, plan.slots[0], exit_code=0)
                plan.step = 2

    def wait_finished(self, api: Api, *, timeout: float) -> None:
        """Return once every created job is Succeeded or Failed (say so after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                items = api.request("GET", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs")["items"]
                states = [(i.get("status") or {}).get("state") for i in items]
                if len(items) == len(self.plans) and all(s in TERMINAL for s in states):
                    return
            time.sleep(0.5)
        self.say("chaos: not every job finished before the timeout")
