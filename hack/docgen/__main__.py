"""``python -m docgen [--check]``: write docs/reference/ (what ``make generate`` runs), or fail
when a page is not what the sources make now."""

from __future__ import annotations

import sys

import generated
from docgen.crd import ROOT
from docgen.pages import render_bytes


def main(argv: list[str] | None = None) -> int:
    return generated.main(
        argv, prog="python -m docgen", description=__doc__, render=render_bytes, root=ROOT
    )


if __name__ == "__main__":
    sys.exit(main())
