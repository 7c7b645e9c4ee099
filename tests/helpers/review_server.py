"""An admission webhook of a test's own: HTTPS on loopback, trusted through a CA made by ``certs``.

For tests that need a second webhook beside the operator's (another vendor's mutator, a plain
validating webhook): ``answer`` turns each AdmissionRequest into the response's fields (``uid``
is echoed for it), and the server wraps them in an AdmissionReview.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from certs import CertificateAuthority

Answer = Callable[[dict[str, Any]], dict[str, Any]]


def _handler(answer: Answer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            request = review["request"]
            response = {"uid": request["uid"], **answer(request)}
            body = json.dumps(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                 "response": response}
            ).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the API server's answers are what the tests read."""

    return Handler


@contextmanager
def serving_reviews(answer: Answer, *, key_dir: Path) -> Iterator[tuple[int, bytes]]:
    """Serve ``answer`` until the block ends; yields (port, the CA's PEM for a caBundle)."""
    ca = CertificateAuthority.create(common_name="test-webhook-ca")
    pair = ca.issue_serving(hosts=("127.0.0.1",))
    cert, key = key_dir / "tls.crt", key_dir / "tls.key"
    cert.write_bytes(pair.cert_pem)
    key.write_bytes(pair.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(answer))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, name="test-webhook", daemon=True)
    thread.start()
    try:
        yield server.server_address[1], ca.cert_pem
    finally:
        server.shutdown()
        server.server_close()
