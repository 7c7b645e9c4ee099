"""localkube reads as rooms stacked in layers: a module imports only from its own room or from a
room below it, and no import circle exists between its modules.

The rooms, lowest first, are :data:`LAYERS` (docs/architecture.md describes each module). Lazy
imports inside functions count: they are imports all the same, and a circle through one breaks
as soon as the function runs first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hack" / "localkube"
LAYERS = ("base", "plane", "kubelet", "images", "realnode", "thirdparty", "scenarios", "__main__")
"""localkube's rooms, lowest first: each may import from itself and from those before it."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    """``localkube.plane.operator`` → ``plane``; ``localkube.images`` → ``images``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> Iterator[str]:
    """Every localkube module ``path`` imports, at its top or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("localkube."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("localkube"):
            module = node.module or ""
            for alias in node.names:
                # `from localkube.kubelet import daemon` imports the module localkube.kubelet.daemon
                candidate = f"{module}.{alias.name}"
                yield candidate if candidate in MODULES else module


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}
GRAPH = {
    name: sorted({target for target in imports_of(path) if target != name})
    for name, path in MODULES.items()
}


def test_every_module_is_in_a_room() -> None:
    rooms = {room(name) for name in MODULES} - {"__init__"}
    assert rooms == set(LAYERS), f"rooms not in LAYERS: {rooms - set(LAYERS)}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_from_its_room_or_below(module: str) -> None:
    if room(module) == "__init__":
        return
    level = LAYERS.index(room(module))
    upward = [t for t in GRAPH[module] if room(t) in LAYERS and LAYERS.index(room(t)) > level]
    assert not upward, f"{module} ({room(module)}) imports from higher rooms: {upward}"


def test_no_import_circle() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in GRAPH.get(name, []):
            if state.get(target) == 1:
                circle = [*path[path.index(target) :], target]
                pytest.fail("import circle: " + " → ".join(circle))
            if target not in state:
                visit(target)
        path.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name)


def test_the_graph_sees_lazy_and_module_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from localkube.kubelet import daemon\n"
        "def f() -> None:\n"
        "    from localkube.plane.operator import LocalOperator\n"
    )
    assert sorted(imports_of(source)) == ["localkube.kubelet.daemon", "localkube.plane.operator"]


def test_every_module_has_its_line_in_the_architecture_doc() -> None:
    """A newcomer finds each module in docs/architecture.md ("localkube: the development house"),
    by its path in the room or, for a subpackage's modules, by file name on its room's line."""
    doc = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    house = doc[doc.index("## localkube") :]
    house = house[: house.index("\n## ", 1)]
    missing = []
    for name, path in sorted(MODULES.items()):
        relative = path.relative_to(PACKAGE)
        if relative.name == "__init__.py" or len(relative.parts) == 1:
            continue
        direct = f"`{relative.as_posix()}`"
        nested = f"`{relative.parent.as_posix()}/`" in house and f"`{relative.name}`" in house
        if direct not in house and not nested:
            missing.append(name)
    assert not missing, f"modules docs/architecture.md does not name: {missing}"
