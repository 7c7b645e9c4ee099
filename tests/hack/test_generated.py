"""hack/generated.py: every generator of ``make generate`` finds, names and writes its stale files
one way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import generated


def test_a_missing_or_different_file_is_stale_and_an_equal_one_is_not(tmp_path: Path) -> None:
    equal, different, missing = (tmp_path / name for name in ("equal", "different", "missing"))
    equal.write_bytes(b"same")
    different.write_bytes(b"old")
    rendered = {equal: b"same", different: b"new", missing: b"made"}
    assert generated.stale(rendered) == [different, missing]


def test_write_touches_only_the_stale_files(tmp_path: Path) -> None:
    equal, new = tmp_path / "equal", tmp_path / "sub" / "new"
    equal.write_bytes(b"same")
    os.utime(equal, (1, 1))
    assert generated.write({equal: b"same", new: b"made"}) == [new]
    assert new.read_bytes() == b"made"
    assert equal.stat().st_mtime == 1, "an unchanged file keeps its mtime"


def test_check_names_each_stale_file_and_fails_until_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "docs" / "page.md"
    run = {"prog": "gen", "description": None, "render": lambda: {page: b"x"}, "root": tmp_path}
    assert generated.main(["--check"], **run) == 1  # type: ignore[arg-type]
    assert "docs/page.md is stale: run make generate" in capsys.readouterr().err
    assert generated.main([], **run) == 0  # type: ignore[arg-type]
    assert "wrote docs/page.md" in capsys.readouterr().out
    assert generated.main(["--check"], **run) == 0  # type: ignore[arg-type]
