"""A real HTTPS status endpoint for the reporter's tests, and the certificates it serves with.

The server listens on 127.0.0.1 (an ephemeral port) with a certificate of a test CA, records
each request it receives with its arrival time, answers from a script of responses (200 once
the script is used up), and counts the TLS handshakes that failed (a client that did not trust
it). Handshakes are done one at a time in the accepting thread, each bounded by a timeout.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.helpers.waiting import wait_for

STATUS_PATH = "/apis/kubeflow.org/v1/namespaces/team-a/mxjobs/resnet/status"


@dataclass(frozen=True)
class Authority:
    """A CA: its certificate's PEM file, and what it takes to sign with it."""

    ca_file: Path
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_authority(directory: Path, name: str) -> Authority:
    """A self-signed CA, written to ``<directory>/<name>.crt``."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    ca_file = directory / f"{name}.crt"
    ca_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return Authority(ca_file, certificate, key)


def issue_serving_pair(authority: Authority, directory: Path) -> tuple[Path, Path]:
    """A serving certificate for 127.0.0.1 signed by ``authority``: (certificate, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    ca_key_id = x509.SubjectKeyIdentifier.from_public_key(authority.key.public_key())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name("mxjob-operator-status"))
        .issuer_name(authority.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_key_id),
            critical=False,
        )
        .sign(authority.key, hashes.SHA256())
    )
    cert_file, key_file = directory / "serving.crt", directory / "serving.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@dataclass(frozen=True)
class Pki:
    trusted: Authority
    """The CA that signed the server's certificate."""
    other: Authority
    """A CA that did not."""
    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: Any
    """The JSON body, decoded."""
    at: float
    """``time.monotonic()`` when it arrived."""

    @property
    def status(self) -> dict[str, Any]:
        """The body's ``trainerStatus``."""
        status: dict[str, Any] = self.body["trainerStatus"]
        return status

    @property
    def metrics(self) -> dict[str, str]:
        """The body's metrics as a name → value mapping."""
        return {entry["name"]: entry["value"] for entry in self.status.get("metrics", [])}


@dataclass(frozen=True)
class Response:
    """One scripted answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    text: str = "{}"


class _Handler(BaseHTTPRequestHandler):
    server: _TLSServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        received = Received(self.command, self.path, headers, json.loads(raw), time.monotonic())
        response = self.server.owner.take(received)
        data = response.text.encode()
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read what was received, not a log."""


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: StatusServer, context: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner
        self.context = context

    def get_request(self) -> tuple[socket.socket, Any]:
        raw, address = self.socket.accept()
        raw.settimeout(5)
        try:
            return self.context.wrap_socket(raw, server_side=True), address
        except OSError:  # the client refused our certificate, or gave up
            raw.close()
            self.owner.handshake_failed()
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that times out mid-request is what some tests make."""


class StatusServer:
    """The endpoint: what it received, and what it answers next."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._script: list[Response] = []
        self._handshake_failures = 0
        self._server = _TLSServer(self, context)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}{STATUS_PATH}"

    def answer(self, *responses: Response) -> None:
        """Answer the next requests with ``responses``, in order (then 200 again)."""
        with self._lock:
            self._script.extend(responses)

    def take(self, received: Received) -> Response:
        with self._lock:
            self._received.append(received)
            return self._script.pop(0) if self._script else Response()

    def handshake_failed(self) -> None:
        with self._lock:
            self._handshake_failures += 1

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def received_at_least(self, count: int, *, timeout: float = 5.0) -> list[Received]:
        """The requests received, once there are ``count`` of them."""
        return wait_for(
            f"{count} requests",
            lambda: self.received,
            lambda received: len(received) >= count,
            timeout=timeout,
            interval=0.01,
        )

    @property
    def handshake_failures(self) -> int:
        with self._lock:
            return self._handshake_failures

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
