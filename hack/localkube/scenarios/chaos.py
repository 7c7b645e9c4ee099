"""The chaos run (``make chaos``): many MXJobs to completion while the operator's world breaks.

Why a separate run and not only unit tests: the promises "loses no job, never duplicates a pod,
never goes backwards" are about processes dying at arbitrary moments and watches ending in 410,
which only real processes on a real API server show. This module starts its own control plane
(so it can restart kube-apiserver and etcd without disturbing anyone), the webhook with two
gunicorn workers, one controller, and the test kubelet in manual mode. A driver scripts every
job's pods (succeed; a retryable exit 137 then succeed; fail with exit 1) at random moments,
while a fault loop, also at random moments, SIGKILLs and restarts the controller, SIGKILLs one of
the webhook's two worker processes, restarts kube-apiserver and etcd (same data), and compacts
etcd so that re-opened watches get 410 Gone.

What is checked (see ``docs/reliability.md`` for what each invariant means):

- every job reached the terminal state its script intended, with the restarts it intended;
- pods: the API server's audit log (complete, unlike any watch) shows exactly the pod creations
  the scripts call for, one per replica slot plus one per retryable failure; and each
  replacement was created only after the watch saw its predecessor Failed;
- no job's ``restartCount`` and no pod's container ``restartCount`` ever went down;
- no job left a terminal state once it reached one;
- after each fault the operator accepted and started a new MXJob (a probe, through the admission
  webhooks) within 10 s of the fault's start.

``python -m localkube.scenarios.chaos`` runs the full version and writes its figures into
``docs/reliability.md``; ``tests/e2e/test_reliability_chaos.py`` runs a short one.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from localkube.base.api import AlreadyExists, Api, ApiError, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane, ControlPlaneSettings
from localkube.plane.operator import LocalOperator, stop_process

NAMESPACE: Final = "chaos"
BYSTANDER_NAMESPACE: Final = "chaos-bystander"
GROUP_PATH: Final = "/apis/kubeflow.org/v1"
RECOVERY_LIMIT: Final = 10.0
"""Seconds within which the operator must start a new job after each fault."""
TERMINAL: Final = frozenset({"Succeeded", "Failed"})
REPORT_BEGIN: Final = "<!-- chaos:begin -->"
REPORT_END: Final = "<!-- chaos:end -->"

AUDIT_POLICY: Final = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {
            "level": "Metadata",
            "resources": [{"group": "", "resources": ["pods"]}],
            "verbs": ["create"],
        },
        {"level": "None"},
    ],
}


@dataclass(frozen=True)
class ChaosConfig:
    """How much chaos: the full run is the default; the test uses a short one."""

    jobs: int = 50
    controller_kills: int = 10
    webhook_kills: int = 1
    apiserver_restarts: int = 1
    etcd_restarts: int = 1
    compactions: int = 2
    spread: float = 60.0
    """Seconds over which the jobs' scripted exits are spread (the faults run meanwhile)."""
    gap: tuple[float, float] = (0.5, 3.0)
    """Random pause before each fault, in seconds."""
    timeout: float = 300.0
    """Seconds the jobs may take to finish after the last fault."""
    seed: int | None = None


# -- jobs and their scripts -----------------------------------------------------------------------
SCRIPTS: Final = ("succeed", "retry", "fail")
INTENDED: Final = {"succeed": ("Succeeded", 0), "retry": ("Succeeded", 1), "fail": ("Failed", 0)}


