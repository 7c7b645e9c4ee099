"""The trust bundle, published where scrapers read it: a ConfigMap with ``ca.crt`` only.

Scrapers verify the metrics endpoints against the CA the API server trusts for the webhook. That
CA is in ``mxjob-webhook-tls``, but so is the webhook's private key, which a scraper must not be
able to read. So while this process leads, a thread copies the ``caBundle`` of the validating
webhook configuration (filled by the keeper in the in-cluster mode, by cert-manager's CA injector,
or by ``python -m certs``: the same field in every certificate mode) into the ``ca.crt`` of the
ConfigMap ``--ca-bundle-configmap`` names, every ``check_interval`` seconds, writing only when it
changed. The ConfigMap is one of the manifests' objects, shipped without data: uninstalling
removes it, and ``kubectl apply`` leaves the data alone (it never set it).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Final

from controller.certificates.cabundles import VALIDATING, webhook_site
from controller.runtime.client import KubeClient, NotFound, resource_path

log = logging.getLogger(__name__)

CA_CERT_KEY: Final = "ca.crt"


def published_bundle(configuration: dict[str, Any]) -> str | None:
    """The bundle every webhook of the validating configuration holds, or None while they
    disagree or hold none (a rotation half-way, a fresh install): nothing is published then."""
    bundles = set(webhook_site(VALIDATING, configuration).bundles)
    if len(bundles) != 1:
        return None
    (bundle,) = bundles
    return bundle.decode() if bundle else None


class CABundlePublisher:
    """Copies the validating configuration's ``caBundle`` into a ConfigMap (see the module)."""

    def __init__(
        self,
        client: KubeClient,
        *,
        namespace: str,
        configmap: str,
        validating: str = "mxjob-operator-validating",
        check_interval: float = 10.0,
    ) -> None:
        self.client = client
        self.check_interval = check_interval
        self._configuration = resource_path(
            group="admissionregistration.k8s.io", version="v1", plural=VALIDATING,
            name=validating,
        )  # fmt: skip
        self._configmap = resource_path(
            group="", version="v1", plural="configmaps", namespace=namespace, name=configmap
        )
        self.writes = 0
        """ConfigMap updates sent (for tests and logs)."""

    def start(self, stop: threading.Event) -> None:
        """Run passes in a daemon thread until ``stop`` is set."""
        threading.Thread(
            target=self.run, args=(stop,), name="ca-bundle-publisher", daemon=True
        ).start()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.sync_once()
            except Exception as error:  # the next pass reads everything again
                log.warning("CA bundle ConfigMap: %s", error)
            stop.wait(self.check_interval)

    def sync_once(self) -> bool:
        """One pass; whether the ConfigMap was written."""
        try:
            configuration = self.client.request("GET", self._configuration)
            configmap = self.client.request("GET", self._configmap)
        except NotFound as missing:  # not installed (yet): nothing to copy, or nowhere to
            log.debug("CA bundle ConfigMap: %s", missing)
            return False
        bundle = published_bundle(configuration)
        if bundle is None or (configmap.get("data") or {}).get(CA_CERT_KEY) == bundle:
            return False
        configmap["data"] = {**(configmap.get("data") or {}), CA_CERT_KEY: bundle}
        self.client.request("PUT", self._configmap, body=configmap)  # resourceVersion kept
        self.writes += 1
        log.info("CA bundle ConfigMap: ca.crt set to the webhook's trust bundle")
        return True
