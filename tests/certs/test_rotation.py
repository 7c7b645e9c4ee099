"""rotation: what the webhook's Secret and caBundles must hold next, step by step."""

from __future__ import annotations

import datetime

from cryptography import x509

from certs.authority import CertificateAuthority
from certs.rotation import (
    CA_COMMON_NAME,
    ROTATE_ANNOTATION,
    SERVING_SINCE_ANNOTATION,
    Observed,
    Plan,
    RotationPolicy,
    plan,
)
from certs.stored import bundle_pem, issued_by, parse_bundle

HOSTS = ("mxjob-webhook.mxjob-system.svc", "mxjob-webhook.mxjob-system.svc.cluster.local")
POLICY = RotationPolicy(hosts=HOSTS)
NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)
SETTLED = datetime.timedelta(seconds=30)


def observe(
    data: dict[str, bytes] | None,
    *,
    annotations: dict[str, str] | None = None,
    live: tuple[bytes, ...] | None = None,
    trusted_for: datetime.timedelta | None = SETTLED,
) -> Observed:
    """What the keeper sees; by default every caBundle equals the Secret's ca.crt, settled."""
    bundle = (data or {}).get("ca.crt", b"")
    return Observed(
        data=data,
        annotations=annotations or {SERVING_SINCE_ANNOTATION: "2026-11-01T00:00:00Z"},
        live_bundles=live if live is not None else (bundle, bundle, bundle),
        bundle_trusted_for=trusted_for,
    )


def leaf(step: Plan) -> x509.Certificate:
    return x509.load_pem_x509_certificate(step.data["tls.crt"])


def trusted(step: Plan) -> list[x509.Certificate]:
    return parse_bundle(step.bundle)


def fresh() -> Plan:
    return plan(observe(None, annotations={}, live=()), now=NOW, policy=POLICY)


def test_a_missing_secret_gets_a_ca_and_a_serving_certificate_for_the_service_names() -> None:
    step = fresh()
    assert step.secret_changed and step.bundles_first
    assert [c.subject.rfc4514_string() for c in trusted(step)] == [f"CN={CA_COMMON_NAME}"]
    assert issued_by(leaf(step), trusted(step)[0])
    names = leaf(step).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert names.value.get_values_for_type(x509.DNSName) == list(HOSTS)
    assert step.annotations[SERVING_SINCE_ANNOTATION] == "2026-11-26T12:00:00Z"
    assert step.warnings == ()


def test_certificates_count_their_validity_from_the_plans_now_not_the_clock() -> None:
    """The plan decides by its own ``now``; what it issues must expire by that same clock."""
    for moment in (NOW - datetime.timedelta(days=2000), NOW + datetime.timedelta(days=2000)):
        step = plan(observe(None, annotations={}, live=()), now=moment, policy=POLICY)
        assert leaf(step).not_valid_after_utc == moment + POLICY.serving_valid_for
        assert trusted(step)[0].not_valid_after_utc == moment + POLICY.ca_valid_for
        assert leaf(step).not_valid_before_utc < moment < trusted(step)[0].not_valid_after_utc


def test_a_current_secret_is_left_as_it_is() -> None:
    first = fresh()
    again = plan(
        observe(first.data, annotations={SERVING_SINCE_ANNOTATION: "2026-11-26T12:00:00Z"}),
        now=NOW + datetime.timedelta(minutes=5),
        policy=POLICY,
    )
    assert not again.secret_changed
    assert again.data == first.data and again.bundle == first.bundle
    assert again.reasons == ()


def test_a_serving_certificate_near_expiry_is_renewed_from_the_same_ca() -> None:
    first = fresh()
    later = NOW + POLICY.serving_valid_for - POLICY.serving_renew_before + datetime.timedelta(1)
    step = plan(observe(first.data), now=later, policy=POLICY)
    assert step.secret_changed and not step.bundles_first
    assert step.bundle == first.bundle
    assert leaf(step).serial_number != leaf(first).serial_number
    assert issued_by(leaf(step), trusted(first)[0])


def test_a_forced_serving_rotation_renews_it_and_removes_the_annotation() -> None:
    first = fresh()
    annotations = {ROTATE_ANNOTATION: "serving", SERVING_SINCE_ANNOTATION: "2026-11-26T12:00:00Z"}
    step = plan(observe(first.data, annotations=annotations), now=NOW, policy=POLICY)
    assert leaf(step).serial_number != leaf(first).serial_number
    assert step.annotations[ROTATE_ANNOTATION] is None
    assert step.bundle == first.bundle


