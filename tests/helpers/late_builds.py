"""The components make test builds in the background (``LATE_BUILDS`` in the Makefile), in the
order it builds them, and where a test that needs some of them goes in the run.

A module marked ``late_builds("<make target>", ...)`` runs after the unmarked ones, and after
every marked module whose last build comes earlier in ``LATE_BUILDS``: each module is reached about
when its own builds end, instead of waiting on a build's lock while the tests of an earlier build
could have run (``hack/run-tests.sh``)."""

from __future__ import annotations

import re

import pytest

from localkube.base.paths import PROJECT_ROOT


def late_builds() -> list[str]:
    """``LATE_BUILDS`` of the Makefile, its make targets in build order."""
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    found = re.search(r"^LATE_BUILDS := ((?:.*\\\n)*.*)$", makefile, re.M)
    if found is None:
        raise pytest.UsageError("the Makefile sets no LATE_BUILDS")
    return found.group(1).replace("\\\n", " ").split()


def run_position(item: pytest.Item, order: list[str]) -> int:
    """-1 for a test that needs no background build; otherwise the place in ``order`` of the
    last build its ``late_builds`` marker names. A marker naming no build, or one not in
    ``order``, is a usage error: the test would run before what it waits for."""
    marker = item.get_closest_marker("late_builds")
    if marker is None:
        return -1
    unknown = [target for target in marker.args if target not in order]
    if not marker.args or unknown:
        raise pytest.UsageError(
            f"{item.nodeid}: late_builds names {list(marker.args)}; each must be one of the "
            f"Makefile's LATE_BUILDS: {' '.join(order)}"
        )
    return max(order.index(target) for target in marker.args)
