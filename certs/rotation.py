"""The next step for the webhook's certificates: pure decisions, no I/O.

The controller's certificate keeper (controller/certificates/keeper.py) reads the Secret and the
three ``caBundle`` fields, asks :func:`plan` what they must hold next, and writes that. The rules
that keep every review answered while certificates change:

- A CA is trusted everywhere before anything is served from it. A renewed CA first joins the
  trust bundle (``ca.crt`` and every ``caBundle``) beside the one that signed the served
  certificate; only when the ``caBundle`` fields have held it for ``trust_settle`` is a serving
  certificate issued from it. Whenever the bundle grows, the ``caBundle`` fields are written
  before the Secret (``Plan.bundles_first``), so a webhook pod that reads the new Secret early
  still presents a certificate the API server trusts.
- A replaced CA stays trusted for ``ca_overlap`` after the serving certificate moved on: the
  kubelet refreshes a mounted Secret a minute or so after it changes, and until then the
  webhook pods present the previous certificate.
- A Secret that is missing, or whose CA cannot sign (garbage, a key that does not fit, expired),
  gets a new CA; the CAs it or the ``caBundle`` fields still trusted stay trusted beside it, so
  pods serving from an old Secret keep working until they read the new one. A serving pair that
  is unusable is re-issued. Each replacement is named in ``Plan.warnings``.
- ``mxjob-operator.kubeflow.org/rotate: serving`` or ``ca`` on the Secret asks for a rotation
  now; the annotation is removed once it is done.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID

from certs.authority import CertificateAuthority, KeyPair
from certs.stored import (
    CA_CERT_KEY,
    CA_KEY_KEY,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    StoredCertificates,
    bundle_pem,
    covers,
    is_ca,
    issued_by,
    parse_bundle,
    read_stored,
)
from shared.apitime import format_time, parse_time

ROTATE_ANNOTATION: Final = "mxjob-operator.kubeflow.org/rotate"
SERVING_SINCE_ANNOTATION: Final = "mxjob-operator.kubeflow.org/serving-since"
ROTATE_SERVING: Final = "serving"
ROTATE_CA: Final = "ca"
CA_COMMON_NAME: Final = "mxjob-operator-ca"
"""Our CAs' name; a CA found only in a ``caBundle`` is kept trusted only under this name."""


@dataclass(frozen=True, kw_only=True)
class RotationPolicy:
    """Lifetimes and waits of the in-cluster certificates (docs/how-to/install.md gives the
    figures)."""

    hosts: tuple[str, ...]
    """The DNS names the serving certificate must carry (the webhook Service's)."""
    ca_valid_for: datetime.timedelta = datetime.timedelta(days=3650)
    ca_renew_before: datetime.timedelta = datetime.timedelta(days=365)
    serving_valid_for: datetime.timedelta = datetime.timedelta(days=365)
    serving_renew_before: datetime.timedelta = datetime.timedelta(days=90)
    trust_settle: datetime.timedelta = datetime.timedelta(seconds=10)
    """How long every ``caBundle`` must hold a new CA before a certificate is served from it:
    API servers pick a changed webhook configuration or CRD up from their watch."""
    ca_overlap: datetime.timedelta = datetime.timedelta(hours=1)
    """How long a replaced CA stays trusted after the serving certificate changed: webhook pods
    read the new Secret when their kubelet refreshes the volume (about a minute by default)."""
    max_trusted: int = 4
    """At most this many CAs in the bundle (the signer and the newest replaced ones)."""


@dataclass(frozen=True)
class Observed:
    """What the keeper found."""

    data: Mapping[str, bytes] | None
    """The Secret's decoded data; ``None`` when there is no Secret."""
    annotations: Mapping[str, str]
    live_bundles: tuple[bytes, ...]
    """The decoded ``caBundle`` of every webhook and of the CRD conversion, as found."""
    bundle_trusted_for: datetime.timedelta | None
    """How long every ``caBundle`` has equalled the Secret's ``ca.crt`` (as this keeper saw
    it); ``None`` when one differs now."""


@dataclass(frozen=True)
class Plan:
    """What the Secret and the ``caBundle`` fields must hold after this step."""

    data: dict[str, bytes]
    annotations: dict[str, str | None]
    """Annotations to set; ``None`` removes one."""
    secret_changed: bool
    bundle: bytes
    bundles_first: bool
    """Write the ``caBundle`` fields before the Secret: the bundle gains a CA."""
    reasons: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    recheck_in: datetime.timedelta | None = None
    """Look again this soon (waiting for a new CA to settle), not after the usual interval."""


