"""webhook/tls.py: one certificate reloader per file pair and process, with no fallback.

What a reloader serves and when it reloads is tested with certs/reloader.py
(tests/certs/test_reloader.py); gunicorn's per-connection hook and /readyz are tested through
the server (tests/webhook/test_serve.py, tests/webhook/test_app.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from certs import CertificateAuthority
from certs.reloader import CertificateUnavailableError
from tests.certs.tls_samples import handshake, write_pair
from webhook.tls import reloader_for


def test_one_reloader_per_file_pair_and_process(tmp_path: Path) -> None:
    first = reloader_for(
        cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key", check_interval=1.0
    )
    again = reloader_for(
        cert_file=tmp_path / "x" / ".." / "tls.crt",
        key_file=tmp_path / "tls.key",
        check_interval=1.0,
    )
    other = reloader_for(
        cert_file=tmp_path / "a.crt", key_file=tmp_path / "tls.key", check_interval=1.0
    )
    assert first is again
    assert other is not first


def test_the_webhook_presents_its_pair_or_nothing_never_a_self_signed_one(tmp_path: Path) -> None:
    reloader = reloader_for(
        cert_file=tmp_path / "tls.crt", key_file=tmp_path / "tls.key", check_interval=60.0
    )
    assert not reloader.ready()
    with pytest.raises(CertificateUnavailableError):
        reloader.server_context()
    pair = CertificateAuthority.create().issue_serving(hosts=("localhost",))
    serial = write_pair(tmp_path, pair)
    assert handshake(reloader.server_context()).serial == serial
