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


def go_build_arguments(tmp_path: Path, options: str) -> subprocess.CompletedProcess[str]:
    """Runs ``go_build <options> <dir> <output> ./cmd/x`` with a ``go`` on PATH that prints the
    arguments it was called with, one a line, on stderr (where go_build sends go's output)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    fake_go = bin_dir / "go"
    fake_go.write_text('#!/bin/bash\nprintf "%s\\n" "$@" >&2\n')
    fake_go.chmod(0o755)
    script = tmp_path / "call.sh"
    script.write_text(
        f"""set -euo pipefail
source {BUILD_LIB}
PATH={bin_dir}:$PATH
go_build {options} {tmp_path} {tmp_path}/out ./cmd/x
"""
    )
    return subprocess.run(
        ["bash", str(script)], check=False, capture_output=True, text=True, timeout=30
    )


def test_go_build_leaves_out_inlining_and_dwarf_unless_asked_to_inline(tmp_path: Path) -> None:
    expected_flags = {"default": "all=-dwarf=false -l", "inlined": "all=-dwarf=false"}
    for name, gcflags in expected_flags.items():
        options = "--ldflags '-X a.b=c'" if name == "default" else "--inlined --ldflags '-X a.b=c'"
        done = go_build_arguments(tmp_path / name, options)
        assert done.returncode == 0, done.stderr
        lines = done.stderr.splitlines()
        assert f"-gcflags={gcflags}" in lines
        assert lines[lines.index("-ldflags") + 1] == "-s -w -X a.b=c"
        assert lines[-3:] == ["-o", str(tmp_path / name / "out"), "./cmd/x"]


def test_go_build_refuses_an_option_it_does_not_know(tmp_path: Path) -> None:
    done = go_build_arguments(tmp_path, "--optimise")
    assert done.returncode == 1
    assert "go_build: unknown option --optimise" in done.stderr