@dataclass
class JobPlan:
    """One MXJob and the story its pods will tell."""

    name: str
    script: str
    workers: int
    delays: tuple[float, float]
    probe: bool = False
    created_at: float | None = None
    step: int = 0
    """0: waiting for every pod to run; 1: first exit done (retry: waiting for the new pod);
    2: every scripted exit done."""
    due: float | None = None
    replaced_uid: str | None = None

    @property
    def slots(self) -> list[str]:
        if self.probe:
            return [f"{self.name}-worker-0"]
        return [f"{self.name}-scheduler-0"] + [
            f"{self.name}-worker-{i}" for i in range(self.workers)
        ]

    def expected_creations(self) -> dict[str, int]:
        """Pod creations per slot the script calls for."""
        counts = dict.fromkeys(self.slots, 1)
        if self.script == "retry":
            counts[f"{self.name}-worker-0"] = 2
        return counts

    def manifest(self) -> dict[str, Any]:
        def replica(count: int) -> dict[str, Any]:
            container = {"name": "mxnet", "image": "mxjob/mxnet:cpu", "command": ["python", "t.py"]}
            return {"replicas": count, "template": {"spec": {"containers": [container]}}}

        specs = (
            {"Worker": replica(1)}
            if self.probe
            else {"Scheduler": replica(1), "Worker": replica(self.workers)}
        )
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": "MXJob",
            "metadata": {"name": self.name, "labels": {"chaos-script": self.script}},
            "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": specs},
        }


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == "mxnet":
            return dict(status)
    return {}


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp")


