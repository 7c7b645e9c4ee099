"""localkube.thirdparty.base: where a component's build comes from, and waiting for its programs."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from localkube.base import programs
from localkube.base.builds import pinned_version
from localkube.thirdparty import cert_manager, kueue, volcano
from localkube.thirdparty.base import ReleaseSource, start_as_user, wait_answering


class SourceError(RuntimeError):
    pass


SOURCE = ReleaseSource("kueue", "Kueue", "KUEUE_VERSION", SourceError)


def test_the_archive_is_named_as_the_build_script_looks_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THIRD_PARTY_DIR", str(tmp_path))
    version = pinned_version("KUEUE_VERSION")
    assert SOURCE.archive() == tmp_path / f"kueue-{version}-src.tar.gz"


def test_a_missing_archive_is_named_and_building_raises_the_components_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THIRD_PARTY_DIR", str(tmp_path))
    problem = SOURCE.missing()
    assert problem == f"Kueue's release source {SOURCE.archive()} is missing (THIRD_PARTY_DIR)"
    with pytest.raises(SourceError, match="is missing"):
        SOURCE.build()
    SOURCE.archive().write_bytes(b"")
    assert SOURCE.missing() is None


@pytest.mark.parametrize(
    ("source", "name", "error"),
    [
        (cert_manager.SOURCE, "cert-manager", cert_manager.CertManagerError),
        (kueue.SOURCE, "kueue", kueue.KueueError),
        (volcano.SOURCE, "volcano", volcano.VolcanoError),
    ],
)
def test_each_component_names_its_archive_and_error(
    source: ReleaseSource, name: str, error: type[RuntimeError]
) -> None:
    assert source.name == name
    assert source.error is error
    assert source.archive().name.startswith(f"{name}-v")


@pytest.fixture
def answering() -> Iterator[str]:
    """A URL that answers 200."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/healthz"
    server.shutdown()


def _sleeper(tmp_path: Path, code: str) -> programs.Running:
    kubeconfig = tmp_path / "user.kubeconfig"
    argv = [sys.executable, "-c", code]
    return start_as_user("sleeper", argv, log=tmp_path / "sleeper.log", kubeconfig=kubeconfig)


def test_a_program_runs_with_its_kubeconfig_and_is_awaited_until_its_url_answers(
    tmp_path: Path, answering: str
) -> None:
    code = "import os, time; print(os.environ['KUBECONFIG'], flush=True); time.sleep(30)"
    running = _sleeper(tmp_path, code)
    try:
        wait_answering([running], [answering], what="sleeper", error=SourceError, timeout=10)
        assert running.exit_code() is None
        log = tmp_path / "sleeper.log"
        programs.wait_ready(running, lambda: bool(log.read_text()), what="print", timeout=10)
    finally:
        running.stop()
    assert log.read_text().strip() == str(tmp_path / "user.kubeconfig")


def test_a_program_that_exits_fails_the_wait_with_its_log_in_the_components_error(
    tmp_path: Path,
) -> None:
    running = _sleeper(tmp_path, "print('no certificate'); raise SystemExit(3)")
    with pytest.raises(SourceError, match=r"(?s)sleeper exited \(code 3\).*no certificate"):
        wait_answering(
            [running], ["http://127.0.0.1:1/healthz"], what="x", error=SourceError, timeout=10
        )
