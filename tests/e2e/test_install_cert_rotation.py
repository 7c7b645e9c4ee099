"""Rotating the webhook's certificate files while the API server sends reviews loses no review.

In a cluster the files change under the webhook when cert-manager renews the Secret or
``python -m certs`` is re-run with the same CA: the kubelet swaps the mounted files, and the webhook
must serve the new pair to new connections without a restart while every review keeps
succeeding (``failurePolicy: Fail`` turns a failed review into a refused MXJob). Here the files
of the session's webhook are replaced, key first, as a half-finished copy would leave them, while
threads create MXJobs through the API server (``dryRun=All``: both webhooks are called, nothing
is stored).
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
from pathlib import Path

from cryptography import x509

from localkube.base.api import Api
from localkube.plane.operator import RunningOperator
from tests.e2e.controller_fixtures import mxjob
from tests.helpers.waiting import wait_for

CLIENTS = 4


def _served_serial(port: int, ca_file: Path) -> int:
    """The serial number of the certificate a new TLS connection to the webhook is shown."""
    context = ssl.create_default_context(cafile=str(ca_file))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def _log_since(path: Path, offset: int) -> str:
    """What the process logged to ``path`` after its first ``offset`` bytes."""
    with path.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")


def _replace(path: Path, data: bytes) -> None:
    """Atomically, as the kubelet's symlink swap: a reader sees the old file or the new one."""
    tmp = path.with_name(f".{path.name}.new")
    tmp.write_bytes(data)
    tmp.chmod(0o600)
    os.replace(tmp, path)


def test_rotated_certificate_is_served_while_every_review_succeeds(
    api: Api, namespace: str, local_operator: RunningOperator
) -> None:
    local = local_operator.local
    assert local.ca is not None
    ca_file = local.dir / "ca.crt"
    port = local_operator.webhook_port
    webhook_log = local.logs / "webhook.log"
    before = _served_serial(port, ca_file)

    stop = threading.Event()
    results: list[tuple[float, str]] = []  # (when, "ok" or the error)
    lock = threading.Lock()

    def client(number: int) -> None:
        sent = 0
        while not stop.is_set():
            job = mxjob(f"rot-{number}-{sent}", workers=1, servers=0)
            try:
                created = api.request(
                    "POST",
                    f"/apis/kubeflow.org/v1/namespaces/{namespace}/mxjobs",
                    body=job,
                    query=[("dryRun", "All")],
                )
                # The mutating webhook answered: its defaults are in the returned object.
                assert created["spec"]["runPolicy"]["backoffLimit"] == 6
                outcome = "ok"
            except Exception as error:
                outcome = repr(error)
            with lock:
                results.append((time.monotonic(), outcome))
            sent += 1

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        wait_for("reviews before the rotation", lambda: len(results), lambda n: n >= 20, timeout=30)
        new = local.ca.issue_serving(hosts=("127.0.0.1", "localhost"))
        rotated_at = time.monotonic()
        logged = webhook_log.stat().st_size
        _replace(local.cert_dir / "tls.key", new.key_pem)
        # A moment with a key that does not match the certificate on disk, until the webhook
        # has tried that pair (it looks at the files on a new handshake, at most once a
        # second), refused it and said so, while still presenting the old certificate.
        during = wait_for(
            "the webhook to refuse the half-rotated pair",
            lambda: (_served_serial(port, ca_file), _log_since(webhook_log, logged)),
            lambda seen: "cannot load certificate pair" in seen[1],
            timeout=10,
            interval=0.2,
        )
        assert during[0] == before
        _replace(local.cert_dir / "tls.crt", new.cert_pem)
        serial = new.certificate.serial_number
        wait_for(
            "the new certificate served",
            lambda: _served_serial(port, ca_file),
            lambda served: served == serial,
            timeout=10,
            interval=0.2,
        )
        served_at = time.monotonic()
        wait_for(
            "reviews after the rotation",
            lambda: sum(1 for when, _ in results if when > served_at),
            lambda n: n >= 20,
            timeout=30,
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)

    assert before != serial
    failures = [outcome for _, outcome in results if outcome != "ok"]
    assert failures == []
    assert sum(1 for when, _ in results if rotated_at <= when <= served_at) >= 1
