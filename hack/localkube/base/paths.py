"""Where things are: the project's checkout and the third-party release sources beside it."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]
"""The checkout (``hack/localkube/base/`` is three levels below it)."""


def third_party_dir() -> Path:
    """Where the third-party release sources are: ``THIRD_PARTY_DIR``, else
    ``../shared/third_party`` beside the project (where ``hack/build-third-party.sh`` looks)."""
    return Path(os.environ.get("THIRD_PARTY_DIR") or PROJECT_ROOT.parent / "shared" / "third_party")
