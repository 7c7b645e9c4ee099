"""The controller reads as rooms stacked in layers: a module imports only from its own room or
from a room below it, and no import circle exists between its modules.

The rooms, lowest first, are :data:`LAYERS` (docs/architecture.md, "controller: the house of
rooms", describes each module): ``runtime`` (the API client, caches, queue, election, metrics),
``certificates`` (the webhook certificate keeper), ``job`` (one MXJob's reconcile), then
``integrations`` (Kueue, gang scheduling, disruption budgets) and the two top modules,
``manager.py`` (wires it all) and ``main.py`` (the process). Lazy imports inside functions count:
they are imports all the same, and a circle through one breaks as soon as the function runs
first. The same checks hold hack/localkube (tests/localkube/test_layers.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "controller"
LAYERS = ("runtime", "certificates", "job", "integrations", "manager", "main")
"""The controller's rooms, lowest first: each may import from itself and from those before it."""


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    """``controller.runtime.client`` → ``runtime``; ``controller.manager`` → ``manager``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module an ``from ... import`` names, relative ones resolved against ``importer``."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(
    path: Path, *, package: Path = PACKAGE, modules: set[str] | None = None
) -> Iterator[str]:
    """Every controller module ``path`` (a module of ``package``) imports, at its top or inside
    a function; ``modules`` are the package's modules (by default the controller's)."""
    known = set(MODULES) if modules is None else modules
    importer = module_name(path, package)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("controller."))
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, importer, path.name == "__init__.py")
            if module != "controller" and not module.startswith("controller."):
                continue
            for alias in node.names:
                # `from controller.job import status` imports the module controller.job.status
                candidate = f"{module}.{alias.name}"
                yield candidate if candidate in known else module


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


def test_every_module_has_its_line_in_the_architecture_doc() -> None:
    """A newcomer finds each module in docs/architecture.md ("controller: the house of rooms"),
    by its path in the room or, for a subpackage's modules, by file name on its package's line."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    house = doc[doc.index("## controller") :]
    house = house[: house.index("\n## ", 1)]
    missing = []
    for name, path in sorted(MODULES.items()):
        relative = path.relative_to(PACKAGE)
        if relative.name == "__init__.py" and len(relative.parts) <= 2:
            continue  # the package of a room (or the controller's own): the room's heading
        if relative.name == "__init__.py":
            direct = f"`{relative.parent.as_posix()}/`"
            nested = False
        else:
            direct = f"`{relative.as_posix()}`"
            nested = f"`{relative.parent.as_posix()}/`" in house and f"`{relative.name}`" in house
        if direct not in house and not nested:
            missing.append(name)
    assert not missing, f"modules docs/architecture.md does not name: {missing}"
