"""The webhook's certificates made and kept inside the cluster (``--manage-webhook-certificates``).

Two Secrets, split by who reads them: ``mxjob-webhook-ca`` holds the CA's certificate and key and
is read by this controller alone; ``mxjob-webhook-tls`` holds the serving pair and the trust
bundle (``ca.crt``), which the webhook pods mount (the pair only) and scrapers read (``ca.crt``).
An install from before the split kept ``ca.key`` in ``mxjob-webhook-tls``: the first pass moves
it (the CA Secret is written first, so the key is never in neither).

While this process leads, a thread reads the Secret and the ``caBundle`` of both webhook
configurations and of the CRD conversion by name every ``certificate_check_interval`` seconds,
asks certs/rotation.py what they must hold, and writes that: a missing or unusable Secret is
made, certificates are renewed before they expire, a ``caBundle`` someone reset is put back. The
decisions are pure (certs/rotation.py, controller/certificates/cabundles.py); this module only
reads, writes and reports.

One writer: only the leader runs the keeper, and each Secret write carries the
``resourceVersion`` it read (a create fails if another made the Secret first), so two processes
that both believe they lead cannot both win. The webhook pods never write; they wait for the
Secret (the kubelet mounts it once it exists) and re-read it when it changes (certs/reloader.py).

Order of writes: when the trust bundle grows (a new CA), the ``caBundle`` fields first, then the
Secret; when it shrinks, the Secret first. A webhook pod that picks the new Secret up at once
therefore never presents a certificate the API server does not yet trust.
"""

from __future__ import annotations

import base64
import datetime
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from certs.rotation import Observed, Plan, RotationPolicy, plan
from certs.stored import CA_CERT_KEY, CA_KEY_KEY, TLS_CERT_KEY, TLS_KEY_KEY
from controller.certificates.cabundles import (
    CRDS,
    MUTATING,
    VALIDATING,
    BundleSite,
    bundle_patch,
    crd_site,
    webhook_site,
)
from controller.runtime.client import JSON_PATCH, ApiError, KubeClient, NotFound, resource_path
from controller.runtime.events import EventRecorder
from shared import progress

log = logging.getLogger(__name__)

FIELD_MANAGER: Final = "mxjob-operator-certificates"
ISSUED: Final = "CertificateIssued"
REPLACED: Final = "CertificateReplaced"
REPAIRED: Final = "CABundleRepaired"
_GROUPS: Final = {
    MUTATING: ("admissionregistration.k8s.io", "v1"),
    VALIDATING: ("admissionregistration.k8s.io", "v1"),
    CRDS: ("apiextensions.k8s.io", "v1"),
}


@dataclass(frozen=True, kw_only=True)
class CertificateTargets:
    """The objects the keeper owns or fills, by name (the manifests' names by default)."""

    namespace: str
    secret: str = "mxjob-webhook-tls"
    ca_secret: str = "mxjob-webhook-ca"
    """The CA's certificate and key, apart from what the webhook and the scrapers read."""
    service: str = "mxjob-webhook"
    progress_service: str = progress.SERVICE
    """The controller's progress Service (shared/progress.py): the controller serves its pods'
    reports with the same serving pair (controller/runtime/serving_tls.py)."""
    mutating: str = "zz-mxjob-operator-mutating"
    validating: str = "mxjob-operator-validating"
    crd: str = "mxjobs.kubeflow.org"
    owner: str = "mxjob-controller"
    """The Deployment that owns the Secret: deleting the install (``helm uninstall``,
    ``kubectl delete -k``) deletes the Secret with it."""

    @property
    def hosts(self) -> tuple[str, ...]:
        """The names the API server and in-cluster clients reach the webhook Service by (the
        first, the certificate's common name), then those a job's pods reach the controller's
        progress Service by."""
        short = f"{self.service}.{self.namespace}.svc"
        progress_short = f"{self.progress_service}.{self.namespace}.svc"
        return (short, f"{short}.cluster.local", progress_short, f"{progress_short}.cluster.local")


def _secret_path(targets: CertificateTargets, *, name: str | None) -> str:
    return resource_path(
        group="", version="v1", plural="secrets", namespace=targets.namespace, name=name,
    )  # fmt: skip


CA_KEYS: Final = (CA_CERT_KEY, CA_KEY_KEY)
"""What the CA Secret holds."""
SERVING_KEYS: Final = (CA_CERT_KEY, TLS_CERT_KEY, TLS_KEY_KEY)
"""What the serving Secret holds: the pair the webhook presents, and the bundle to trust."""


def _site_path(plural: str, name: str) -> str:
    group, version = _GROUPS[plural]
    return resource_path(group=group, version=version, plural=plural, name=name)


