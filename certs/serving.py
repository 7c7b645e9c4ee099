"""TLS server contexts of both processes: TLS 1.2 as the floor, from files or self-signed.

One place for the floor, so the webhook's reviews and both processes' ``/metrics`` refuse the
same old protocols. ``load_cert_chain`` reads files only, so a self-signed certificate is written
to a private temporary directory just while it is loaded.
"""

from __future__ import annotations

import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from certs.authority import CertificateAuthority
from certs.stored import TLS_CERT_KEY, TLS_KEY_KEY

MINIMUM_TLS_VERSION: Final = ssl.TLSVersion.TLSv1_2


@dataclass(frozen=True, kw_only=True)
class CertificateFiles:
    """Where a serving pair is read from: a PEM certificate (chain) and its private key."""

    cert_file: Path
    key_file: Path

    @classmethod
    def in_directory(cls, directory: Path) -> CertificateFiles:
        """``tls.crt`` and ``tls.key`` in ``directory``: a mounted ``kubernetes.io/tls`` Secret
        names its files by its keys, and cert-manager writes the same layout."""
        return cls(cert_file=directory / TLS_CERT_KEY, key_file=directory / TLS_KEY_KEY)


def new_server_context(*, cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """A server context with TLS 1.2 as the floor, loaded from ``cert_file``/``key_file``.

    Raises ``OSError``/``ssl.SSLError`` when the files are missing, unreadable or do not match.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM_TLS_VERSION
    context.load_cert_chain(certfile=str(cert_file), keyfile=str(key_file))
    return context


@dataclass(frozen=True)
class SelfSigned:
    """A self-signed server context, and its certificate (PEM): what a client that is to verify
    it must trust, being its own CA."""

    context: ssl.SSLContext
    cert_pem: bytes


def self_signed(*, hosts: tuple[str, ...]) -> SelfSigned:
    """A server context presenting a new self-signed certificate for ``hosts`` (the first is its
    common name), valid a year: what a server presents before it has been given a pair."""
    authority = CertificateAuthority.create(common_name=hosts[0], hosts=hosts, valid_days=365)
    with tempfile.TemporaryDirectory(prefix="mxjob-self-signed-") as scratch:
        files = CertificateFiles.in_directory(Path(scratch))
        files.cert_file.write_bytes(authority.pair.cert_pem)
        files.key_file.touch(mode=0o600)
        files.key_file.write_bytes(authority.pair.key_pem)
        context = new_server_context(cert_file=files.cert_file, key_file=files.key_file)
    return SelfSigned(context, authority.pair.cert_pem)


def self_signed_context(*, hosts: tuple[str, ...]) -> ssl.SSLContext:
    """:func:`self_signed`'s context alone."""
    return self_signed(hosts=hosts).context
