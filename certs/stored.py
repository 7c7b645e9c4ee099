"""What the webhook's certificate Secrets hold, read defensively.

The controller's certificate keeper (controller/certificates/keeper.py) keeps, read here as one
mapping:

- ``ca.crt``: the trust bundle, PEM certificates, the signing CA first; the webhook
  configurations' and the CRD's ``caBundle`` are exactly this;
- ``ca.key``: the signing CA's private key (in the Secret ``mxjob-webhook-ca`` that only the
  controller reads; never mounted into webhook pods);
- ``tls.crt`` / ``tls.key``: the serving pair the webhook presents (``mxjob-webhook-tls``).

Anyone with access may have written anything there, so every part is checked on its own and
what is wrong is named: a garbage ``ca.key`` still leaves ``ca.crt``'s certificates usable as
"trusted before", a garbage ``tls.crt`` still leaves the CA usable.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from cryptography import exceptions, x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from certs.authority import CertificateAuthority, KeyPair

CA_CERT_KEY = "ca.crt"
CA_KEY_KEY = "ca.key"
TLS_CERT_KEY = "tls.crt"
TLS_KEY_KEY = "tls.key"


def parse_bundle(pem: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle; an unparseable bundle gives none."""
    try:
        return x509.load_pem_x509_certificates(pem) if pem.strip() else []
    except ValueError:
        return []


def bundle_pem(certificates: list[x509.Certificate]) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates)


def _public_der(key: object) -> bytes | None:
    if isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    if isinstance(key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
        return key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    return None


def key_matches(certificate: x509.Certificate, key_pem: bytes) -> bool:
    """Whether ``key_pem`` is the private key of ``certificate``."""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        return False
    mine = _public_der(key)
    return mine is not None and mine == _public_der(certificate.public_key())


def is_ca(certificate: x509.Certificate) -> bool:
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    except x509.ExtensionNotFound:
        return False
    return constraints.value.ca


def issued_by(leaf: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether ``ca`` signed ``leaf`` (the signature checks, not only the names)."""
    try:
        leaf.verify_directly_issued_by(ca)
    except (ValueError, TypeError, exceptions.InvalidSignature):
        return False
    return True


def covers(leaf: x509.Certificate, hosts: tuple[str, ...]) -> bool:
    """Whether the leaf names every DNS host in its subject alternative names."""
    try:
        san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return False
    names = set(san.value.get_values_for_type(x509.DNSName))
    return all(host in names for host in hosts)


@dataclass(frozen=True)
class StoredCertificates:
    """The Secret's contents, each part ``None`` when missing or unusable, with the reasons."""

    signer: CertificateAuthority | None
    """The signing CA (first of ``ca.crt`` with ``ca.key``), if it is a CA and the key fits."""
    trusted: tuple[x509.Certificate, ...]
    """Every CA certificate of ``ca.crt`` (the signer's too), in order."""
    serving: KeyPair | None
    """The serving pair, if it parses and the key fits the certificate."""
    problems: tuple[str, ...] = field(default=())
    """What was unusable, for the Warning Event that says the part was replaced."""

    @property
    def leaf(self) -> x509.Certificate | None:
        return None if self.serving is None else self.serving.certificate


def read_stored(data: dict[str, bytes], *, now: datetime.datetime) -> StoredCertificates:
    """The usable parts of a certificate Secret's (decoded) data at ``now``."""
    problems: list[str] = []
    ca_pem = data.get(CA_CERT_KEY, b"")
    bundle = parse_bundle(ca_pem)
    if ca_pem.strip() and not bundle:
        problems.append(f"{CA_CERT_KEY} holds no PEM certificate")
    trusted = tuple(c for c in bundle if is_ca(c) and c.not_valid_after_utc > now)
    signer: CertificateAuthority | None = None
    if bundle:
        first = bundle[0]
        key_pem = data.get(CA_KEY_KEY, b"")
        if not is_ca(first):
            problems.append(f"the first certificate of {CA_CERT_KEY} is not a CA")
        elif first.not_valid_after_utc <= now:
            problems.append(f"the CA of {CA_CERT_KEY} expired at {first.not_valid_after_utc}")
        elif not key_matches(first, key_pem):
            problems.append(
                f"{CA_KEY_KEY} is not the key of the first certificate of {CA_CERT_KEY}"
            )
        else:
            signer = CertificateAuthority.load(
                cert_pem=first.public_bytes(serialization.Encoding.PEM), key_pem=key_pem
            )
    serving = _read_serving(data, problems)
    return StoredCertificates(signer, trusted, serving, tuple(problems))


def _read_serving(data: dict[str, bytes], problems: list[str]) -> KeyPair | None:
    cert_pem, key_pem = data.get(TLS_CERT_KEY, b""), data.get(TLS_KEY_KEY, b"")
    if not cert_pem.strip() and not key_pem.strip():
        return None
    certificates = parse_bundle(cert_pem)
    if not certificates:
        problems.append(f"{TLS_CERT_KEY} holds no PEM certificate")
        return None
    if not key_matches(certificates[0], key_pem):
        problems.append(f"{TLS_KEY_KEY} is not the key of {TLS_CERT_KEY}")
        return None
    return KeyPair(certificates[0].public_bytes(serialization.Encoding.PEM), key_pem)
