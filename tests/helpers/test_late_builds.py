"""tests.helpers.late_builds: the Makefile's background builds, and where a test that needs some
of them runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import pytest

from tests.helpers.late_builds import late_builds, run_position

ORDER = ["build-kwok", "build-helm", "third-party-katib", "build-registry"]


@dataclass
class Marked:
    """What ``run_position`` reads of a pytest item: its id and its closest marker."""

    nodeid: str
    markers: dict[str, pytest.Mark] = field(default_factory=dict)

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return self.markers.get(name)


def item(*targets: str, marked: bool = True) -> pytest.Item:
    markers = {"late_builds": pytest.mark.late_builds(*targets).mark} if marked else {}
    return cast(pytest.Item, Marked("tests/test_x.py::test_y", markers))


def test_the_makefiles_late_builds_are_read_in_build_order() -> None:
    order = late_builds()
    assert order[0] == "build-helm"
    assert order.index("third-party-kueue-current") < order.index("late-images-kueue-current")
    assert len(order) == len(set(order))


def test_an_unmarked_test_runs_before_every_marked_one() -> None:
    assert run_position(item(marked=False), ORDER) == -1
    assert run_position(item("build-kwok"), ORDER) == 0


def test_a_test_runs_at_the_place_of_the_last_build_it_names() -> None:
    assert run_position(item("build-registry", "build-kwok"), ORDER) == 3
    assert run_position(item("build-helm", "third-party-katib"), ORDER) == 2


@pytest.mark.parametrize("targets", [(), ("build-kwok", "build-volcano")])
def test_a_marker_naming_no_build_or_an_unknown_one_is_a_usage_error(
    targets: tuple[str, ...],
) -> None:
    with pytest.raises(pytest.UsageError, match=r"each must be one of the Makefile's LATE_BUILDS"):
        run_position(item(*targets), ORDER)
