"""The progress endpoint as the controller process's settings ask for it (``--progress-reports``,
``--progress-bind-address``), and the CA a job's pods verify it by.

The endpoint presents the metrics server's pair (``--metrics-cert-dir``: the webhook's serving
Secret, mounted), or until it is there a self-signed certificate for the progress Service
(controller/runtime/serving_tls.py). Which CA that chains to is asked anew each time
(:attr:`ProgressServing.ca`), so the ConfigMap every job's pods mount follows a renewal or the
Secret's arrival (controller/integrations/statusca/). controller/manager.py builds this once and
starts the endpoint on every replica.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from controller.progress.endpoint import ProgressEndpoint, progress_endpoint
from controller.progress.flusher import StatusWriter
from controller.progress.service import ObjectCache
from controller.progress.settings import ProgressSettings
from controller.runtime.client import KubeClient
from controller.runtime.health import parse_address
from controller.runtime.serving_tls import progress_certificate, trust_anchor
from controller.runtime.settings import ControllerSettings


@dataclass(frozen=True, kw_only=True)
class ProgressServing:
    """How this process serves progress reports, before anything listens."""

    settings: ProgressSettings
    tls: Callable[[], ssl.SSLContext]
    """The newest certificate to present, per handshake."""
    ca: Callable[[], bytes | None]
    """The CA (PEM) a client verifies the endpoint by now; None: nothing to present yet."""

    def endpoint(
        self,
        *,
        client: KubeClient,
        pods: ObjectCache,
        jobs: ObjectCache,
        synced: Callable[[], bool],
        write: StatusWriter,
    ) -> ProgressEndpoint:
        """The endpoint over the informers' caches, bound (not started)."""
        built = progress_endpoint(
            self.settings, client=client, pods=pods, jobs=jobs, tls=self.tls, synced=synced,
            write=write,
        )  # fmt: skip
        assert built is not None, "ProgressServing is made only with the endpoint on"
        return built


def progress_serving(settings: ControllerSettings) -> ProgressServing | None:
    """The process's progress endpoint as its settings ask; None with ``--no-progress-reports``."""
    if not settings.progress_reports:
        return None
    namespace = settings.certificate_namespace or settings.lease_namespace
    cert_dir = settings.metrics_cert_dir
    certificate = progress_certificate(cert_dir=cert_dir, namespace=namespace)
    host, port = parse_address(settings.progress_bind_address)
    return ProgressServing(
        settings=ProgressSettings(host=host, port=port),
        tls=certificate.current,
        ca=functools.partial(trust_anchor, certificate, cert_dir=cert_dir),
    )
