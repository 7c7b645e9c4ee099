"""kubeflow training-operator v1.8.1 on the local control plane: the operator users migrate from.

The takeover tests run the real thing, built from the Go module proxy by
``hack/build-training-operator.sh`` (pinned in ``hack/training-operator/go.mod``), with its own
MXJob CRD and webhook configuration read from the downloaded module's ``manifests/``. Only its
MXJob controller runs (``--enable-scheme=mxjob``), without leader election, its metrics and
health endpoints on free loopback ports.

What v1.8.1 needs to start (``cmd/training-operator.v1/main.go``, ``pkg/cert/cert.go``): it has no
switch to turn its webhook server off, and it registers its controllers only once its
certificate rotator (``open-policy-agent/cert-controller``) is ready, which takes

- the Secret ``training-operator-webhook-cert`` in its namespace (``MY_POD_NAMESPACE``, here
  ``kubeflow``), holding a CA the rotator accepts: an RSA key in PKCS#1, a certificate whose
  DNS name is ``training-operator-ca``, and a serving certificate for
  ``training-operator.kubeflow.svc``, each valid for more than 90 days (else it makes its own);
- the ValidatingWebhookConfiguration ``validator.training-operator.kubeflow.org``, into which it
  writes the CA bundle (it waits until it has);
- the serving certificate as files where its Deployment mounts the Secret. The webhook server
  reads them from ``$TMPDIR/k8s-webhook-server/serving-certs`` (controller-runtime's default under
  ``os.TempDir()``), but the rotator only waits for ``/tmp/k8s-webhook-server/serving-certs/
  tls.crt`` to exist, a path it hard-codes. So ``TMPDIR`` points into this run's state directory
  and the fixed path is given a certificate when it has none (it is only tested for existence).

The certificates come from this project's ``certs`` package; the serving one also names
127.0.0.1, so the API server reaches the webhook by a loopback ``url``.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from certs import CertificateAuthority
from localkube.base import programs
from localkube.base.api import Api, ensure_namespace
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port
from localkube.plane.controlplane import ControlPlane
from localkube.plane.operator import wait_established
from localkube.thirdparty.base import GoModulePin

PIN: Final = GoModulePin(
    module="github.com/kubeflow/training-operator",
    version_variable="TRAINING_OPERATOR_VERSION",
    module_dir=PROJECT_ROOT / "hack" / "training-operator",
    build_script=PROJECT_ROOT / "hack" / "build-training-operator.sh",
)
"""Built by ``hack/build-training-operator.sh`` (minutes the first time); its CRD, webhook
configuration and examples are read from the module's ``manifests/`` and ``examples/``."""
version = PIN.version
module_source = PIN.module_source
NAMESPACE: Final = "kubeflow"
SECRET_NAME: Final = "training-operator-webhook-cert"
SERVICE_DNS_NAME: Final = f"training-operator.{NAMESPACE}.svc"
CA_NAME: Final = "training-operator-ca"
WEBHOOK_CONFIGURATION: Final = "validator.training-operator.kubeflow.org"
MXJOB_WEBHOOK_PATH: Final = "/validate-kubeflow-org-v1-mxjob"
FIXED_CERT_DIR: Final = Path("/tmp/k8s-webhook-server/serving-certs")
OPERATOR_NAME: Final = "mxjob-controller"
"""The ``training.kubeflow.org/operator-name`` label value on the pods and Services it makes."""


class TrainingOperatorError(RuntimeError):
    """training-operator did not start or get ready; the message says why, with its log."""


def build(*patches: str) -> Path:
    """The training-operator binary, cached per machine.

    ``patches`` name files of ``hack/training-operator/patches/`` applied to its source first;
    without them, the release as its users ran it.
    """
    return PIN.build(*patches)


def crd_file() -> Path:
    """training-operator's own MXJob CRD."""
    return module_source() / "manifests" / "base" / "crds" / "kubeflow.org_mxjobs.yaml"


def examples_dir() -> Path:
    """training-operator's MXJob examples (``examples/mxnet``)."""
    return module_source() / "examples" / "mxnet"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def webhook_configuration(*, port: int, ca_bundle: str) -> dict[str, Any]:
    """Its MXJob validating webhook, from its manifests, pointed at ``port`` on loopback."""
    path = module_source() / "manifests" / "base" / "webhook" / "manifests.yaml"
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    webhooks = [
        w
        for d in documents
        for w in d.get("webhooks", [])
        if w["clientConfig"]["service"]["path"] == MXJOB_WEBHOOK_PATH
    ]
    for webhook in webhooks:
        webhook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{MXJOB_WEBHOOK_PATH}",
            "caBundle": ca_bundle,
        }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": webhooks,
    }


@dataclass(frozen=True)
class Endpoints:
    """The loopback ports one training-operator process listens on."""

    metrics: int
    health: int
    webhook: int