# -- observation ---------------------------------------------------------------------------------
@dataclass
class History:
    """Everything the watches saw, in resourceVersion order per stream."""

    job_states: dict[str, list[tuple[int, str, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """job → [(resourceVersion, state, restartCount)]"""
    pod_seen: dict[str, dict[str, list[tuple[int, str, int]]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    """pod name → uid → [(resourceVersion, phase, container restartCount)]"""
    pod_created_rv: dict[str, int] = field(default_factory=dict)
    """uid → resourceVersion of its ADDED event (when the watch saw it created)"""
    relists: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Watcher:
    """Watches MXJobs and pods of the chaos namespace through every fault, relisting after 410."""

    def __init__(self, api: Api, history: History, stop: threading.Event) -> None:
        self.api = api
        self.history = history
        self.stop = stop
        self.threads = [
            threading.Thread(target=self._run, args=(kind,), daemon=True, name=f"watch-{kind}")
            for kind in ("mxjobs", "pods")
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _path(self, kind: str) -> str:
        if kind == "mxjobs":
            return f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs"
        return f"/api/v1/namespaces/{NAMESPACE}/pods"

    def _record(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        rv = int(meta.get("resourceVersion") or 0)
        with self.history.lock:
            if kind == "mxjobs":
                status = obj.get("status") or {}
                self.history.job_states[meta["name"]].append(
                    (rv, str(status.get("state") or ""), int(status.get("restartCount") or 0))
                )
                return
            uid = meta["uid"]
            if event_type == "ADDED" and uid not in self.history.pod_created_rv:
                self.history.pod_created_rv[uid] = rv
            seen = self.history.pod_seen[meta["name"]].setdefault(uid, [])
            seen.append((rv, _phase(obj), int(_container(obj).get("restartCount") or 0)))

    def _run(self, kind: str) -> None:
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    listing = self.api.request("GET", self._path(kind))
                    for item in listing["items"]:
                        self._record(kind, "LISTED", item)
                    version = listing["metadata"]["resourceVersion"]
                query = [("resourceVersion", version), ("timeoutSeconds", "30")]
                for event in self.api.watch(self._path(kind), query=query, timeout=40):
                    if self.stop.is_set():
                        return
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        if obj.get("code") == 410:
                            with self.history.lock:
                                self.history.relists[kind] += 1
                        version = ""
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") != "BOOKMARK":
                        self._record(kind, str(event.get("type")), obj)
            except ApiError as error:
                if error.status == 410:
                    with self.history.lock:
                        self.history.relists[kind] += 1
                version = ""
                time.sleep(0.2)
            except Exception:
                version = ""  # the API server is down or restarting: list again when back
                time.sleep(0.2)


# -- processes ----------------------------------------------------------------------------------
class ControllerSupervisor:
    """One ``mxjob-controller``, restarted at once after it dies, as a kubelet would."""

    def __init__(self, local: LocalOperator) -> None:
        self.local = local
        self.process: subprocess.Popen[bytes] | None = None
        self.metrics_port = 0
        self.generation = 0
        self.kills = 0
        self.crashes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="supervisor")

    def start(self) -> None:
        self._spawn()
        self._thread.start()

    def _spawn(self) -> None:
        self.generation += 1
        process, self.metrics_port, _ = self.local.start_controller(
            f"--namespace={NAMESPACE}",
            "--identity=chaos-controller",
            "--workers=4",
            log_name=f"controller-{self.generation:02d}.log",
            wait_ready=False,
        )
        self.process = process

    def kill_and_restart(self) -> None:
        """SIGKILL (no shutdown code runs) and start a new process right away."""
        with self._lock:
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.kills += 1
            self._spawn()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                if self.process is not None and self.process.poll() is not None:
                    self.crashes += 1  # it died without being killed: a bug worth a figure
                    self._spawn()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        if self.process is not None:
            stop_process(self.process.pid)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


# -- the run ------------------------------------------------------------------------------------
@dataclass
class Fault:
    kind: str
    started: float
    """Seconds since the run started."""
    detail: str = ""
    outage: float = 0.0
    """Seconds the control-plane component was away (its stop and start); 0 for the operator's
    own processes, whose restart is part of the operator's recovery."""
    recovered_after: float | None = None
    """Seconds from the end of the outage (for a killed operator process: the kill) until the
    operator had admitted a new MXJob and the controller had written its status."""


@dataclass
class Invariant:
    name: str
    ok: bool
    figure: str
    problems: list[str] = field(default_factory=list)


@dataclass
class ChaosReport:
    config: ChaosConfig
    seed: int
    duration: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    invariants: list[Invariant] = field(default_factory=list)
    figures: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.invariants) and all(i.ok for i in self.invariants)

    def markdown(self) -> str:
        c = self.config
        lines = [
            f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, seed {self.seed}: "
            f"{c.jobs} jobs, {c.controller_kills} controller SIGKILLs, {c.webhook_kills} webhook "
            f"worker SIGKILL, {c.apiserver_restarts} kube-apiserver restart, {c.etcd_restarts} "
            f"etcd restart, {c.compactions} etcd compactions; {self.duration:.1f} s in all.",
            "",
            "| invariant | held | figure |",
            "| --- | --- | --- |",
        ]
        for inv in self.invariants:
            lines.append(f"| {inv.name} | {'yes' if inv.ok else '**no**'} | {inv.figure} |")
        lines += [
            "",
            "| fault | at (s) | component away (s) | operator recovered after (s) | detail |",
            "| --- | --- | --- | --- | --- |",
        ]
        for fault in self.faults:
            recovered = "—" if fault.recovered_after is None else f"{fault.recovered_after:.2f}"
            outage = f"{fault.outage:.1f}" if fault.outage else "—"
            lines.append(
                f"| {fault.kind} | {fault.started:.1f} | {outage} | {recovered} | {fault.detail} |"
            )
        lines += ["", "| figure | value |", "| --- | --- |"]
        lines += [f"| {k} | {v} |" for k, v in self.figures.items()]
        problems = [f"- {inv.name}: {p}" for inv in self.invariants for p in inv.problems[:20]]
        if problems:
            lines += ["", "Problems:", "", *problems]
        return "\n".join(lines) + "\n"


class ChaosRun:
    """One chaos run on its own control plane in ``state_dir``."""

    def __init__(self, config: ChaosConfig, state_dir: Path, *, log: Callable[[str], None]) -> None:
        self.config = config
        self.seed = (
            config.seed if config.seed is not None else random.SystemRandom().randrange(2**32)
        )
        self.random = random.Random(self.seed)
        self.state_dir = state_dir
        self.say = log
        self.stop = threading.Event()
        self.history = History()
        self.report = ChaosReport(config=config, seed=self.seed)
        self.jobs: dict[str, JobPlan] = {}
        self.jobs_lock = threading.Lock()
        self.create_retries = 0
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    # -- set-up ---------------------------------------------------------------------------------
    def _plane(self) -> ControlPlane:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        policy = self.state_dir / "audit-policy.json"
        policy.write_text(json.dumps(AUDIT_POLICY))
        self.audit_log = self.state_dir / "logs" / "audit.log"
        settings = ControlPlaneSettings(
            state_dir=self.state_dir,
            extra_apiserver_args=(
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
                "--audit-log-maxsize=0",
            ),
        )
        return ControlPlane(settings)

    def run(self) -> ChaosReport:
        plane = self._plane()
        plane.down()
        for stale in ("logs", "operator"):
            shutil.rmtree(self.state_dir / stale, ignore_errors=True)
        self.say(f"chaos: seed {self.seed}; control plane in {self.state_dir}")
        plane.up()
        local = LocalOperator(plane)
        webhook_pid = 0
        supervisor: ControllerSupervisor | None = None
        kubelet: TestKubelet | None = None
        try:
            webhook_pid, port = local.start_webhook(workers=2)
            local.install_crd(webhook_port=port)
            local.register_webhooks(webhook_port=port)
            api = Api.from_kubeconfig(plane.kubeconfig)
            for namespace in (NAMESPACE, BYSTANDER_NAMESPACE):
                ensure_namespace(api, namespace)
            kubelet = TestKubelet(
                Api.from_kubeconfig(plane.kubeconfig),
                node_name="chaos-node",
                namespaces=(NAMESPACE,),
            )
            kubelet.start()
            supervisor = ControllerSupervisor(local)
            supervisor.start()
            Watcher(Api.from_kubeconfig(plane.kubeconfig), self.history, self.stop).start()
            self.t0 = time.monotonic()
            self._create_jobs(plane)
            driver = threading.Thread(
                target=self._drive,
                args=(Api.from_kubeconfig(plane.kubeconfig), kubelet),
                daemon=True,
            )
            driver.start()
            self._faults(plane, local, supervisor, webhook_pid)
            self._wait_finished(Api.from_kubeconfig(plane.kubeconfig))
            time.sleep(3)  # settle: a late write that changed a terminal state would show now
            self.report.duration = self.now()
            self._check(Api.from_kubeconfig(plane.kubeconfig), plane, supervisor)
        finally:
            self.stop.set()
            if supervisor is not None:
                supervisor.stop()
            if kubelet is not None:
                kubelet.stop()
            if webhook_pid:
                stop_process(webhook_pid)
            plane.down()
        return self.report

    # -- jobs -----------------------------------------------------------------------------------
    def _plan_jobs(self) -> list[JobPlan]:
        plans = []
        for index in range(self.config.jobs):
            script = (
                SCRIPTS[index % len(SCRIPTS)]
                if index < len(SCRIPTS)
                else self.random.choices(SCRIPTS, weights=(5, 3, 2))[0]
            )
            delays = (
                self.random.uniform(0.5, self.config.spread),
                self.random.uniform(0.5, self.config.spread / 3),
            )
            plans.append(JobPlan(f"job-{index:02d}", script, self.random.choice((1, 2)), delays))
        return plans

    def _create(self, api: Api, plan: JobPlan, *, deadline: float) -> None:
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
        with self.jobs_lock:
            self.jobs[plan.name] = plan

    def _create_jobs(self, plane: ControlPlane) -> None:
        plans = self._plan_jobs()
        self.say(f"chaos: creating {len(plans)} MXJobs")
        batches = [plans[i::8] for i in range(8)]

        def create(batch: list[JobPlan]) -> None:
            api = Api.from_kubeconfig(plane.kubeconfig)
            for plan in batch:
                self._create(api, plan, deadline=time.monotonic() + 60)

        threads = [threading.Thread(target=create, args=(b,)) for b in batches if b]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _drive(self, api: Api, kubelet: TestKubelet) -> None:
        """Play each job's script on its pods; level-triggered, so faults only delay it."""
        while not self.stop.is_set():
            time.sleep(0.25)
            try:
                items = api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
            except Exception:
                continue
            pods = {p["metadata"]["name"]: p for p in items if _live(p)}
            with self.jobs_lock:
                plans = list(self.jobs.values())
            for plan in plans:
                with contextlib.suppress(Exception):
                    self._advance(plan, pods, kubelet)

    def _advance(
        self, plan: JobPlan, pods: dict[str, dict[str, Any]], kubelet: TestKubelet
    ) -> None:
        mine = [pods.get(slot) for slot in plan.slots]
        running = all(p is not None and _phase(p) == "Running" for p in mine)
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

    # -- faults ---------------------------------------------------------------------------------
    def _fault_schedule(self) -> list[str]:
        c = self.config
        kinds = (
            ["controller"] * c.controller_kills
            + ["webhook"] * c.webhook_kills
            + ["apiserver"] * c.apiserver_restarts
            + ["etcd"] * c.etcd_restarts
            + ["compaction"] * c.compactions
        )
        self.random.shuffle(kinds)
        return kinds

    def _faults(
        self,
        plane: ControlPlane,
        local: LocalOperator,
        supervisor: ControllerSupervisor,
        webhook: int,
    ) -> None:
        api = Api.from_kubeconfig(plane.kubeconfig)
        for number, kind in enumerate(self._fault_schedule()):
            time.sleep(self.random.uniform(*self.config.gap))
            fault = Fault(kind=kind, started=self.now())
            started = time.monotonic()
            if kind == "controller":
                supervisor.kill_and_restart()
                fault.detail = f"SIGKILL, new process {supervisor.generation}"
            elif kind == "webhook":
                workers = _children(webhook)
                victim = self.random.choice(workers)
                os.kill(victim, signal.SIGKILL)
                fault.detail = f"SIGKILL worker {victim} of {len(workers)}"
            elif kind == "apiserver":
                revision = self._compact(plane, api)
                started = time.monotonic()
                plane.restart_component("kube-apiserver")
                fault.outage = time.monotonic() - started
                fault.detail = f"SIGTERM, then started again; etcd compacted at {revision} first"
            elif kind == "etcd":
                plane.restart_component("etcd")
                fault.outage = time.monotonic() - started
                fault.detail = "SIGTERM, then started again on the same data dir"
            else:
                revision = self._compact(plane, api)
                fault.detail = f"compacted at revision {revision}"
            fault.recovered_after = self._probe(api, number, started + fault.outage)
            recovered = fault.recovered_after
            self.say(
                f"chaos: {fault.started:6.1f}s {kind:<10} {fault.detail}; recovered after "
                + ("never" if recovered is None else f"{recovered:.2f} s")
            )
            self.report.faults.append(fault)

    def _compact(self, plane: ControlPlane, api: Api) -> int:
        """Advance etcd's revision with writes nobody watches, then compact everything before it,
        so that every watcher's last resourceVersion is compacted away: the next watch it opens
        straight on etcd (or on a watch cache rebuilt after a restart) gets 410 Gone."""
        state = plane.state()
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
            self._etcd(state.etcd_url, "/v3/kv/range", {"key": key, "limit": 1})["header"][
                "revision"
            ]
        )
        self._etcd(state.etcd_url, "/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    @staticmethod
    def _etcd(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def _probe(self, api: Api, number: int, started: float) -> float | None:
        """Seconds from ``started`` until a new MXJob was admitted and the controller wrote its
        status (None if not within three times the limit)."""
        plan = JobPlan(f"probe-{number:02d}", "succeed", 1, (0.2, 0.2), probe=True)
        deadline = started + 3 * RECOVERY_LIMIT
        try:
            self._create(api, plan, deadline=deadline)
        except Exception:
            return None
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                job = api.request("GET", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs/{plan.name}")
                if (job.get("status") or {}).get("state"):
                    return time.monotonic() - started
            time.sleep(0.05)
        return None

    def _wait_finished(self, api: Api) -> None:
        deadline = time.monotonic() + self.config.timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                items = api.request("GET", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs")["items"]
                states = [(i.get("status") or {}).get("state") for i in items]
                if len(items) == len(self.jobs) and all(s in TERMINAL for s in states):
                    return
            time.sleep(0.5)
        self.say("chaos: not every job finished before the timeout")

    # -- invariants -----------------------------------------------------------------------------
    def _audit_creations(self) -> tuple[Counter[str], Counter[str]]:
        """Pod creations the API server accepted, and those it refused as AlreadyExists."""
        created: Counter[str] = Counter()
        refused: Counter[str] = Counter()
        for line in self.audit_log.read_text().splitlines():
            with contextlib.suppress(ValueError, KeyError):
                event = json.loads(line)
                ref = event["objectRef"]
                if (
                    event["verb"] != "create"
                    or ref.get("namespace") != NAMESPACE
                    or ref.get("subresource")
                ):
                    continue
                code = event.get("responseStatus", {}).get("code", 0)
                name = ref.get("name") or ""
                if code == 201:
                    created[name] += 1
                elif code == 409:
                    refused[name] += 1
        return created, refused

    def _check(self, api: Api, plane: ControlPlane, supervisor: ControllerSupervisor) -> None:
        items = api.request("GET", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs")["items"]
        final = {i["metadata"]["name"]: i.get("status") or {} for i in items}
        report = self.report
        jobs = dict(self.jobs)

        # 1. every job reached the terminal state (and restart count) its script intended
        problems = []
        for name, plan in sorted(jobs.items()):
            state, restarts = INTENDED[plan.script]
            got = final.get(name, {})
            if got.get("state") != state or int(got.get("restartCount") or 0) != restarts:
                problems.append(
                    f"{name} ({plan.script}): {got.get('state')} with {got.get('restartCount')} "
                    f"restarts, intended {state} with {restarts}"
                )
        by_script = Counter(p.script for p in jobs.values() if not p.probe)
        report.invariants.append(
            Invariant(
                "every job reached the terminal state its script intended",
                not problems,
                f"{len(jobs) - len(problems)} / {len(jobs)} jobs ({by_script['succeed']} succeed, "
                f"{by_script['retry']} exit 137 then succeed, {by_script['fail']} exit 1, "
                f"{sum(p.probe for p in jobs.values())} probes)",
                problems,
            )
        )

        # 2. no duplicate pods: creations per slot exactly as scripted, replacements after failure
        created, refused = self._audit_creations()
        problems = []
        expected: Counter[str] = Counter()
        for plan in jobs.values():
            expected.update(plan.expected_creations())
        for name in sorted(set(expected) | set(created)):
            if created[name] != expected[name]:
                problems.append(f"{name}: created {created[name]} times, scripted {expected[name]}")
        replacements = verified = 0
        with self.history.lock:
            for name, uids in self.history.pod_seen.items():
                ordered = sorted(
                    uids, key=lambda u: self.history.pod_created_rv.get(u, uids[u][0][0])
                )
                for previous, current in itertools.pairwise(ordered):
                    replacements += 1
                    failed = [rv for rv, phase, _ in uids[previous] if phase == "Failed"]
                    created_rv = self.history.pod_created_rv.get(current)
                    if failed and created_rv is not None:
                        verified += 1
                        if created_rv <= min(failed):
                            problems.append(f"{name}: {current} created before {previous} failed")
        report.invariants.append(
            Invariant(
                "no two pods for one replica slot (no duplicate, no premature replacement)",
                not problems,
                f"{sum(created.values())} pod creations for {len(expected)} slots, "
                f"{sum(expected.values())} scripted; {replacements} replacements, {verified} seen "
                f"created after their predecessor Failed; {sum(refused.values())} creates refused "
                "as AlreadyExists",
                problems,
            )
        )

        # 3. restart counts never went down; 4. terminal states never changed
        down, changed = [], []
        with self.history.lock:
            for name, states in self.history.job_states.items():
                timeline = sorted(states)
                for (_, _, before), (_, _, after) in itertools.pairwise(timeline):
                    if after < before:
                        down.append(f"job {name}: restartCount {before} → {after}")
                terminal = [s for _, s, _ in timeline if s in TERMINAL]
                if terminal:
                    first = next(i for i, (_, s, _) in enumerate(timeline) if s in TERMINAL)
                    later = {s for _, s, _ in timeline[first:]}
                    if later != {terminal[0]}:
                        changed.append(f"job {name}: {terminal[0]} then {sorted(later)}")
                final_state = final.get(name, {}).get("state")
                if terminal and final_state != terminal[0]:
                    changed.append(f"job {name}: {terminal[0]} then finally {final_state}")
            for name, uids in self.history.pod_seen.items():
                for uid, seen in uids.items():
                    counts = [c for _, _, c in sorted(seen)]
                    if any(b < a for a, b in itertools.pairwise(counts)):
                        down.append(f"pod {name} {uid}: restartCount {counts}")
            observations = sum(len(s) for s in self.history.job_states.values())
            relists = dict(self.history.relists)
        report.invariants.append(
            Invariant(
                "no restart count went down",
                not down,
                f"{observations} job status observations, "
                f"{sum(len(u) for u in self.history.pod_seen.values())} pods followed",
                down,
            )
        )
        report.invariants.append(
            Invariant(
                "no terminal state changed",
                not changed,
                f"{sum(1 for s in final.values() if s.get('state') in TERMINAL)} terminal jobs "
                "re-read 3 s after the last one finished",
                changed,
            )
        )

        # 5. recovery within the limit
        slow = [
            f"{f.kind} at {f.started:.1f} s: "
            + ("never" if f.recovered_after is None else f"{f.recovered_after:.2f} s")
            for f in report.faults
            if f.recovered_after is None or f.recovered_after > RECOVERY_LIMIT
        ]
        times = sorted(f.recovered_after for f in report.faults if f.recovered_after is not None)
        worst = f"{times[-1]:.2f}" if times else "—"
        median = f"{times[len(times) // 2]:.2f}" if times else "—"
        report.invariants.append(
            Invariant(
                f"the operator recovered from each fault within {RECOVERY_LIMIT:.0f} s",
                not slow and len(report.faults) > 0,
                f"{len(report.faults)} faults; recovery median {median} s, worst {worst} s",
                slow,
            )
        )

        # 6. the controller never died on its own
        report.invariants.append(
            Invariant(
                "the controller never crashed",
                supervisor.crashes == 0,
                f"{supervisor.crashes} exits nobody asked for, {supervisor.kills} SIGKILLs",
                [f"{supervisor.crashes} unrequested exits; see controller-*.log"]
                if supervisor.crashes
                else [],
            )
        )

        # figures that explain the run
        gone = 0
        for log in sorted(plane.logs.glob("controller-*.log")):
            gone += len(re.findall(r"\(410\)", log.read_text(errors="replace")))
        report.figures.update(
            {
                "controller processes (1 + restarts after SIGKILL)": str(supervisor.generation),
                "controller watches that got 410 Gone and relisted": str(gone),
                "chaos watcher relists after 410 (mxjobs / pods)": (
                    f"{relists.get('mxjobs', 0)} / {relists.get('pods', 0)}"
                ),
                "MXJob creates retried (API server or webhook away)": str(self.create_retries),
            }
        )


def write_report(report: ChaosReport, path: Path) -> None:
    """Replace the figures between the chaos markers of ``path`` (the prose stays)."""
    text = path.read_text() if path.exists() else f"{REPORT_BEGIN}\n{REPORT_END}\n"
    begin, end = text.index(REPORT_BEGIN) + len(REPORT_BEGIN), text.index(REPORT_END)
    path.write_text(text[:begin] + "\n" + report.markdown() + text[end:])


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localkube.scenarios.chaos", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--state-dir", type=Path, default=PROJECT_ROOT / ".local" / "chaos")
    parser.add_argument("--report", type=Path, help="write the figures into this markdown file")
    parser.add_argument("--jobs", type=int, default=ChaosConfig.jobs)
    parser.add_argument("--controller-kills", type=int, default=ChaosConfig.controller_kills)
    parser.add_argument("--seed", type=int)
    args = parser.parse_args(argv)
    # SIGTERM (a CI timeout) unwinds like Ctrl-C, so the control plane and processes are stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    config = ChaosConfig(jobs=args.jobs, controller_kills=args.controller_kills, seed=args.seed)
    report = ChaosRun(
        config, args.state_dir.resolve(), log=lambda line: print(line, flush=True)
    ).run()
    print(report.markdown())
    if args.report is not None:
        write_report(report, args.report)
        print(f"chaos: figures written to {args.report}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
