"""localkube reads as rooms stacked in layers: a module imports only from its own room or from a
room below it, and no import circle exists between its modules.

The rooms, lowest first, are :data:`LAYERS` (docs/development/code-map.md, "localkube: the
development house", describes each module). Lazy imports inside functions count: they are
imports all the same, and a circle through one breaks as soon as the function runs first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.layers import House, doc_section, imports_of

PACKAGE = Path(__file__).resolve().parents[2] / "hack" / "localkube"
LAYERS = ("base", "plane", "kubelet", "images", "realnode", "thirdparty", "scenarios", "__main__")
"""localkube's rooms, lowest first: each may import from itself and from those before it."""

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


def test_the_graph_sees_lazy_and_module_imports(tmp_path: Path) -> None:
    package = tmp_path / "localkube"
    package.mkdir()
    source = package / "m.py"
    source.write_text(
        "from localkube.kubelet import daemon\n"
        "def f() -> None:\n"
        "    from localkube.plane.operator import LocalOperator\n"
    )
    found = imports_of(source, package=package, modules={"localkube.kubelet.daemon"})
    assert sorted(found) == ["localkube.kubelet.daemon", "localkube.plane.operator"]


def test_every_module_has_its_line_in_the_code_map() -> None:
    """A newcomer finds each module in docs/development/code-map.md ("localkube: the development
    house"), by its path in the room or, for a subpackage's modules, by file name on its room's
    line."""
    code_map = PACKAGE.parents[1] / "docs" / "development" / "code-map.md"
    section = doc_section(code_map, "localkube")
    missing = HOUSE.unnamed_in(section, top_packages=99, top_modules=False)
    assert not missing, f"modules docs/development/code-map.md does not name: {missing}"
