"""An OCI registry on loopback over TLS: CNCF distribution's ``registry``, built from the module
pinned in ``hack/registry`` (``hack/build-registry.sh``), for the release tests.

Why a real one: ``make release`` pushes with buildah, cosign and helm, and the real node's
containerd pulls by digest; each speaks the distribution API with its own client, and a registry
that is not the reference implementation would prove less. TLS with a CA of the test's own
(``certs.authority``), which each client is told to trust, since none of them should be made to
skip verification.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from certs.authority import CertificateAuthority
from localkube.base.builds import run_build_script
from localkube.base.paths import PROJECT_ROOT
from localkube.base.ports import free_port

MANIFEST_TYPES = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    )
)


def binary() -> Path:
    """The pinned ``registry`` (built once per machine, about two minutes the first time)."""
    return run_build_script(PROJECT_ROOT / "hack" / "build-registry.sh")


def config_yaml(*, storage: Path, address: str, certificate: Path, key: Path) -> str:
    """The registry's configuration: filesystem storage, deletes allowed, TLS, quiet logs."""
    return yaml.safe_dump(
        {
            "version": 0.1,
            "log": {"level": "warn", "accesslog": {"disabled": True}},
            "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
            "http": {"addr": address, "tls": {"certificate": str(certificate), "key": str(key)}},
        },
        sort_keys=False,
    )


@dataclass(frozen=True)
class Registry:
    """A running registry: its ``host:port``, the CA its certificate chains to, its process."""

    address: str
    ca_file: Path
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, directory: Path, *, host: str = "127.0.0.1", timeout: float = 30) -> Registry:
        """A registry serving ``host`` on a free port, its files and log under ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        ca = CertificateAuthority.create(common_name="mxjob-release-test-ca")
        serving = ca.issue_serving(hosts=(host,))
        paths = {n: directory / n for n in ("ca.crt", "tls.crt", "tls.key", "config.yml")}
        paths["ca.crt"].write_bytes(ca.cert_pem)
        paths["tls.crt"].write_bytes(serving.cert_pem)
        paths["tls.key"].write_bytes(serving.key_pem)
        address = f"{host}:{free_port()}"
        config = config_yaml(
            storage=directory / "storage",
            address=address,
            certificate=paths["tls.crt"],
            key=paths["tls.key"],
        )
        paths["config.yml"].write_text(config)
        with (directory / "registry.log").open("ab") as log:
            process = subprocess.Popen(
                [str(binary()), "serve", str(paths["config.yml"])],
                stdout=log, stderr=subprocess.STDOUT,
                env={"PATH": "/usr/bin:/bin", "OTEL_TRACES_EXPORTER": "none"},
            )  # fmt: skip
        registry = cls(address=address, ca_file=paths["ca.crt"], process=process)
        deadline = time.monotonic() + timeout
        while not registry.answers():
            if process.poll() is not None or time.monotonic() > deadline:
                registry.stop()
                raise RuntimeError(f"the registry did not start: see {directory / 'registry.log'}")
            time.sleep(0.2)
        return registry

    def _get(self, path: str, *, accept: str = "*/*", timeout: float = 10) -> bytes:
        """``GET <path>`` over TLS verified with the CA; loopback, never through a proxy the
        environment names."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        request = urllib.request.Request(
            f"https://{self.address}{path}", headers={"Accept": accept}
        )
        with opener.open(request, timeout=timeout) as response:
            body: bytes = response.read()
            return body

    def answers(self) -> bool:
        """``GET /v2/`` answers 200."""
        try:
            self._get("/v2/", timeout=2)
        except OSError:
            return False
        return True

    def manifest(self, repository: str, reference: str) -> dict[str, Any]:
        """The image manifest stored under ``repository`` (the path after ``host:port/``) for
        ``reference`` (a tag or digest)."""
        manifest: dict[str, Any] = json.loads(
            self._get(f"/v2/{repository}/manifests/{reference}", accept=MANIFEST_TYPES)
        )
        return manifest

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
