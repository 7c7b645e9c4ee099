"""``mxjob-webhook`` as a real process: gunicorn, TLS, keep-alive, certificate rotation, SIGTERM."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from gunicorn.workers.gthread import ThreadWorker

from certs import CertificateAuthority, KeyPair
from localkube.base.ports import free_port
from tests.helpers.mxjobs import mxjob
from tests.helpers.waiting import wait_for
from tests.webhook.reviews_samples import admission_review
from webhook.app import MUTATE_PATH, VALIDATE_PATH
from webhook.serve import gunicorn_options
from webhook.settings import WebhookSettings

WEBHOOK_SCRIPT = Path(sys.executable).parent / "mxjob-webhook"
MARKER = "secret-argument-never-logged"


def test_gunicorn_runs_gthread_workers_over_tls(tmp_path: Path) -> None:
    options = gunicorn_options(
        WebhookSettings(cert_dir=tmp_path, threads=6, keepalive=120, max_connection_age=7)
    )
    assert issubclass(options["worker_class"], ThreadWorker)
    assert options["worker_class"].max_connection_age == 7
    assert options["threads"] == 6
    assert options["keepalive"] == 120
    assert options["certfile"] == str(tmp_path / "tls.crt")
    assert options["keyfile"] == str(tmp_path / "tls.key")
    assert callable(options["ssl_context"])
    assert options["accesslog"] is None
    assert options["control_socket_disable"] is True


def test_serving_without_a_certificate_directory_is_refused() -> None:
    with pytest.raises(ValueError, match="TLS only"):
        gunicorn_options(WebhookSettings())


# --- the real process ---------------------------------------------------------------------------


def _write_pair(directory: Path, pair: KeyPair, *, gap: float = 0.0) -> int:
    # Each file is replaced atomically, the pair is not: for ``gap`` seconds between the two
    # renames the certificate and key do not match, as during a real rotation.
    for name, data in (("tls.crt", pair.cert_pem), ("tls.key", pair.key_pem)):
        temporary = directory / f".{name}.tmp"
        temporary.write_bytes(data)
        os.replace(temporary, directory / name)
        if name == "tls.crt":
            time.sleep(gap)
    return pair.certificate.serial_number


@dataclass
class Webhook:
    """A running ``mxjob-webhook`` and what a client needs to talk to it."""

    process: subprocess.Popen[bytes]
    port: int
    ca: CertificateAuthority
    cert_dir: Path
    log_path: Path
    started_serial: int

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.ca.cert_pem.decode())

    def connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.client_context(), timeout=10
        )

    def logs(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def rotate(self, *, gap: float) -> int:
        return _write_pair(self.cert_dir, self.ca.issue_serving(hosts=("127.0.0.1",)), gap=gap)

    def wait_for_log(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first log line ``predicate`` accepts, once the process has written one."""
        found = wait_for(
            "a log line",
            lambda: [line for line in self.logs() if predicate(line)],
            bool,
            timeout=10,
            interval=0.05,
        )
        return found[0]


def _start(tmp_path: Path, *extra: str) -> Webhook:
    assert WEBHOOK_SCRIPT.exists(), "the console script is installed with the project"
    ca = CertificateAuthority.create(common_name="webhook-serve-test-ca")
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    serial = _write_pair(cert_dir, ca.issue_serving(hosts=("127.0.0.1",)))
    port = free_port()
    log_path = tmp_path / "webhook.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                str(WEBHOOK_SCRIPT),
                "--bind",
                f"127.0.0.1:{port}",
                "--cert-dir",
                str(cert_dir),
                "--workers",
                "1",
                "--threads",
                "4",
                "--log-format",
                "json",
                "--cert-check-interval",
                "0.2",
                *extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if not k.startswith("MXJOB_WEBHOOK_")},
        )
    webhook = Webhook(process, port, ca, cert_dir, log_path, serial)

    def readiness() -> int:
        """``/readyz``'s status (a refused connection is retried by ``wait_for``)."""
        if process.poll() is not None:
            raise AssertionError("mxjob-webhook exited early")
        connection = webhook.connection()
        try:
            connection.request("GET", "/readyz")
            return connection.getresponse().status
        finally:
            connection.close()

    try:
        wait_for("mxjob-webhook to be ready", readiness, lambda status: status == 200, timeout=30)
    except AssertionError as error:
        process.kill()
        raise AssertionError(f"{error}:\n{log_path.read_text()}") from None
    return webhook


def _stop(webhook: Webhook) -> None:
    if webhook.process.poll() is None:
        webhook.process.terminate()
        try:
            webhook.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            webhook.process.kill()
            webhook.process.wait()


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    """One server for the tests that do not change its certificate or stop it."""
    running = _start(tmp_path_factory.mktemp("webhook"))
    yield running
    _stop(running)


