"""Certificates for the webhook and the local control plane, built on ``cryptography``."""

from certs.authority import CertificateAuthority, KeyPair, new_signing_key_pem

__all__ = ["CertificateAuthority", "KeyPair", "new_signing_key_pem"]
