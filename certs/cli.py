"""``python -m certs``: the webhook's certificate for clusters without cert-manager.

``python -m certs webhook --out manifests/overlays/self-signed`` makes a CA and a serving
certificate for ``<service>.<namespace>.svc`` (the name the API server dials for a webhook
``clientConfig.service``) and for the controller's progress Service (the controller serves its
jobs' progress reports with the same pair), and writes the ``kubernetes.io/tls`` Secret
manifest the webhook Deployment mounts: ``tls.crt``, ``tls.key`` and the CA as ``ca.crt``. The
overlay's kustomize ``replacements`` copy that ``ca.crt`` into the caBundle of both webhook
configurations and of the CRD conversion, so a caBundle can never disagree with the Secret it
must verify.

Why ``--ca-dir``: without it every run makes a new CA, and re-applying swaps the caBundle and the
Secret together; the kubelet updates a mounted Secret up to a minute later, so for that minute the
API server would trust a CA the running webhook's certificate is not signed by. Keeping the CA
(outside the repository: its key signs whatever the API server will trust) renews only the serving
certificate: the caBundle stays, and the webhook re-reads the new files without a restart.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from certs.authority import CertificateAuthority, KeyPair
from shared import progress

DEFAULT_SERVICE = "mxjob-webhook"
DEFAULT_NAMESPACE = "mxjob-system"
DEFAULT_SECRET_NAME = "mxjob-webhook-tls"
SECRET_FILE_NAME = "webhook-tls-secret.yaml"
CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"


def webhook_hosts(
    *, service: str, namespace: str, progress_service: str = progress.SERVICE
) -> tuple[str, ...]:
    """The names the API server may dial: ``<service>.<namespace>.svc`` first (also the CN);
    then those a job's pods reach the controller's progress Service by, as the controller serves
    its pods' reports with the same pair (shared/progress.py)."""
    return (
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
        f"{progress_service}.{namespace}.svc",
        f"{progress_service}.{namespace}.svc.cluster.local",
    )


def tls_secret_manifest(
    *, name: str, namespace: str, pair: KeyPair, ca_cert_pem: bytes
) -> dict[str, Any]:
    """A ``kubernetes.io/tls`` Secret in the layout cert-manager writes (``ca.crt`` included)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "mxjob-operator",
                "app.kubernetes.io/component": "webhook",
            },
        },
        "type": "kubernetes.io/tls",
        "data": {
            "tls.crt": b64(pair.cert_pem),
            "tls.key": b64(pair.key_pem),
            "ca.crt": b64(ca_cert_pem),
        },
    }


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` readable by the owner only, atomically (no half-written key is ever seen)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_or_create_ca(*, ca_dir: Path | None, common_name: str) -> CertificateAuthority:
    """The CA kept in ``ca_dir`` (created there on first use), or a new one when ``None``."""
    if ca_dir is None:
        return CertificateAuthority.create(common_name=common_name)
    cert_file, key_file = ca_dir / CA_CERT_FILE, ca_dir / CA_KEY_FILE
    if cert_file.exists() and key_file.exists():
        return CertificateAuthority.load(
            cert_pem=cert_file.read_bytes(), key_pem=key_file.read_bytes()
        )
    if cert_file.exists() or key_file.exists():
        raise FileExistsError(f"{ca_dir} holds only one of {CA_CERT_FILE} and {CA_KEY_FILE}")
    ca = CertificateAuthority.create(common_name=common_name)
    _write_private(key_file, ca.pair.key_pem)
    cert_file.write_bytes(ca.cert_pem)
    return ca


def write_webhook_secret(
    *,
    out: Path,
    service: str = DEFAULT_SERVICE,
    namespace: str = DEFAULT_NAMESPACE,
    secret_name: str = DEFAULT_SECRET_NAME,
    valid_days: int = 365,
    ca_dir: Path | None = None,
) -> Path:
    """Issue the webhook's serving certificate and write its Secret manifest into ``out``."""
    if valid_days < 1:
        raise ValueError(f"valid_days must be at least 1, got {valid_days}")
    ca = load_or_create_ca(ca_dir=ca_dir, common_name=f"{service}-ca")
    pair = ca.issue_serving(
        hosts=webhook_hosts(service=service, namespace=namespace), valid_days=valid_days
    )
    manifest = tls_secret_manifest(
        name=secret_name, namespace=namespace, pair=pair, ca_cert_pem=ca.cert_pem
    )
    header = (
        "# Generated by `python -m certs webhook`: the webhook's serving certificate and key.\n"
        "# Holds a private key: do not commit it. Re-run the command to renew.\n"
    )
    path = out / SECRET_FILE_NAME
    _write_private(path, (header + yaml.safe_dump(manifest, sort_keys=False)).encode())
    return path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m certs",
        description="Certificates for the mxjob-operator webhook (clusters without cert-manager).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    webhook = commands.add_parser(
        "webhook",
        help="write the webhook's kubernetes.io/tls Secret manifest into a kustomize overlay",
        description=(
            "Make a CA and a serving certificate for <service>.<namespace>.svc (and the "
            "controller's progress Service) and write "
            f"{SECRET_FILE_NAME} (tls.crt, tls.key, ca.crt) into --out. The self-signed overlay "
            "copies its ca.crt into the caBundle of the webhook configurations and the CRD."
        ),
    )
    webhook.add_argument(
        "--out",
        type=Path,
        default=Path("manifests/overlays/self-signed"),
        help="overlay directory to write into (default: manifests/overlays/self-signed)",
    )
    webhook.add_argument("--service", default=DEFAULT_SERVICE, help="webhook Service name")
    webhook.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="operator namespace")
    webhook.add_argument("--secret-name", default=DEFAULT_SECRET_NAME, help="Secret name")
    webhook.add_argument(
        "--valid-days", type=int, default=365, help="serving certificate lifetime (default 365)"
    )
    webhook.add_argument(
        "--ca-dir",
        type=Path,
        help="keep the CA here (ca.crt, ca.key; created on first use) so renewals keep the "
        "caBundle; default: a new CA every run, its key discarded",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m certs``; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.valid_days < 1:
        parser.error(f"--valid-days must be at least 1, got {args.valid_days}")
    try:
        path = write_webhook_secret(
            out=args.out,
            service=args.service,
            namespace=args.namespace,
            secret_name=args.secret_name,
            valid_days=args.valid_days,
            ca_dir=args.ca_dir,
        )
    except (OSError, ValueError) as error:
        print(f"python -m certs: {error}", file=sys.stderr)
        return 1
    hosts = ", ".join(webhook_hosts(service=args.service, namespace=args.namespace))
    print(f"wrote {path} (serving certificate for {hosts})")
    return 0
