"""hack/lib/build.sh's stamp and lock: a second run of a build that is running waits for it and
reuses its result, instead of building beside it (make test's late builds, hack/run-tests.sh)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

BUILD_LIB = Path(__file__).resolve().parents[2] / "hack" / "lib" / "build.sh"


def fake_build(tmp_path: Path, name: str) -> Path:
    """A build script in the form of hack/build-*.sh: it builds (1 s) into tmp_path/out
    unless the stamp says it is built, and records every build it made."""
    script = tmp_path / f"{name}.sh"
    script.write_text(
        f"""set -euo pipefail
source {BUILD_LIB}
OUT={tmp_path}/out
exit_if_built "$OUT" "$OUT"
echo "{name}" >> {tmp_path}/built-by
sleep 1
mkdir -p "$OUT" && touch "$OUT/.complete"
echo "$OUT"
"""
    )
    return script


def run(script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_a_second_run_waits_for_the_running_build_and_reuses_it(tmp_path: Path) -> None:
    first = run(fake_build(tmp_path, "first"))
    time.sleep(0.3)  # the first holds the lock and is building
    second = run(fake_build(tmp_path, "second"))
    out_first, _ = first.communicate(timeout=30)
    out_second, err_second = second.communicate(timeout=30)
    assert first.returncode == second.returncode == 0, err_second
    assert (tmp_path / "built-by").read_text().split() == ["first"]
    assert out_first.strip() == out_second.strip() == str(tmp_path / "out")
    assert "waiting for the build" in err_second


def test_a_built_result_is_printed_without_taking_the_lock(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".complete").touch()
    done = run(fake_build(tmp_path, "again"))
    out, err = done.communicate(timeout=30)
    assert (done.returncode, out.strip()) == (0, str(tmp_path / "out")), err
    assert not (tmp_path / "built-by").exists()
    assert not (tmp_path / "out.lock").exists()
