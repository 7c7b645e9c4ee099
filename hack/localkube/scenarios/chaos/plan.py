"""What a chaos run does: its size, and the MXJobs it creates with the story their pods tell."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Final

from controller.runtime.failpoints import PODS_DELETED, PODS_HALF_CREATED, STATUS_WRITTEN

NAMESPACE: Final = "chaos"
BYSTANDER_NAMESPACE: Final = "chaos-bystander"
GROUP_PATH: Final = "/apis/kubeflow.org/v1"
RECOVERY_LIMIT: Final = 10.0
"""Seconds within which the operator must start a new job after each fault."""
TERMINAL: Final = frozenset({"Succeeded", "Failed"})
SCRIPTS: Final = ("succeed", "retry", "fail")
INTENDED: Final = {"succeed": ("Succeeded", 0), "retry": ("Succeeded", 1), "fail": ("Failed", 0)}
"""script → the terminal state and restart count it should end with"""


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
    failpoints: tuple[str, ...] = (STATUS_WRITTEN, PODS_DELETED, PODS_HALF_CREATED)
    """The points of a restart where a controller kills itself, one process each, in turn
    (controller/runtime/failpoints.py): beside the random SIGKILLs, one death at each."""


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
        """Pod creations per slot the script calls for: a retry restarts the whole job (an
        MXTrain job's default ``restartScope``), so every slot is made twice."""
        return dict.fromkeys(self.slots, 2 if self.script == "retry" else 1)

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


def plan_jobs(config: ChaosConfig, rng: random.Random) -> list[JobPlan]:
    """The run's jobs: one of each script first, then scripts drawn 5 : 3 : 2."""
    plans = []
    for index in range(config.jobs):
        script = (
            SCRIPTS[index % len(SCRIPTS)]
            if index < len(SCRIPTS)
            else rng.choices(SCRIPTS, weights=(5, 3, 2))[0]
        )
        delays = (rng.uniform(0.5, config.spread), rng.uniform(0.5, config.spread / 3))
        plans.append(JobPlan(f"job-{index:02d}", script, rng.choice((1, 2)), delays))
    return plans


def probe_plan(number: int) -> JobPlan:
    """The MXJob created after fault ``number`` to see that the operator works again."""
    return JobPlan(f"probe-{number:02d}", "succeed", 1, (0.2, 0.2), probe=True)


def container(pod: dict[str, Any]) -> dict[str, Any]:
    """The status of the pod's ``mxnet`` container ({} before it has one)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == "mxnet":
            return dict(status)
    return {}


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp")
