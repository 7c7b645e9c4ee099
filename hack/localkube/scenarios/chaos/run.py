"""One chaos run on a control plane of its own: set up, jobs and faults at once, then the checks."""

from __future__ import annotations

import json
import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from localkube.base.api import Api, ensure_namespace
from localkube.base.processes import stop_process
from localkube.kubelet.core import TestKubelet
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import LocalOperator
from localkube.plane.settings import ControlPlaneSettings
from localkube.scenarios.chaos.checks import Evidence, check
from localkube.scenarios.chaos.faults import FaultInjector, fault_schedule
from localkube.scenarios.chaos.jobs import Jobs
from localkube.scenarios.chaos.plan import (
    BYSTANDER_NAMESPACE,
    GROUP_PATH,
    NAMESPACE,
    ChaosConfig,
    plan_jobs,
)
from localkube.scenarios.chaos.report import ChaosReport
from localkube.scenarios.chaos.supervisor import ControllerSupervisor
from localkube.scenarios.chaos.watch import History, Watcher

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
"""Pod creations, and nothing else, in the API server's audit log."""


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
        self.jobs = Jobs(self.stop, say=log)
        self.audit_log = self.state_dir / "logs" / "audit.log"

    def _plane(self) -> ControlPlane:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        policy = self.state_dir / "audit-policy.json"
        policy.write_text(json.dumps(AUDIT_POLICY))
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
            supervisor = ControllerSupervisor(local, failpoints=self.config.failpoints)
            supervisor.start()
            self._chaos(plane, kubelet, supervisor, webhook_pid)
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

    def _chaos(
        self,
        plane: ControlPlane,
        kubelet: TestKubelet,
        supervisor: ControllerSupervisor,
        webhook_pid: int,
    ) -> None:
        """Watch, create the jobs, play their scripts and cause the faults meanwhile; return
        once the jobs have finished and settled."""
        Watcher(Api.from_kubeconfig(plane.kubeconfig), self.history, self.stop).start()
        self.jobs.t0 = time.monotonic()
        self.jobs.create_all(plane, plan_jobs(self.config, self.random))
        driver = threading.Thread(
            target=self.jobs.drive,
            args=(Api.from_kubeconfig(plane.kubeconfig), kubelet),
            daemon=True,
        )
        driver.start()
        injector = FaultInjector(
            rng=self.random,
            jobs=self.jobs,
            plane=plane,
            supervisor=supervisor,
            webhook_pid=webhook_pid,
            say=self.say,
        )
        injector.run(fault_schedule(self.config, self.random), self.config.gap, self.report.faults)
        self.jobs.wait_finished(Api.from_kubeconfig(plane.kubeconfig), timeout=self.config.timeout)
        time.sleep(3)  # settle: a late write that changed a terminal state would show now
        self.report.duration = self.jobs.now()

    def _check(self, api: Api, plane: ControlPlane, supervisor: ControllerSupervisor) -> None:
        items = api.request("GET", f"{GROUP_PATH}/namespaces/{NAMESPACE}/mxjobs")["items"]
        evidence = Evidence(
            jobs=dict(self.jobs.plans),
            final={i["metadata"]["name"]: i.get("status") or {} for i in items},
            history=self.history.snapshot(),
            audit_log=self.audit_log,
            logs=plane.logs,
            faults=self.report.faults,
            controller_processes=supervisor.generation,
            controller_kills=supervisor.kills,
            controller_crashes=supervisor.crashes,
            failpoints=self.config.failpoints,
            failpoint_kills=tuple(supervisor.failpoint_kills),
            create_retries=self.jobs.create_retries,
        )
        invariants, figures = check(evidence)
        self.report.invariants.extend(invariants)
        self.report.figures.update(figures)
