"""Volcano's real scheduler beside a local control plane: vc-scheduler and its controller-manager.

Built from Volcano's release source (``hack/build-third-party.sh volcano``, cached per machine).
vc-scheduler places every pod that names the scheduler ``volcano`` by its PodGroup: the enqueue
action admits a PodGroup (``Inqueue``) when its queue has room for ``minResources``, the gang
plugin binds a group's pods only when ``minMember`` of them fit. The controller-manager runs the
two controllers those PodGroups and queues need: ``queue-controller`` (a queue's state, ``Open``,
which the proportion plugin requires, and its counts) and ``pg-controller`` (PodGroups for pods
without one; the operator writes its own). Both take the configuration, the RBAC (ClusterRoles
``volcano-scheduler`` and ``volcano-controllers``) and the arguments of the release's
``installer/volcano-development.yaml``; they run as processes with a user of their own
(:mod:`localkube.thirdparty.base`). Not run: Volcano's admission webhooks (they validate Volcano's
own Jobs and queues, which the operator does not use) and its other controllers (Volcano Jobs,
JobFlows, CronJobs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localkube.base import programs
from localkube.base.ports import free_port
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import wait_established
from localkube.thirdparty.base import (
    ReleaseSource,
    cluster_role_binding,
    start_as_user,
    user_kubeconfig,
    wait_answering,
)

NAMESPACE = "volcano-system"
SCHEDULER_NAME = "volcano"
SCHEDULER_CONFIG_MAP = "volcano-scheduler-configmap"
SCHEDULER_CONFIG_KEY = "volcano-scheduler.conf"
CONTROLLERS = ("queue-controller", "pg-controller")
USERS = {"scheduler": "volcano:scheduler", "controller-manager": "volcano:controllers"}
"""Each program's certificate user."""
ROLES = {"scheduler": "volcano-scheduler", "controller-manager": "volcano-controllers"}
"""Each program's ClusterRole, as the release defines it."""
PROGRAMS = {"scheduler": "vc-scheduler", "controller-manager": "vc-controller-manager"}
REQUIRED_CRDS = ("podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh")


class VolcanoError(RuntimeError):
    """Volcano did not build or start; the message says why."""


SOURCE = ReleaseSource("volcano", "Volcano", "VOLCANO_RELEASE_VERSION", VolcanoError)
"""Its build: ``bin/``, ``crds/`` and ``config/volcano-development.yaml``."""
archive = SOURCE.archive
missing = SOURCE.missing
build = SOURCE.build


def released_objects(home: Path) -> list[dict[str, Any]]:
    """Every object of the release's development installer."""
    text = (home / "config" / "volcano-development.yaml").read_text()
    return [doc for doc in yaml.safe_load_all(text) if isinstance(doc, dict)]


def _released(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj.get("kind") == kind and obj.get("metadata", {}).get("name") == name:
            return obj
    raise VolcanoError(f"the release's installer has no {kind} {name}")


def scheduler_configuration(objects: list[dict[str, Any]]) -> str:
    """The released scheduler configuration: actions and plugin tiers."""
    config_map = _released(objects, "ConfigMap", SCHEDULER_CONFIG_MAP)
    return str(config_map["data"][SCHEDULER_CONFIG_KEY])


def rbac_objects(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The released ClusterRoles, each bound to its program's certificate user."""
    rbac: list[dict[str, Any]] = []
    for program, role in ROLES.items():
        released = _released(objects, "ClusterRole", role)
        rbac.append({key: released[key] for key in ("apiVersion", "kind", "metadata", "rules")})
        rbac.append(cluster_role_binding(name=role, role=role, user=USERS[program]))
    return rbac


def program_args(program: str, *, config: Path, healthz_port: int, metrics_port: int) -> list[str]:
    """The release's arguments (leader election off, as released), every listener on loopback."""
    common = [
        "--logtostderr",
        "--enable-healthz=true",
        f"--healthz-address=127.0.0.1:{healthz_port}",
        f"--listen-address=127.0.0.1:{metrics_port}",
        "--leader-elect=false",
    ]
    if program == "scheduler":
        return [*common, f"--scheduler-conf={config}", "--schedule-period=1s", "-v=3"]
    return [*common, f"--controllers={','.join(CONTROLLERS)}", "--worker-threads=3", "-v=3"]


@dataclass
class Volcano:
    """vc-scheduler and vc-controller-manager running against ``plane``."""

    plane: ControlPlane
    state_dir: Path
    running: dict[str, programs.Running] = field(default_factory=dict)
    home: Path = field(default_factory=build)

    def _log(self, program: str) -> Path:
        return self.state_dir / "logs" / f"{PROGRAMS[program]}.log"

    def install_crds(self) -> None:
        """The release's CRDs (server-side: some are too big for the annotation)."""
        self.plane.kubectl("apply", "--server-side", "-f", str(self.home / "crds"), timeout=120)
        for name in REQUIRED_CRDS:
            wait_established(self.plane, name)

    def start(self, *, timeout: float = 60) -> None:
        """CRDs, namespace, RBAC, then both programs; returns once both answer ``/healthz``
        (the scheduler creates the ``default`` and ``root`` queues as it starts)."""
        self.install_crds()
        objects = released_objects(self.home)
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        items = {"apiVersion": "v1", "kind": "List", "items": [namespace, *rbac_objects(objects)]}
        self.plane.kubectl("apply", "-f", "-", input_text=json.dumps(items))
        config = self.state_dir / SCHEDULER_CONFIG_KEY
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(scheduler_configuration(objects))
        urls: list[str] = []
        for program, user in USERS.items():
            kubeconfig = user_kubeconfig(
                self.plane, user=user, path=self.state_dir / "pki" / f"{program}.kubeconfig"
            )
            healthz = free_port()
            argv = [
                str(self.home / "bin" / PROGRAMS[program]),
                f"--kubeconfig={kubeconfig}",
                *program_args(program, config=config, healthz_port=healthz,
                              metrics_port=free_port()),
            ]  # fmt: skip
            self.running[program] = start_as_user(
                PROGRAMS[program], argv, log=self._log(program), kubeconfig=kubeconfig
            )
            urls.append(f"http://127.0.0.1:{healthz}/healthz")
        wait_answering(
            list(self.running.values()),
            urls,
            what="Volcano's /healthz",
            error=VolcanoError,
            timeout=timeout,
        )

    def stop(self) -> None:
        """Stop both programs (each with anything it started), waiting until they are gone."""
        for running in self.running.values():
            running.stop()
        self.running.clear()
