"""Fixtures of the progress reporter's tests: a CA, a real HTTPS status endpoint, and reporters
tuned to fail and recover in milliseconds rather than seconds.

Every reporter a test makes through :func:`make_reporter` is closed after the test, so no
sender thread outlives it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from mxjob_progress import Endpoint, ProgressReporter

from tests.sdk.recording import FAST, MakeReporter
from tests.sdk.status_server import Pki, StatusServer, issue_serving_pair, make_authority


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("sdk-pki")
    trusted = make_authority(directory, "trusted-ca")
    other = make_authority(directory, "other-ca")
    cert_file, key_file = issue_serving_pair(trusted, directory)
    return Pki(trusted, other, cert_file, key_file)


@pytest.fixture
def status_server(pki: Pki) -> Iterator[StatusServer]:
    server = StatusServer(pki.cert_file, pki.key_file)
    yield server
    server.stop()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("token-1\n")
    return path


@pytest.fixture
def ca_file(tmp_path: Path, pki: Pki) -> Path:
    """The trusted CA, in a file of the test's own (a test may rewrite it)."""
    path = tmp_path / "ca.crt"
    shutil.copyfile(pki.trusted.ca_file, path)
    return path


@pytest.fixture
def endpoint(status_server: StatusServer, ca_file: Path, token_file: Path) -> Endpoint:
    return Endpoint(url=status_server.url, ca_cert=str(ca_file), token_file=str(token_file))


@pytest.fixture
def make_reporter() -> Iterator[MakeReporter]:
    made: list[ProgressReporter] = []

    def make(
        endpoint: Endpoint | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        **settings: float,
    ) -> ProgressReporter:
        reporter = ProgressReporter(endpoint, settings=replace(FAST, **settings), clock=clock)
        made.append(reporter)
        return reporter

    yield make
    for reporter in made:  # a sender stuck on a dead endpoint ends by itself (a daemon)
        reporter.close(timeout=0.1)