def test_a_ca_replacement_is_trusted_first_then_served_then_the_old_ca_dropped() -> None:
    first = fresh()
    old_ca = trusted(first)[0]
    annotations = {ROTATE_ANNOTATION: "ca", SERVING_SINCE_ANNOTATION: "2026-11-26T12:00:00Z"}
    # 1. The new CA joins the bundle, caBundles before the Secret; the old leaf is still served.
    joined = plan(observe(first.data, annotations=annotations), now=NOW, policy=POLICY)
    new_ca = trusted(joined)[0]
    assert trusted(joined)[1:] == [old_ca] and new_ca != old_ca
    assert joined.bundles_first and joined.annotations[ROTATE_ANNOTATION] is None
    assert leaf(joined).serial_number == leaf(first).serial_number
    assert joined.recheck_in == POLICY.trust_settle
    # 2. Not yet settled: nothing is served from the new CA.
    waiting = plan(
        observe(joined.data, trusted_for=datetime.timedelta(seconds=3)), now=NOW, policy=POLICY
    )
    assert not waiting.secret_changed
    assert waiting.recheck_in == POLICY.trust_settle - datetime.timedelta(seconds=3)
    # 3. Settled: the leaf moves to the new CA; both stay trusted.
    moved = plan(observe(joined.data), now=NOW, policy=POLICY)
    assert issued_by(leaf(moved), new_ca) and trusted(moved) == [new_ca, old_ca]
    assert not moved.bundles_first
    # 4. After the overlap the old CA goes, the Secret before the caBundles.
    since = {SERVING_SINCE_ANNOTATION: moved.annotations[SERVING_SINCE_ANNOTATION] or ""}
    later = NOW + POLICY.ca_overlap
    dropped = plan(observe(moved.data, annotations=since), now=later, policy=POLICY)
    assert trusted(dropped) == [new_ca] and not dropped.bundles_first
    assert dropped.data["tls.crt"] == moved.data["tls.crt"]


def test_a_deleted_secret_gets_a_new_ca_while_the_one_pods_still_serve_stays_trusted() -> None:
    first = fresh()
    old_ca = trusted(first)[0]
    step = plan(observe(None, annotations={}, live=(first.bundle,) * 3), now=NOW, policy=POLICY)
    assert trusted(step)[1:] == [old_ca] and step.bundles_first
    assert issued_by(leaf(step), trusted(step)[0])


def test_a_foreign_ca_found_only_in_a_cabundle_is_not_carried_over() -> None:
    foreign = CertificateAuthority.create(common_name="someone-else")
    step = plan(observe(None, annotations={}, live=(foreign.cert_pem,)), now=NOW, policy=POLICY)
    assert len(trusted(step)) == 1


def test_garbage_in_the_secret_is_replaced_and_named() -> None:
    first = fresh()
    garbage = {**first.data, "ca.key": b"not a key"}
    step = plan(observe(garbage), now=NOW, policy=POLICY)
    assert any("ca.key is not the key" in w for w in step.warnings), step.warnings
    assert trusted(step)[1:] == trusted(first), "the CA pods still serve from stays trusted"
    assert issued_by(leaf(step), trusted(step)[0])


def test_a_serving_key_that_does_not_fit_is_reissued_from_the_same_ca() -> None:
    first, other = fresh(), fresh()
    mismatched = {**first.data, "tls.key": other.data["tls.key"]}
    step = plan(observe(mismatched), now=NOW, policy=POLICY)
    assert any("tls.key is not the key of tls.crt" in w for w in step.warnings)
    assert step.bundle == first.bundle
    assert issued_by(leaf(step), trusted(first)[0])


def test_an_unknown_rotate_value_is_refused_by_name_and_removed() -> None:
    first = fresh()
    annotations = {ROTATE_ANNOTATION: "everything", SERVING_SINCE_ANNOTATION: "x"}
    step = plan(observe(first.data, annotations=annotations), now=NOW, policy=POLICY)
    assert any("'serving' and 'ca'" in w for w in step.warnings)
    assert step.annotations[ROTATE_ANNOTATION] is None
    assert step.data["tls.crt"] == first.data["tls.crt"]


def test_a_ca_near_expiry_is_renewed_before_it_expires() -> None:
    first = fresh()
    later = NOW + POLICY.ca_valid_for - POLICY.ca_renew_before + datetime.timedelta(1)
    step = plan(observe(first.data), now=later, policy=POLICY)
    assert len(trusted(step)) == 2 and trusted(step)[1] == trusted(first)[0]
    assert step.bundles_first


def test_the_bundle_never_exceeds_its_limit() -> None:
    step = fresh()
    for _ in range(POLICY.max_trusted + 2):
        step = plan(
            observe(step.data, annotations={ROTATE_ANNOTATION: "ca"}), now=NOW, policy=POLICY
        )
    assert len(trusted(step)) == POLICY.max_trusted
    assert bundle_pem(trusted(step)) == step.bundle
    # Never settled, the first CA still signs what is served: it is never the one dropped.
    assert any(issued_by(leaf(step), ca) for ca in trusted(step))
