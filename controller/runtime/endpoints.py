"""The process's HTTP servers, as its settings ask: the probes, and ``/metrics`` beside them
(``--no-metrics-secure``) or on an HTTPS server of its own for authorized scrapers only.

Built here rather than in the manager so that what is served where, and how, reads in one place:
the routes come from controller/runtime/health.py, the decision from shared/metrics_access.py
(through controller/runtime/metrics_reviews.py), the certificate from
controller/runtime/serving_tls.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from controller.runtime.client import KubeClient
from controller.runtime.health import HttpEndpoints, Route, metrics_route
from controller.runtime.metrics_reviews import metrics_gate
from controller.runtime.serving_tls import metrics_certificate
from controller.runtime.settings import ControllerSettings

log = logging.getLogger(__name__)


def http_endpoints(
    settings: ControllerSettings,
    *,
    client: KubeClient,
    probes: Mapping[str, Route],
    exposition: Callable[[], bytes],
) -> list[HttpEndpoints]:
    """The servers to start (not started): one per address."""
    health_address = settings.health_probe_bind_address
    metrics_address = settings.metrics_bind_address
    if not settings.metrics_secure:
        metrics: dict[str, Route] = {"/metrics": metrics_route(exposition)}
        if health_address == metrics_address:
            return [HttpEndpoints(health_address, {**probes, **metrics})]
        return [HttpEndpoints(health_address, probes), HttpEndpoints(metrics_address, metrics)]
    gate = metrics_gate(client, cache_seconds=settings.metrics_auth_cache_seconds)
    namespace = settings.certificate_namespace or settings.lease_namespace
    certificate = metrics_certificate(cert_dir=settings.metrics_cert_dir, namespace=namespace)
    log.info("metrics over HTTPS, presenting %s", certificate.source)
    secured = {"/metrics": metrics_route(exposition, gate=gate)}
    return [
        HttpEndpoints(health_address, probes),
        HttpEndpoints(metrics_address, secured, tls=certificate.current),
    ]
