"""The real cert-manager beside a local control plane: its controller and CA injector.

Built from cert-manager's release source (``hack/build-third-party.sh``, cached per machine),
they run as processes of this machine, each with a kubeconfig of its own (a client certificate
from the control plane's CA) and only the RBAC :func:`rbac_objects` grants: what issuing with
the CA and self-signed issuers, the ACME and ingress controllers' informers, and injecting CA
bundles need. Its CRDs are the release's own ``deploy/crds``. cert-manager's own admission
webhook is not run: it validates cert-manager's objects, which the tests write correctly, and
nothing of the issuance or injection goes through it.

Why processes and not containers: the controller and the injector only talk to kube-apiserver,
so where they run changes nothing of what the tests show (the webhook's pods do run in
containers, on the real node, reading the Secret cert-manager writes as the kubelet mounts it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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

NAMESPACE = "cert-manager"
"""Where ClusterIssuers keep their Secrets (``--cluster-resource-namespace``)."""
CONTROLLER_USER = "cert-manager:controller"
CAINJECTOR_USER = "cert-manager:cainjector"
READ = ["get", "list", "watch"]
WRITE = [*READ, "create", "update", "patch", "delete"]


class CertManagerError(RuntimeError):
    """cert-manager did not build or start; the message says why, with its log."""


SOURCE = ReleaseSource("cert-manager", "cert-manager", "CERT_MANAGER_VERSION", CertManagerError)
"""Its build: ``bin/controller``, ``bin/cainjector`` and ``crds/``."""
archive = SOURCE.archive
missing = SOURCE.missing
build = SOURCE.build


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _with_subresources(resources: list[str]) -> list[str]:
    return [
        *resources,
        *(f"{r}/status" for r in resources),
        *(f"{r}/finalizers" for r in resources),
    ]


def rbac_objects() -> list[dict[str, Any]]:
    """A ClusterRole and binding for each of the two users.

    The controller runs all its default controllers, so it needs to read everything their
    informers watch (ACME orders and challenges, ingresses, pods, services, CSRs), even though
    only the CA and self-signed issuers are used; the injector reads Certificates and Secrets
    and writes the ``caBundle`` of webhook configurations, CRDs and APIServices.
    """
    roles = {
        CONTROLLER_USER: [
            _rule(
                ["cert-manager.io"],
                _with_subresources(
                    ["issuers", "clusterissuers", "certificates", "certificaterequests"]
                ),
                WRITE,
            ),
            _rule(["acme.cert-manager.io"], _with_subresources(["orders", "challenges"]), WRITE),
            _rule([""], ["secrets"], WRITE),
            _rule([""], ["events"], ["create", "patch"]),
            _rule([""], ["pods", "services"], READ),
            _rule(["networking.k8s.io"], ["ingresses"], READ),
            _rule(["certificates.k8s.io"], ["certificatesigningrequests"], READ),
            _rule(
                ["certificates.k8s.io"], ["certificatesigningrequests/status"], ["update", "patch"]
            ),
        ],
        CAINJECTOR_USER: [
            _rule(["cert-manager.io"], ["certificates"], READ),
            _rule([""], ["secrets"], READ),
            _rule([""], ["events"], ["create", "patch"]),
            _rule(
                ["admissionregistration.k8s.io"],
                ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
                [*READ, "update", "patch"],
            ),
            _rule(["apiregistration.k8s.io"], ["apiservices"], [*READ, "update", "patch"]),
            _rule(
                ["apiextensions.k8s.io"], ["customresourcedefinitions"], [*READ, "update", "patch"]
            ),
        ],
    }
    objects: list[dict[str, Any]] = []
    for user, rules in roles.items():
        name = user.replace(":", "-")
        objects.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": rules,
            }
        )
        objects.append(cluster_role_binding(name=name, role=name, user=user))
    return objects


HEALTH_PATHS = {"controller": "/livez", "cainjector": "/metrics"}
"""What each program answers once it runs (the injector has no health endpoint of its own)."""


@dataclass
class CertManager:
    """cert-manager's controller and CA injector running against ``plane``."""

    plane: ControlPlane
    state_dir: Path
    running: dict[str, programs.Running] = field(default_factory=dict)
    home: Path = field(default_factory=build)
    """The build: ``bin/`` and ``crds/``."""

    @property
    def logs(self) -> Path:
        return self.state_dir / "logs"

    def install_crds(self) -> None:
        """The release's CRDs, with server-side apply (they are too big for the annotation)."""
        self.plane.kubectl("apply", "--server-side", "-f", str(self.home / "crds"), timeout=120)
        for name in (
            "certificates.cert-manager.io",
            "issuers.cert-manager.io",
            "clusterissuers.cert-manager.io",
            "certificaterequests.cert-manager.io",
        ):
            wait_established(self.plane, name)

    def start(self, *, timeout: float = 60) -> None:
        """CRDs, RBAC, then both programs; returns once both answer their health checks."""
        self.install_crds()
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        objects = {"apiVersion": "v1", "kind": "List", "items": [namespace, *rbac_objects()]}
        self.plane.kubectl("apply", "-f", "-", input_text=json.dumps(objects))
        urls: list[str] = []
        for program, user in (("controller", CONTROLLER_USER), ("cainjector", CAINJECTOR_USER)):
            kubeconfig = user_kubeconfig(
                self.plane, user=user, path=self.state_dir / "pki" / f"{program}.kubeconfig"
            )
            port = free_port()
            argv = [
                str(self.home / "bin" / program),
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--v=2",
                *self._args(program, port),
            ]
            self.running[program] = start_as_user(
                f"cert-manager {program}", argv, log=self._log(program), kubeconfig=kubeconfig
            )
            urls.append(f"http://127.0.0.1:{port}{HEALTH_PATHS[program]}")
        wait_answering(
            list(self.running.values()),
            urls,
            what="cert-manager's controller and cainjector",
            error=CertManagerError,
            timeout=timeout,
        )

    def _log(self, program: str) -> Path:
        return self.logs / f"{program}.log"

    def _args(self, program: str, port: int) -> list[str]:
        """Every listener on loopback: the health server only in the configuration file."""
        if program == "cainjector":
            return [f"--metrics-listen-address=127.0.0.1:{port}"]
        config = self.state_dir / "controller-config.json"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "controller.config.cert-manager.io/v1alpha1",
                    "kind": "ControllerConfiguration",
                    "healthzListenAddress": f"127.0.0.1:{port}",
                }
            )
        )
        return [
            f"--config={config}",
            f"--cluster-resource-namespace={NAMESPACE}",
            f"--metrics-listen-address=127.0.0.1:{free_port()}",
        ]

    def stop(self) -> None:
        """Stop both programs (each with anything it started), waiting until they are gone."""
        for running in self.running.values():
            running.stop()
        self.running.clear()
