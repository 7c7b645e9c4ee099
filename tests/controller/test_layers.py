"""The controller reads as rooms stacked in layers: a module imports only from its own room or
from a room below it, and no import circle exists between its modules.

The rooms, lowest first, are :data:`LAYERS` (docs/development/code-map.md, "controller: the
house of rooms", describes each module): ``runtime`` (the API client, caches, queue, election,
metrics), ``progress`` (the endpoint a job's pods report their progress to), ``certificates``
(the webhook certificate keeper), ``job`` (one MXJob's reconcile), then ``integrations``
(Kueue, gang scheduling, disruption budgets, the jobs' CA ConfigMaps) and the two top modules,
``manager.py`` (wires it all) and ``main.py`` (the process). Lazy imports inside functions count:
they are imports all the same, and a circle through one breaks as soon as the function runs
first. The same checks hold hack/localkube (tests/localkube/test_layers.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.layers import House, doc_section, imports_of

PACKAGE = Path(__file__).resolve().parents[2] / "controller"
LAYERS = ("runtime", "progress", "certificates", "job", "integrations", "manager", "main")
"""The controller's rooms, lowest first: each may import from itself and from those before it."""

HOUSE = House.of(PACKAGE)


def test_every_module_is_in_a_room() -> None:
    assert HOUSE.rooms() == set(LAYERS), f"rooms not in LAYERS: {HOUSE.rooms() - set(LAYERS)}"


@pytest.mark.parametrize("module", sorted(HOUSE.modules))
def test_a_module_imports_only_from_its_room_or_below(module: str) -> None:
    upward = HOUSE.upward(module, LAYERS)
    assert not upward, f"{module} imports from higher rooms: {upward}"


def test_no_import_circle() -> None:
    circle = HOUSE.circle()
    assert circle is None, "import circle: " + " → ".join(circle or [])


def test_the_graph_sees_lazy_relative_and_module_imports(tmp_path: Path) -> None:
    package = tmp_path / "controller" / "job"
    package.mkdir(parents=True)
    source = package / "m.py"
    source.write_text(
        "import controller.runtime.client\n"
        "from controller.job import status\n"
        "from .view import MXJobView\n"
        "def f() -> None:\n"
        "    from controller.integrations.kueue.workload import JOB_UID_LABEL\n"
        "import shared.constants\n"
    )
    known = {"controller.job.status", "controller.job.view"}
    found = imports_of(source, package=tmp_path / "controller", modules=known)
    assert sorted(found) == [
        "controller.integrations.kueue.workload",
        "controller.job.status",
        "controller.job.view",
        "controller.runtime.client",
    ]


def test_an_upward_import_and_a_circle_are_found(tmp_path: Path) -> None:
    package = tmp_path / "controller"
    for room in ("runtime", "job"):
        (package / room).mkdir(parents=True)
    (package / "runtime" / "a.py").write_text("from controller.job.b import B\n")
    (package / "job" / "b.py").write_text("import controller.runtime.a\nB = 1\n")
    house = House.of(package)
    assert house.upward("controller.runtime.a", ("runtime", "job")) == ["controller.job.b"]
    assert house.circle() == ["controller.job.b", "controller.runtime.a", "controller.job.b"]


def test_every_module_has_its_line_in_the_code_map() -> None:
    """A newcomer finds each module in docs/development/code-map.md ("controller: the house of
    rooms"), by its path in the room or, for a subpackage's modules, by file name on its
    package's line."""
    section = doc_section(PACKAGE.parent / "docs" / "development" / "code-map.md", "controller")
    missing = HOUSE.unnamed_in(section, top_packages=2)
    assert not missing, f"modules docs/development/code-map.md does not name: {missing}"