_SHA256: Final = hashes.SHA256()


def _ours(certificate: x509.Certificate) -> bool:
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return any(name.value == CA_COMMON_NAME for name in names)


def _unique(certificates: list[x509.Certificate]) -> list[x509.Certificate]:
    seen: set[bytes] = set()
    kept = []
    for certificate in certificates:
        fingerprint = certificate.fingerprint(certificate.signature_hash_algorithm or _SHA256)
        if fingerprint not in seen:
            seen.add(fingerprint)
            kept.append(certificate)
    return kept


def _still_trusted_elsewhere(
    observed: Observed, *, now: datetime.datetime
) -> list[x509.Certificate]:
    """Our CAs still valid in some ``caBundle``: pods may serve from them."""
    found = [c for pem in observed.live_bundles for c in parse_bundle(pem)]
    return [c for c in found if is_ca(c) and _ours(c) and c.not_valid_after_utc > now]


@dataclass
class _Draft:
    """The plan being built: the signer, the trusted CAs, the serving pair, and why."""

    signer: CertificateAuthority
    trusted: list[x509.Certificate]
    serving: KeyPair | None
    signer_is_new: bool = False
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recheck_in: datetime.timedelta | None = None
    rotate_done: bool = False


def _signer_step(
    stored: StoredCertificates,
    observed: Observed,
    *,
    rotate: str | None,
    now: datetime.datetime,
    policy: RotationPolicy,
) -> _Draft:
    """Keep the signing CA, renew it (it stays trusted), or replace an unusable one."""
    valid_days = max(1, policy.ca_valid_for.days)
    if stored.signer is None:
        carried = [*stored.trusted, *_still_trusted_elsewhere(observed, now=now)]
        signer = CertificateAuthority.create(
            common_name=CA_COMMON_NAME, valid_days=valid_days, issued_at=now
        )
        draft = _Draft(signer, _unique([signer.pair.certificate, *carried]), None, True)
        draft.reasons.append(
            "made a new CA"
            + (f" (still trusting {len(draft.trusted) - 1} earlier)" if carried else "")
        )
        return draft
    draft = _Draft(stored.signer, list(stored.trusted), stored.serving)
    expires = stored.signer.pair.certificate.not_valid_after_utc
    if rotate == ROTATE_CA or expires - now <= policy.ca_renew_before:
        renewed = CertificateAuthority.create(
            common_name=CA_COMMON_NAME, valid_days=valid_days, issued_at=now
        )
        draft.signer = renewed
        draft.trusted = _unique([renewed.pair.certificate, *draft.trusted])
        draft.reasons.append(
            "renewed the CA as asked"
            if rotate == ROTATE_CA
            else f"renewed the CA (expires {expires})"
        )
        draft.rotate_done = rotate == ROTATE_CA
    return draft


def _serving_step(
    draft: _Draft,
    observed: Observed,
    *,
    bundle_changed: bool,
    rotate: str | None,
    now: datetime.datetime,
    policy: RotationPolicy,
) -> None:
    """Issue the serving certificate from the signer when it must change and may."""
    signer_cert = draft.signer.pair.certificate
    leaf = None if draft.serving is None else draft.serving.certificate
    why: str | None = None
    if leaf is None or draft.signer_is_new:
        why = "issued the serving certificate"
    elif not any(issued_by(leaf, ca) for ca in draft.trusted):
        why = "re-issued a serving certificate no trusted CA signed"
    elif not issued_by(leaf, signer_cert):
        settled = observed.bundle_trusted_for
        if bundle_changed or settled is None or settled < policy.trust_settle:
            waited = datetime.timedelta(0) if bundle_changed or settled is None else settled
            draft.recheck_in = policy.trust_settle - waited
            return
        why = "moved the serving certificate to the renewed CA"
    elif rotate == ROTATE_SERVING:
        why = "renewed the serving certificate as asked"
    elif leaf.not_valid_after_utc - now <= policy.serving_renew_before:
        why = f"renewed the serving certificate (expires {leaf.not_valid_after_utc})"
    elif not covers(leaf, policy.hosts):
        why = "re-issued the serving certificate for " + ", ".join(policy.hosts)
    if why is None:
        return
    draft.serving = draft.signer.issue_serving(
        hosts=policy.hosts, valid_days=max(1, policy.serving_valid_for.days), issued_at=now
    )
    draft.reasons.append(why)
    draft.rotate_done = draft.rotate_done or rotate == ROTATE_SERVING


