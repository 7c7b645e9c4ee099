"""The files ``make generate`` writes, handled one way for every generator (docgen writes
docs/reference/, chartsync the chart's copies of manifests/).

Why one module: a generated file is stale when it differs from what its sources make now, and
each generator must say so the same way (``--check`` names every stale file and fails, which is
what the staleness tests in tests/hack/ rely on) and write the same way (only the files that
changed, so an unchanged file keeps its mtime and ``make`` sees nothing new)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

Rendered = Mapping[Path, bytes]
"""Each generated file's path → the bytes its sources make now."""


def stale(rendered: Rendered) -> list[Path]:
    """The files that differ from what their sources make now, or are missing."""
    return [
        path for path, data in rendered.items() if not path.is_file() or path.read_bytes() != data
    ]


def write(rendered: Rendered) -> list[Path]:
    """Write the files that changed; the ones written."""
    changed = stale(rendered)
    for path in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rendered[path])
    return changed


def main(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str | None,
    render: Callable[[], Rendered],
    root: Path,
) -> int:
    """``python -m <prog> [--check]``: write the files ``render`` makes, or with ``--check`` name
    each stale one (relative to ``root``) and exit 1."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--check", action="store_true", help="fail when a file is stale")
    args = parser.parse_args(argv)
    rendered = render()
    if args.check:
        old = stale(rendered)
        for path in old:
            print(f"{path.relative_to(root)} is stale: run make generate", file=sys.stderr)
        return 1 if old else 0
    for path in write(rendered):
        print(f"wrote {path.relative_to(root)}")
    return 0