class LocalTrainingOperator:
    """Installs training-operator's CRD and runs its process against one local control plane."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.dir = plane.dir / "training-operator"
        self.tmp = self.dir / "tmp"
        self.api = Api.from_kubeconfig(plane.kubeconfig)

    def install_crd(self) -> None:
        """Apply its MXJob CRD as its users did (server-side: the CRD is too large otherwise)."""
        self.plane.kubectl("apply", "--server-side", "-f", str(crd_file()))
        wait_established(self.plane)

    def replace_crd(self) -> None:
        """Replace whatever MXJob CRD is installed with its own, whole (``kubectl replace``).

        An apply would merge: the versions and conversion webhook another manager set would stay.
        """
        self.plane.kubectl("replace", "-f", str(crd_file()))
        wait_established(self.plane)

    def _certificates(self) -> tuple[CertificateAuthority, bytes, bytes]:
        ca = CertificateAuthority.create(common_name=CA_NAME, rsa_key=True, hosts=(CA_NAME,))
        serving = ca.issue_serving(hosts=(SERVICE_DNS_NAME, "127.0.0.1"), valid_days=365)
        return ca, serving.cert_pem, serving.key_pem

    def _provision(self, *, webhook_port: int) -> None:
        """The Secret, the webhook configuration and the certificate files it waits for."""
        ca, cert_pem, key_pem = self._certificates()
        ensure_namespace(self.api, NAMESPACE)
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
            "data": {
                "ca.crt": _b64(ca.pair.cert_pem),
                "ca.key": _b64(ca.pair.key_pem),
                "tls.crt": _b64(cert_pem),
                "tls.key": _b64(key_pem),
            },
        }
        configuration = webhook_configuration(port=webhook_port, ca_bundle=_b64(ca.pair.cert_pem))
        for document in (secret, configuration):
            self.plane.kubectl(
                "apply", "--server-side", "--force-conflicts", "-f", "-",
                input_text=json.dumps(document),
            )  # fmt: skip
        cert_dir = self.tmp / "k8s-webhook-server" / "serving-certs"
        cert_dir.mkdir(parents=True, exist_ok=True)
        (cert_dir / "tls.crt").write_bytes(cert_pem)
        (cert_dir / "tls.key").write_bytes(key_pem)
        (cert_dir / "tls.key").chmod(0o600)
        if not (FIXED_CERT_DIR / "tls.crt").exists():
            FIXED_CERT_DIR.mkdir(parents=True, exist_ok=True)
            staged = FIXED_CERT_DIR / f".tls.crt.{os.getpid()}"
            staged.write_bytes(cert_pem)
            staged.replace(FIXED_CERT_DIR / "tls.crt")

    def argv(self, binary: Path, endpoints: Endpoints, *extra: str) -> list[str]:
        """Only its MXJob controller, every listener on loopback, then ``extra``."""
        return [
            str(binary),
            "--enable-scheme=mxjob",
            f"--metrics-bind-address=127.0.0.1:{endpoints.metrics}",
            f"--health-probe-bind-address=127.0.0.1:{endpoints.health}",
            f"--webhook-server-port={endpoints.webhook}",
            *extra,
        ]

    def start(
        self,
        *extra: str,
        patches: tuple[str, ...] = (),
        log_name: str = "training-operator.log",
        timeout: float = 120,
    ) -> programs.Running:
        """Start it; return once ``/readyz`` says its certificates and webhook server are up
        (stopped again when they are not).

        ``extra`` are more of its flags (e.g. ``--namespace``, ``--gang-scheduler-name=volcano``);
        ``patches`` pick the build (:func:`build`). Its MXJob controller registers right after
        (``setupControllers`` waits for the same certificates), within a second.
        """
        binary = build(*patches)
        endpoints = Endpoints(metrics=free_port(), health=free_port(), webhook=free_port())
        self._provision(webhook_port=endpoints.webhook)
        env = programs.with_env(
            KUBECONFIG=str(self.plane.kubeconfig), MY_POD_NAMESPACE=NAMESPACE, TMPDIR=str(self.tmp)
        )
        program = programs.Program(
            "training-operator",
            self.argv(binary, endpoints, *extra),
            self.plane.logs / log_name,
            env=env,
        )
        running = programs.start(program)
        try:
            programs.wait_ready(
                running,
                lambda: programs.answers_200(f"http://127.0.0.1:{endpoints.health}/readyz"),
                what="training-operator's /readyz",
                timeout=timeout,
                error=TrainingOperatorError,
                interval=0.2,
            )
        except TrainingOperatorError:
            running.stop()
            raise
        return running

    def stop(self, running: programs.Running) -> None:
        """Stop it (with anything it started), waiting until it is gone."""
        running.stop()

    def uninstall_webhook(self) -> None:
        """Remove its webhook configuration: with it gone, nothing may call its webhook."""
        self.plane.kubectl(
            "delete", "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION, "--ignore-not-found"
        )