def _decoded(secret: dict[str, Any] | None) -> dict[str, bytes] | None:
    if secret is None:
        return None
    data = secret.get("data") or {}
    decoded = {}
    for key, value in data.items():
        try:
            decoded[key] = base64.b64decode(str(value))
        except ValueError:
            decoded[key] = b""
    return decoded


class WebhookCertificateKeeper:
    """Makes, renews and spreads the webhook's certificates; see the module docstring."""

    def __init__(
        self,
        client: KubeClient,
        *,
        targets: CertificateTargets,
        recorder: EventRecorder | None = None,
        policy: RotationPolicy | None = None,
        check_interval: float = 10.0,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.client = client
        self.targets = targets
        self.recorder = recorder
        self.policy = policy or RotationPolicy(hosts=targets.hosts)
        self.check_interval = check_interval
        self._clock = clock
        self._settled: tuple[bytes, datetime.datetime] | None = None
        self._thread: threading.Thread | None = None
        self.passes = 0
        """Completed passes (for tests and logs)."""

    # -- the loop -------------------------------------------------------------------------------
    def start(self, stop: threading.Event) -> None:
        """Run passes in a daemon thread until ``stop`` is set."""
        self._thread = threading.Thread(
            target=self.run, args=(stop,), name="webhook-certificates", daemon=True
        )
        self._thread.start()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                wait = self.sync_once()
            except Exception as error:  # the next pass reads everything again
                log.warning("webhook certificates: %s", error)
                wait = min(self.check_interval, 2.0)
            stop.wait(wait)

    def sync_once(self) -> float:
        """One pass: read, plan, write; seconds until the next pass."""
        secret = self._get(_secret_path(self.targets, name=self.targets.secret))
        ca_secret = self._get(_secret_path(self.targets, name=self.targets.ca_secret))
        sites = self._sites()
        now = self._clock()
        data = _decoded(secret)
        ca_data = _decoded(ca_secret)
        if ca_data and ca_data.get(CA_KEY_KEY):
            # The split layout; with the serving Secret gone, its CA still signs the next pair.
            data = {**(data or {CA_CERT_KEY: ca_data.get(CA_CERT_KEY, b"")}),
                    CA_KEY_KEY: ca_data[CA_KEY_KEY]}  # fmt: skip
        stored_bundle = (data or {}).get("ca.crt", b"")
        observed = Observed(
            data=data,
            annotations=dict(((secret or {}).get("metadata") or {}).get("annotations") or {}),
            live_bundles=tuple(b for site in sites for b in site.bundles),
            bundle_trusted_for=self._trusted_for(sites, stored_bundle, now=now),
        )
        step = plan(observed, now=now, policy=self.policy)
        if step.bundles_first:
            patched = self._write_bundles(sites, step.bundle)
            self._write_secrets(secret, ca_secret, step)
        else:
            self._write_secrets(secret, ca_secret, step)
            patched = self._write_bundles(sites, step.bundle)
        self._report(secret, step)  # after the writes: a pass that lost a race says nothing
        if patched or step.bundle != stored_bundle:
            # Every caBundle holds the new bundle from now on: the settling starts here, not at
            # the next pass that reads it back.
            self._settled = (step.bundle, self._clock())
        if secret is not None and stored_bundle and step.bundle == stored_bundle:
            for site in patched:  # someone else changed it: say whose field was put back
                message = (
                    f"put the caBundle of {site.plural}/{site.name} back to the Secret's ca.crt"
                )
                log.warning("webhook certificates: %s", message)
                self._event(secret, "Warning", REPAIRED, message)
        self.passes += 1
        if step.recheck_in is not None:
            return max(0.5, min(self.check_interval, step.recheck_in.total_seconds()))
        return self.check_interval

    def _trusted_for(
        self, sites: list[BundleSite], bundle: bytes, *, now: datetime.datetime
    ) -> datetime.timedelta | None:
        """How long every ``caBundle`` has held ``bundle``, as this keeper saw it."""
        if not bundle or not sites or not all(site.holds(bundle) for site in sites):
            self._settled = None
            return None
        if self._settled is None or self._settled[0] != bundle:
            self._settled = (bundle, now)
        return now - self._settled[1]

    # -- reads ----------------------------------------------------------------------------------
    def _get(self, path: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.client.request("GET", path)
        except NotFound:
            return None
        return found

    def _sites(self) -> list[BundleSite]:
        """The objects with ``caBundle`` fields that exist now (a missing one is skipped)."""
        sites: list[BundleSite] = []
        for plural, name in ((MUTATING, self.targets.mutating),
                             (VALIDATING, self.targets.validating)):  # fmt: skip
            found = self._get(_site_path(plural, name))
            if found is not None:
                sites.append(webhook_site(plural, found))
        crd = self._get(_site_path(CRDS, self.targets.crd))
        site = None if crd is None else crd_site(crd)
        if site is not None:
            sites.append(site)
        return sites

    # -- writes ---------------------------------------------------------------------------------
    def _write_bundles(self, sites: list[BundleSite], bundle: bytes) -> list[BundleSite]:
        """Every ``caBundle`` set to ``bundle``; the sites that needed it."""
        patched = []
        for site in sites:
            if site.holds(bundle):
                continue
            self.client.request(
                "PATCH", _site_path(site.plural, site.name), body=bundle_patch(site, bundle),
                content_type=JSON_PATCH, query=[("fieldManager", FIELD_MANAGER)],
            )  # fmt: skip
            patched.append(site)
        return patched

    def _write_secrets(
        self, secret: dict[str, Any] | None, ca_secret: dict[str, Any] | None, step: Plan
    ) -> None:
        """The CA Secret first, then the serving one (without ``ca.key``): a pass cut off
        between the two leaves the key in both, never in neither."""
        ca_data = {key: step.data[key] for key in CA_KEYS if key in step.data}
        if ca_data and (step.secret_changed or _decoded(ca_secret) != ca_data):
            self._write_secret(
                ca_secret, name=self.targets.ca_secret, data=ca_data, secret_type="Opaque",
                annotations={}, component="webhook-ca",
            )  # fmt: skip
        legacy = secret is not None and CA_KEY_KEY in (secret.get("data") or {})
        if step.secret_changed or legacy:
            serving = {key: step.data[key] for key in SERVING_KEYS if key in step.data}
            self._write_secret(
                secret, name=self.targets.secret, data=serving, secret_type="kubernetes.io/tls",
                annotations=step.annotations, component="webhook",
            )  # fmt: skip

    def _write_secret(
        self,
        secret: dict[str, Any] | None,
        *,
        name: str,
        data: dict[str, bytes],
        secret_type: str,
        annotations: dict[str, str | None],
        component: str,
    ) -> None:
        """Create ``name`` with ``data``, or replace the data of ``secret`` (keys not in
        ``data`` go) with the ``resourceVersion`` read, so a concurrent writer's change fails."""
        encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
        if secret is None:
            created = {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": secret_type,
                "metadata": self._new_metadata(name, annotations, component=component),
                "data": encoded,
            }
            self.client.request("POST", _secret_path(self.targets, name=None), body=created)
            return
        metadata = secret["metadata"]
        kept = dict(metadata.get("annotations") or {})
        for key, value in annotations.items():
            if value is None:
                kept.pop(key, None)
            else:
                kept[key] = value
        metadata["annotations"] = kept
        secret["data"] = encoded
        self.client.request("PUT", _secret_path(self.targets, name=name), body=secret)

    def _new_metadata(
        self, name: str, annotations: dict[str, str | None], *, component: str
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": self.targets.namespace,
            "labels": {
                "app.kubernetes.io/name": "mxjob-operator",
                "app.kubernetes.io/component": component,
                "app.kubernetes.io/managed-by": "mxjob-controller",
            },
            "annotations": {k: v for k, v in annotations.items() if v is not None},
        }
        owner = self._owner()
        if owner is not None:
            metadata["ownerReferences"] = [owner]
        return metadata

    def _owner(self) -> dict[str, Any] | None:
        path = resource_path(
            group="apps", version="v1", plural="deployments", namespace=self.targets.namespace,
            name=self.targets.owner,
        )  # fmt: skip
        try:
            deployment = self.client.request("GET", path)
        except ApiError as error:  # not installed as a Deployment (local runs): no owner
            log.info("webhook certificates: the Secret gets no owner: %s", error)
            return None
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": self.targets.owner,
            "uid": deployment["metadata"]["uid"],
        }

    # -- reports --------------------------------------------------------------------------------
    def _report(self, secret: dict[str, Any] | None, step: Plan) -> None:
        subject = secret or {
            "metadata": {"name": self.targets.secret, "namespace": self.targets.namespace}
        }
        for warning in step.warnings:
            log.warning("webhook certificates: %s", warning)
            self._event(subject, "Warning", REPLACED, warning)
        for reason in step.reasons:
            log.info("webhook certificates: %s", reason)
            self._event(subject, "Normal", ISSUED, reason)

    def _event(self, secret: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            self.recorder.record(
                secret, event_type, reason, message, api_version="v1", kind="Secret"
            )
