"""No function is longer than a screen, so each one reads at a glance; no module of the tooling or
of the controller is longer than a sitting.

Long decisions are split into named steps instead (``compute_status`` in
controller/job/status/__init__.py is a sequence of small phases over one state object, each phase
a module of its package). This holds every function and method of
the product packages, the development tooling (``hack/``) and the benchmarks (``bench/``) to
:data:`LIMIT` lines, counted from ``def`` to its last line (docstring and comments included; a
nested function counts within its parent too), and every module of :data:`MODULE_CHECKED` to
:data:`MODULE_LIMIT` lines: the tooling is read by every newcomer before the product, and the
controller is a house of rooms (docs/development/code-map.md) whose modules each say one thing.
Run as a script, it prints the longest functions.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("shared", "webhook", "controller", "certs")
CHECKED = (*PRODUCT, "hack", "bench")
LIMIT = 80
MODULE_LIMIT = 400
MODULE_CHECKED = ("hack", "controller")


@dataclass(frozen=True, order=True)
class Length:
    lines: int
    where: str


def function_lengths(root: Path = ROOT, packages: tuple[str, ...] = CHECKED) -> list[Length]:
    """Every function of ``packages``, longest first."""
    found: list[Length] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    end = node.end_lineno or node.lineno
                    where = f"{path.relative_to(root)}:{node.lineno} {node.name}"
                    found.append(Length(end - node.lineno + 1, where))
    return sorted(found, reverse=True)


def test_the_measure_counts_a_function_from_def_to_its_last_line(tmp_path: Path) -> None:
    package = tmp_path / "shared"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(5))
    (package / "m.py").write_text(f'def f() -> None:\n    """Doc."""\n{body}\n\n\ndef g(): ...\n')
    assert function_lengths(tmp_path) == [
        Length(7, "shared/m.py:1 f"),
        Length(1, "shared/m.py:10 g"),
    ]


def module_lengths(root: Path = ROOT, packages: tuple[str, ...] = MODULE_CHECKED) -> list[Length]:
    """Every Python module of ``packages``, longest first."""
    found = [
        Length(len(path.read_text(encoding="utf-8").splitlines()), str(path.relative_to(root)))
        for package in packages
        for path in (root / package).rglob("*.py")
    ]
    return sorted(found, reverse=True)


def test_the_module_measure_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "hack" / "room").mkdir(parents=True)
    (tmp_path / "hack" / "room" / "m.py").write_text("a = 1\nb = 2\n")
    (tmp_path / "hack" / "n.py").write_text("")
    (tmp_path / "controller" / "runtime").mkdir(parents=True)
    (tmp_path / "controller" / "runtime" / "c.py").write_text("a = 1\n")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "s.py").write_text("a = 1\nb = 2\nc = 3\n")  # not measured
    assert module_lengths(tmp_path) == [
        Length(2, "hack/room/m.py"),
        Length(1, "controller/runtime/c.py"),
        Length(0, "hack/n.py"),
    ]


def test_no_function_is_longer_than_the_limit() -> None:
    lengths = function_lengths()
    for package in CHECKED:  # every package was found
        assert any(x.where.startswith(f"{package}/") for x in lengths), package
    too_long = [f"{x.lines} lines: {x.where}" for x in lengths if x.lines > LIMIT]
    assert not too_long, f"longer than {LIMIT} lines:\n" + "\n".join(too_long)


def test_no_tooling_or_controller_module_is_longer_than_the_module_limit() -> None:
    lengths = module_lengths()
    for package in MODULE_CHECKED:  # every package was found
        assert any(x.where.startswith(f"{package}/") for x in lengths), package
    assert len(lengths) > 30
    too_long = [f"{x.lines} lines: {x.where}" for x in lengths if x.lines > MODULE_LIMIT]
    assert not too_long, f"longer than {MODULE_LIMIT} lines:\n" + "\n".join(too_long)


if __name__ == "__main__":
    for length in function_lengths()[: int(sys.argv[1]) if len(sys.argv) > 1 else 10]:
        print(length.lines, length.where)