@pytest.fixture
def start_webhook(tmp_path: Path) -> Iterator[Callable[..., Webhook]]:
    """A server of the test's own, for tests that rotate its certificate or stop it."""
    started: list[Webhook] = []

    def start(*extra: str) -> Webhook:
        running = _start(tmp_path, *extra)
        started.append(running)
        return running

    yield start
    for running in started:
        _stop(running)


def _job() -> dict[str, Any]:
    """A job whose containers carry ``MARKER``, which the webhook's log must never show."""
    return mxjob(
        "mxnet-job",
        namespace="default",
        replicas={"Scheduler": 1, "Worker": 2},
        image="mxjob/mxnet:gpu",
        args=[MARKER],
    )


def _review(
    connection: http.client.HTTPConnection, *, path: str = MUTATE_PATH, uid: str
) -> tuple[int, dict[str, Any], http.client.HTTPResponse]:
    body = json.dumps(admission_review(_job(), uid=uid))
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    document = json.loads(response.read())
    return response.status, document, response


def test_reviews_share_one_kept_alive_tls_connection(webhook: Webhook) -> None:
    connection = webhook.connection()
    connection.connect()
    sock = connection.sock
    assert isinstance(sock, ssl.SSLSocket)
    assert sock.version() in ("TLSv1.2", "TLSv1.3")
    local = sock.getsockname()
    for index in range(5):
        status, document, response = _review(connection, uid=f"keepalive-{index}")
        assert status == 200
        assert document["response"]["uid"] == f"keepalive-{index}"
        assert document["response"]["allowed"] is True
        assert document["response"]["patchType"] == "JSONPatch"
        assert (response.getheader("Connection") or "").lower() != "close"
        # http.client reconnects silently if the server closed: the socket must be the same.
        assert connection.sock is sock
        assert sock.getsockname() == local
    connection.close()


