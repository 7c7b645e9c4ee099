"""controller/progress/server.py: HTTPS only, bodies read only as far as the limit (by length or
by chunks), every method but POST answered 405, and a renewed certificate served from the next
connection on."""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography import x509

from certs.authority import CertificateAuthority
from certs.reloader import CertificateReloader
from certs.serving import CertificateFiles
from controller.progress.counters import ProgressCounters
from controller.progress.server import ProgressServer
from controller.progress.service import ProgressService
from controller.progress.tokens import Identity
from controller.progress.wire import Headers, Reply, Target
from tests.certs.tls_samples import write_pair
from tests.controller.progress.progress_samples import (
    NAMESPACE,
    STATUS_PATH,
    Tls,
    job,
    pod,
    post,
    report,
    serving_tls,
    stores,
)

WORKER = "mnist-worker-0"
MAX_BODY = 4096


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return serving_tls(tmp_path_factory.mktemp("tls"))


def _service(kind: type[ProgressService] = ProgressService) -> ProgressService:
    identity = Identity(
        username="system:serviceaccount:team:default",
        namespace=NAMESPACE,
        pod_name=WORKER,
        pod_uid=f"uid-{WORKER}",
    )
    pods, jobs = stores(job(), pod(WORKER))
    return kind(
        identify=lambda header: identity,
        pods=pods,
        jobs=jobs,
        offer=lambda key, status: None,
        write_interval=5.0,
    )


def _server(
    tls: Callable[[], ssl.SSLContext], service: ProgressService | None = None
) -> ProgressServer:
    server = ProgressServer(
        host="127.0.0.1",
        port=0,
        service=service or _service(),
        counters=ProgressCounters(),
        tls=tls,
        max_body_bytes=MAX_BODY,
    )
    server.start()
    return server


@pytest.fixture
def server(tls: Tls) -> Iterator[ProgressServer]:
    served = _server(lambda: tls.server)
    yield served
    served.stop()


def _raw(port: int, tls: Tls, request: bytes) -> bytes:
    """Send ``request`` as it is over TLS; return everything answered."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as plain,
        tls.client().wrap_socket(plain, server_hostname="127.0.0.1") as wrapped,
    ):
        wrapped.sendall(request)
        answer = b""
        while chunk := wrapped.recv(65536):
            answer += chunk
        return answer


def test_a_chunked_body_is_read(server: ProgressServer, tls: Tls) -> None:
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=tls.client())
    try:
        body = iter([b'{"trainerStatus":', b' {"progressPercentage": 7}}'])
        connection.request(
            "POST", STATUS_PATH, body=body, headers={"Content-Type": "application/json"}
        )
        assert connection.getresponse().status == 202
    finally:
        connection.close()


def test_a_chunked_body_over_the_limit_is_413_once_past_it(
    server: ProgressServer, tls: Tls
) -> None:
    connection = http.client.HTTPSConnection("127.0.0.1", server.port, context=tls.client())
    try:
        chunks = iter([b" " * 1000] * 5)
        connection.request(
            "POST", STATUS_PATH, body=chunks, headers={"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        assert response.status == 413
        assert b"the body is larger than 4096 bytes" in response.read()
    finally:
        connection.close()


def test_a_malformed_chunk_is_400(server: ProgressServer, tls: Tls) -> None:
    request = (
        f"POST {STATUS_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n"
    ).encode()
    answer = _raw(server.port, tls, request)
    assert answer.startswith(b"HTTP/1.0 400") and b"malformed chunk size" in answer


def test_a_declared_length_over_the_limit_is_413_without_the_body_sent(
    server: ProgressServer, tls: Tls
) -> None:
    request = (
        f"POST {STATUS_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000000000\r\n\r\n"
    ).encode()
    answer = _raw(server.port, tls, request)
    assert answer.startswith(b"HTTP/1.0 413")
    assert b"the body is larger than 4096 bytes (Content-Length: 1000000000)" in answer


def test_a_client_sending_an_oversized_body_still_reads_its_413(
    server: ProgressServer, tls: Tls
) -> None:
    answer = post(server.port, tls, b" " * 200_000)
    assert answer.status == 413


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_every_other_method_is_405(server: ProgressServer, tls: Tls, method: str) -> None:
    answer = post(server.port, tls, report(), method=method)
    assert (answer.status, answer.headers["allow"]) == (405, "POST")


def test_head_is_405_without_a_body(server: ProgressServer, tls: Tls) -> None:
    answer = _raw(server.port, tls, f"HEAD {STATUS_PATH} HTTP/1.0\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.0 405") and answer.endswith(b"\r\n\r\n")


def test_the_server_names_no_python_version(server: ProgressServer, tls: Tls) -> None:
    assert post(server.port, tls, report()).headers["server"] == "mxjob-progress"


def test_plain_http_gets_no_answer(server: ProgressServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            connection.request("POST", STATUS_PATH, body=b"{}")
            connection.getresponse()
    finally:
        connection.close()


class _Broken(ProgressService):
    def handle(self, target: Target, headers: Headers, body: bytes) -> Reply:
        raise RuntimeError("boom")


def test_a_failing_service_is_500_and_the_server_keeps_serving(tls: Tls) -> None:
    served = _server(lambda: tls.server, _service(_Broken))
    try:
        answer = post(served.port, tls, report())
        assert (answer.status, answer.message) == (500, "internal error: RuntimeError")
        assert post(served.port, tls, report()).status == 500
    finally:
        served.stop()


def _served_serial(port: int, client: ssl.SSLContext) -> int:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as plain,
        client.wrap_socket(plain, server_hostname="127.0.0.1") as wrapped,
    ):
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    authority = CertificateAuthority.create()
    first = write_pair(tmp_path, authority.issue_serving(hosts=("127.0.0.1",)))
    reloader = CertificateReloader(files=CertificateFiles.in_directory(tmp_path), check_interval=0)
    served = _server(reloader.current)
    client = ssl.create_default_context(cadata=authority.cert_pem.decode())
    try:
        assert _served_serial(served.port, client) == first
        renewed = write_pair(tmp_path, authority.issue_serving(hosts=("127.0.0.1",)))
        assert _served_serial(served.port, client) == renewed != first
    finally:
        served.stop()
