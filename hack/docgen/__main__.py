"""``python -m docgen [--check]``: write docs/reference/ (what ``make generate`` runs), or fail
when a page is not what the sources make now."""

from __future__ import annotations

import argparse
import sys

from docgen.crd import ROOT
from docgen.pages import render_all, stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when a page is stale")
    args = parser.parse_args(argv)
    rendered = render_all()
    if args.check:
        old = stale(rendered)
        for path in old:
            print(f"{path.relative_to(ROOT)} is stale: run make generate", file=sys.stderr)
        return 1 if old else 0
    for path in write(rendered):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