def test_tls_below_1_2_is_refused(webhook: Webhook) -> None:
    context = webhook.client_context()
    # Allow this client to offer TLS 1.0/1.1 at all (OpenSSL's security level forbids them),
    # so that the failure is the server's protocol_version alert.
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    with pytest.warns(DeprecationWarning):
        context.minimum_version = ssl.TLSVersion.TLSv1
    with pytest.warns(DeprecationWarning):
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with (
        socket.create_connection(("127.0.0.1", webhook.port), timeout=10) as raw,
        pytest.raises(ssl.SSLError) as caught,
    ):
        context.wrap_socket(raw, server_hostname="127.0.0.1")
    assert caught.value.reason == "TLSV1_ALERT_PROTOCOL_VERSION"
    webhook.wait_for_log(lambda line: "unsupported protocol" in line["message"])
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    with (
        socket.create_connection(("127.0.0.1", webhook.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.version() == "TLSv1.2"


def test_plain_http_is_refused(webhook: Webhook) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", webhook.port, timeout=10)
    body = json.dumps(admission_review(_job(), uid="plain"))
    with pytest.raises((http.client.HTTPException, OSError)):
        connection.request("POST", VALIDATE_PATH, body=body)
        connection.getresponse().read()
    connection.close()
    # The server saw an HTTP request where a TLS handshake belonged, and answered nothing.
    webhook.wait_for_log(lambda line: "http request" in line["message"])


def test_health_readiness_and_metrics_over_tls(webhook: Webhook) -> None:
    connection = webhook.connection()
    _review(connection, path=VALIDATE_PATH, uid="metrics-1")
    for path in ("/healthz", "/readyz"):
        connection.request("GET", path)
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())) == (200, {"status": "ok"})
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    text = response.read().decode()
    assert response.status == 200
    assert 'endpoint="validate",operation="CREATE",result="allowed"' in text
    connection.close()


def test_debug_logs_are_json_lines_without_object_contents(
    start_webhook: Callable[..., Webhook],
) -> None:
    webhook = start_webhook("--log-level", "debug")
    connection = webhook.connection()
    _review(connection, path=VALIDATE_PATH, uid="logged-review")
    connection.close()
    line = webhook.wait_for_log(lambda line: line.get("uid") == "logged-review")
    assert line["level"] == "debug"
    assert (line["operation"], line["result"], line["name"]) == ("CREATE", "allowed", "mxnet-job")
    assert isinstance(line["duration_ms"], float)
    assert MARKER not in webhook.log_path.read_text()
    # One line per review from the app; gunicorn's access lines are off.
    assert not any(line["logger"] == "gunicorn.access" for line in webhook.logs())


def test_at_the_default_level_a_review_writes_no_log_line(webhook: Webhook) -> None:
    connection = webhook.connection()
    status, _, _ = _review(connection, path=VALIDATE_PATH, uid="quiet-review")
    connection.close()
    assert status == 200
    # Its answer is counted instead (``mxjob_webhook_reviews_total``); the log stays as it was:
    # no line of the app's, no access line of gunicorn's, no word of its control socket.
    assert not [line for line in webhook.logs() if line.get("uid") == "quiet-review"]
    assert not any(line["logger"] == "gunicorn.access" for line in webhook.logs())
    assert "Control socket" not in webhook.log_path.read_text()


@dataclass
class _Loop:
    """Reviews sent in a loop until stopped; every outcome recorded."""

    fresh_connections: bool
    webhook: Webhook
    stop: threading.Event
    answered: int = 0
    failures: list[str] = field(default_factory=list)
    serials: list[int] = field(default_factory=list)

    def run(self) -> None:
        connection = None if self.fresh_connections else self.webhook.connection()
        while not self.stop.is_set():
            current = connection or self.webhook.connection()
            uid = f"loop-{self.fresh_connections}-{self.answered}"
            try:
                status, document, _ = _review(current, path=VALIDATE_PATH, uid=uid)
                if status != 200 or document["response"] != {"uid": uid, "allowed": True}:
                    self.failures.append(f"{uid}: {status} {document}")
                self.answered += 1
                if self.fresh_connections:
                    assert isinstance(current.sock, ssl.SSLSocket)
                    der = current.sock.getpeercert(binary_form=True)
                    assert der is not None
                    self.serials.append(x509.load_der_x509_certificate(der).serial_number)
            except Exception as err:
                self.failures.append(f"{uid}: {type(err).__name__}: {err}")
            finally:
                if self.fresh_connections:
                    current.close()
        if connection is not None:
            connection.close()


def both_answer_more(kept: _Loop, fresh: _Loop, *, reviews: int, what: str) -> None:
    """Wait until each loop has had ``reviews`` more reviews answered."""
    targets = (kept.answered + reviews, fresh.answered + reviews)
    wait_for(
        what,
        lambda: (kept.answered, fresh.answered),
        lambda answered: answered[0] >= targets[0] and answered[1] >= targets[1],
        timeout=15,
        interval=0.05,
    )


def test_a_rotated_certificate_is_served_without_a_restart(
    start_webhook: Callable[..., Webhook],
) -> None:
    webhook = start_webhook()
    stop = threading.Event()
    kept = _Loop(fresh_connections=False, webhook=webhook, stop=stop)
    fresh = _Loop(fresh_connections=True, webhook=webhook, stop=stop)
    threads = [threading.Thread(target=loop.run) for loop in (kept, fresh)]
    for thread in threads:
        thread.start()
    try:
        both_answer_more(kept, fresh, reviews=5, what="reviews before the rotation")
        # The key follows the certificate a second later: five certificate checks (every
        # 0.2 s) find a pair that does not load, and the old certificate must keep serving.
        new_serial = webhook.rotate(gap=1.0)
        wait_for(
            "the new certificate presented",
            lambda: fresh.serials[-3:],
            lambda last: new_serial in last,
            timeout=15,
            interval=0.05,
        )
        # Keep reviewing on both connections after the switch.
        both_answer_more(kept, fresh, reviews=5, what="reviews after the switch")
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert kept.failures == [] and fresh.failures == []
    assert kept.answered > 10 and fresh.answered > 10
    assert fresh.serials[0] == webhook.started_serial
    assert fresh.serials[-1] == new_serial
    switch = fresh.serials.index(new_serial)
    assert set(fresh.serials[switch:]) == {new_serial}  # never back to the old one
    assert webhook.process.poll() is None  # the same process throughout
    webhook.wait_for_log(lambda line: "cannot load certificate pair" in line["message"])
    assert any(serial == webhook.started_serial for serial in fresh.serials[:switch])


def test_sigterm_lets_an_in_flight_review_finish(start_webhook: Callable[..., Webhook]) -> None:
    webhook = start_webhook("--graceful-timeout", "10")
    body = json.dumps(admission_review(_job(), uid="in-flight")).encode()
    connection = webhook.connection()
    # The TLS handshake is done by one of the worker's threads: once connect() returns, the
    # worker has taken the connection, and the half review sent next is in flight on it.
    connection.connect()
    connection.putrequest("POST", VALIDATE_PATH)
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(len(body)))
    connection.endheaders(body[: len(body) // 2])
    webhook.process.send_signal(signal.SIGTERM)
    # gunicorn's record that it took the signal: from there it stops, unless it waits.
    webhook.wait_for_log(lambda line: line["message"].startswith("Handling signal: term"))
    assert webhook.process.poll() is None  # waiting for the review, not gone
    connection.send(body[len(body) // 2 :])
    response = connection.getresponse()
    assert response.status == 200
    assert json.loads(response.read())["response"] == {"uid": "in-flight", "allowed": True}
    connection.close()
    assert webhook.process.wait(timeout=15) == 0


def test_a_connection_is_closed_after_the_first_response_past_its_max_age(
    start_webhook: Callable[..., Webhook],
) -> None:
    webhook = start_webhook("--max-connection-age", "1")
    connection = webhook.connection()
    opened = time.monotonic()
    connection.connect()
    # The server starts the connection's clock when it accepts it: before connect() returns.
    connected = time.monotonic()
    sock = connection.sock
    assert sock is not None
    # A second descriptor of the same TCP connection: it outlives http.client's close, so
    # reading it shows whether the server closed its end.
    raw = socket.socket(fileno=os.dup(sock.fileno()))
    raw.settimeout(5)
    kept = 0
    last_kept_sent = opened
    while True:
        sent = time.monotonic()
        status, document, response = _review(connection, uid=f"aging-{kept}")
        assert status == 200 and document["response"]["uid"] == f"aging-{kept}"
        if (response.getheader("Connection") or "").lower() == "close":
            break
        assert connection.sock is sock  # still the first connection
        kept += 1
        last_kept_sent = sent
        assert time.monotonic() - opened < 10, "the connection was never closed"
        time.sleep(0.1)
    # Not before the age: kept open for a second at least, over several responses.
    assert time.monotonic() - opened >= 1.0 and kept >= 1, kept
    # Not later than the first response past the age: a request sent 1 s or more after the
    # server accepted the connection (at the latest when connect() returned) must close it,
    # so every request it kept the connection open after was sent before that, however slowly
    # this machine answers.
    assert last_kept_sent < connected + 1.0, (last_kept_sent - connected, kept)
    while raw.recv(4096):  # the TLS close_notify, then the server's FIN
        pass
    raw.close()
    connection.close()


def test_no_review_is_lost_while_connections_are_closed_for_age(
    start_webhook: Callable[..., Webhook],
) -> None:
    webhook = start_webhook("--max-connection-age", "0.3")
    results: list[tuple[str, int, str]] = []
    connections: list[set[tuple[str, int]]] = [set(), set(), set()]
    errors: list[str] = []

    def client(index: int) -> None:
        connection = webhook.connection()  # http.client redials after "Connection: close"
        deadline = time.monotonic() + 2.5
        n = 0
        while time.monotonic() < deadline:
            uid = f"client-{index}-{n}"
            try:
                status, document, _ = _review(connection, path=VALIDATE_PATH, uid=uid)
            except Exception as err:
                errors.append(f"{uid}: {type(err).__name__}: {err}")
            else:
                results.append((uid, status, document["response"]["uid"]))
            if connection.sock is not None:
                connections[index].add(connection.sock.getsockname())
            n += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert all(status == 200 and uid == answered for uid, status, answered in results)
    assert len(results) > 30
    # Each client was made to redial several times in 2.5 s, and lost nothing doing so.
    assert all(len(local) >= 4 for local in connections), [len(c) for c in connections]


def test_idle_tls_connections_hold_no_thread(start_webhook: Callable[..., Webhook]) -> None:
    # Twice as many connections as threads, each handshaken and then silent, as an HTTP client's
    # pool may leave them: a thread each would leave none for anyone else.
    webhook = start_webhook("--threads", "2")
    context = webhook.client_context()
    idle = []
    for _ in range(4):
        raw = socket.create_connection(("127.0.0.1", webhook.port), timeout=10)
        # The server's threads do the handshake: two threads handshaking four connections is
        # the server's record that it took each one and gave its thread back.
        idle.append(context.wrap_socket(raw, server_hostname="127.0.0.1"))
    connection = webhook.connection()
    started = time.monotonic()
    status, document, _ = _review(connection, path=VALIDATE_PATH, uid="beside-idle")
    assert status == 200 and document["response"]["uid"] == "beside-idle"
    assert time.monotonic() - started < 5
    connection.close()
    # The silent connections were kept, not dropped: each still gets its review answered.
    body = json.dumps(admission_review(_job(), uid="late")).encode()
    for sock in idle:
        sock.sendall(
            f"POST {VALIDATE_PATH} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 200
        assert json.loads(response.read())["response"]["uid"] == "late"
        sock.close()
