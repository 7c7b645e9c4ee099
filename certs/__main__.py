"""``python -m certs``: see :mod:`certs.cli`."""

from __future__ import annotations

from certs.cli import main

raise SystemExit(main())
