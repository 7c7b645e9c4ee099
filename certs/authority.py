"""A small certificate authority for the webhook's serving certificate and the local control plane.

Why our own: the webhook must be served over real TLS with a ``caBundle`` the API server trusts,
and the local control plane needs a CA, an apiserver serving certificate and an admin client
certificate. Everything here is built on ``cryptography``; keys are ECDSA P-256, which the API
server, etcd, kubectl and Python's ``ssl`` all accept and which are fast to generate. A CA can
also have an RSA key (``rsa=True``), written as PKCS#1: the certificate rotator of kubeflow
training-operator (``cert-controller``), which the takeover tests run, reads a CA key in no other
form.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_CLOCK_SKEW = datetime.timedelta(minutes=5)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: PrivateKey) -> bytes:
    """PKCS#8 for ECDSA keys; PKCS#1 (``RSA PRIVATE KEY``) for RSA keys."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL
        if isinstance(key, rsa.RSAPrivateKey)
        else serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Digital signature for every certificate; certificate and CRL signing for the CA only."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _san(hosts: tuple[str, ...]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed CA that issues serving and client certificates."""

    pair: KeyPair

    @classmethod
    def create(
        cls,
        *,
        common_name: str = "mxjob-operator-ca",
        valid_days: int = 3650,
        rsa_key: bool = False,
        hosts: tuple[str, ...] = (),
        issued_at: datetime.datetime | None = None,
    ) -> CertificateAuthority:
        """A new CA; ``rsa_key`` for a 2048-bit RSA key, ``hosts`` as its subject alt names.

        cert-controller checks its CA as it checks a serving certificate, by a DNS name
        (``hosts``), and parses only RSA CA keys. ``issued_at`` (the clock by default) is the
        moment its validity counts from: the rotation plan (certs/rotation.py) decides at a
        ``now`` of its own, and a certificate it issues must expire by that same clock.
        """
        key: PrivateKey = (
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
            if rsa_key
            else _new_key()
        )
        now = issued_at or datetime.datetime.now(datetime.UTC)
        subject = _name(common_name)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + datetime.timedelta(days=valid_days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                _key_usage(signs_certificates=True),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
        )
        if hosts:
            builder = builder.add_extension(_san(hosts), critical=False)
        cert = builder.sign(key, hashes.SHA256())
        return cls(KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)))

    @classmethod
    def load(cls, *, cert_pem: bytes, key_pem: bytes) -> CertificateAuthority:
        return cls(KeyPair(cert_pem, key_pem))

    @property
    def cert_pem(self) -> bytes:
        return self.pair.cert_pem

    def _issue(
        self,
        *,
        common_name: str,
        organizations: tuple[str, ...],
        hosts: tuple[str, ...],
        usage: x509.ObjectIdentifier,
        valid_days: int,
        issued_at: datetime.datetime | None,
    ) -> KeyPair:
        ca_cert = self.pair.certificate
        ca_key = serialization.load_pem_private_key(self.pair.key_pem, password=None)
        if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise TypeError("the CA key must be an ECDSA or RSA key")
        key = _new_key()
        now = issued_at or datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + datetime.timedelta(days=valid_days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                _key_usage(signs_certificates=False),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if hosts:
            builder = builder.add_extension(_san(hosts), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def issue_serving(
        self,
        *,
        hosts: tuple[str, ...],
        common_name: str | None = None,
        valid_days: int = 365,
        issued_at: datetime.datetime | None = None,
    ) -> KeyPair:
        """A TLS server certificate valid for ``hosts`` (DNS names and IP addresses).

        ``issued_at`` as in :meth:`create`.
        """
        if not hosts:
            raise ValueError("a serving certificate needs at least one host name")
        return self._issue(
            common_name=common_name or hosts[0],
            organizations=(),
            hosts=hosts,
            usage=ExtendedKeyUsageOID.SERVER_AUTH,
            valid_days=valid_days,
            issued_at=issued_at,
        )

    def issue_client(
        self, *, common_name: str, organizations: tuple[str, ...] = (), valid_days: int = 365
    ) -> KeyPair:
        """A TLS client certificate; Kubernetes reads the user from CN and groups from O."""
        return self._issue(
            common_name=common_name,
            organizations=organizations,
            hosts=(),
            usage=ExtendedKeyUsageOID.CLIENT_AUTH,
            valid_days=valid_days,
            issued_at=None,
        )


def new_signing_key_pem() -> tuple[bytes, bytes]:
    """A (private, public) PEM pair for service-account token signing."""
    key = _new_key()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return _key_pem(key), public
