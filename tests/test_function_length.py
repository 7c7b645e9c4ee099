"""No product function is longer than a screen, so each one reads at a glance.

Long decisions are split into named steps instead (``compute_status`` in controller/status.py
is a sequence of small phases over one state object). This holds every function and method of
the product packages to :data:`LIMIT` lines, counted from ``def`` to its last line (docstring and
comments included; a nested function counts within its parent too). Run as a script, it prints
the longest ones.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("shared", "webhook", "controller", "certs")
LIMIT = 80


@dataclass(frozen=True, order=True)
class Length:
    lines: int
    where: str


def function_lengths(root: Path = ROOT) -> list[Length]:
    """Every function of the product, longest first."""
    found: list[Length] = []
    for package in PRODUCT:
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


def test_no_product_function_is_longer_than_the_limit() -> None:
    lengths = function_lengths()
    assert len(lengths) > 100  # the product was found
    too_long = [f"{x.lines} lines: {x.where}" for x in lengths if x.lines > LIMIT]
    assert not too_long, f"longer than {LIMIT} lines:\n" + "\n".join(too_long)


if __name__ == "__main__":
    for length in function_lengths()[: int(sys.argv[1]) if len(sys.argv) > 1 else 10]:
        print(length.lines, length.where)