def _drop_step(
    draft: _Draft, *, serving_since: datetime.datetime | None, now: datetime.datetime,
    policy: RotationPolicy,
) -> None:  # fmt: skip
    """Stop trusting replaced CAs once every pod has had time to serve the new certificate."""
    leaf = None if draft.serving is None else draft.serving.certificate
    others = draft.trusted[1:]
    if (
        others
        and leaf is not None
        and issued_by(leaf, draft.signer.pair.certificate)
        and serving_since is not None
        and now - serving_since >= policy.ca_overlap
    ):
        draft.trusted = draft.trusted[:1]
        draft.reasons.append(f"stopped trusting {len(others)} replaced CA(s)")
    if len(draft.trusted) > policy.max_trusted:
        # The newest first, but never without the CA of the certificate served now.
        kept = draft.trusted[: policy.max_trusted]
        serving_ca = next((ca for ca in draft.trusted if leaf and issued_by(leaf, ca)), None)
        if serving_ca is not None and serving_ca not in kept:
            kept = [*kept[:-1], serving_ca]
        draft.trusted = kept


def plan(observed: Observed, *, now: datetime.datetime, policy: RotationPolicy) -> Plan:
    """The Secret's data and annotations and the ``caBundle`` to hold after this step."""
    old = dict(observed.data or {})
    stored = read_stored(old, now=now)
    rotate = observed.annotations.get(ROTATE_ANNOTATION)
    warnings = [f"replaced what was unusable: {problem}" for problem in stored.problems]
    if rotate is not None and rotate not in (ROTATE_SERVING, ROTATE_CA):
        warnings.append(
            f"ignored {ROTATE_ANNOTATION}={rotate!r}: the allowed values are "
            f"{ROTATE_SERVING!r} and {ROTATE_CA!r}"
        )
    draft = _signer_step(stored, observed, rotate=rotate, now=now, policy=policy)
    old_bundle = list(stored.trusted)
    bundle_changed = bundle_pem(draft.trusted) != bundle_pem(old_bundle)
    previous_serving = draft.serving
    _serving_step(
        draft, observed, bundle_changed=bundle_changed, rotate=rotate, now=now, policy=policy
    )
    serving_since = parse_time(observed.annotations.get(SERVING_SINCE_ANNOTATION))
    if draft.serving is not previous_serving or serving_since is None:
        serving_since = now
    _drop_step(draft, serving_since=serving_since, now=now, policy=policy)
    return _finish(
        old, observed, draft, old_bundle=old_bundle, serving_since=serving_since,
        rotate=rotate, warnings=warnings,
    )  # fmt: skip


def _finish(
    old: dict[str, bytes],
    observed: Observed,
    draft: _Draft,
    *,
    old_bundle: list[x509.Certificate],
    serving_since: datetime.datetime,
    rotate: str | None,
    warnings: list[str],
) -> Plan:
    assert draft.serving is not None  # every path above issues one when there was none
    bundle = bundle_pem(draft.trusted)
    data = {
        CA_CERT_KEY: bundle,
        CA_KEY_KEY: draft.signer.pair.key_pem,
        TLS_CERT_KEY: draft.serving.cert_pem,
        TLS_KEY_KEY: draft.serving.key_pem,
    }
    annotations: dict[str, str | None] = {}
    stamp = format_time(serving_since)
    if observed.annotations.get(SERVING_SINCE_ANNOTATION) != stamp:
        annotations[SERVING_SINCE_ANNOTATION] = stamp
    if rotate is not None and (draft.rotate_done or rotate not in (ROTATE_SERVING, ROTATE_CA)):
        annotations[ROTATE_ANNOTATION] = None
    before = {bundle_pem([c]) for c in old_bundle}
    grows = any(bundle_pem([c]) not in before for c in draft.trusted)
    return Plan(
        data=data,
        annotations=annotations,
        secret_changed=observed.data is None
        or any(old.get(key) != value for key, value in data.items())
        or bool(annotations),
        bundle=bundle,
        bundles_first=grows,
        reasons=tuple(draft.reasons),
        warnings=tuple(warnings),
        recheck_in=draft.recheck_in,
    )
