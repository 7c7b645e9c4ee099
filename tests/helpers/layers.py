"""A package read as rooms stacked in layers: its import graph, the imports that go up, its
import circles, and the modules its section of the code map (docs/development/code-map.md) does
not name.

Shared by the layer tests of the controller (tests/controller/test_layers.py) and of localkube
(tests/localkube/test_layers.py). A room is a package's first-level module or subpackage
(``controller.job.view`` → ``job``). Lazy imports inside functions count: they are imports all
the same, and a circle through one breaks as soon as the function runs first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


def module_name(path: Path, package: Path) -> str:
    """``<package>/job/view.py`` → ``<package name>.job.view`` (a package by its folder)."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room(module: str) -> str:
    """``controller.runtime.client`` → ``runtime``; the package itself → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _absolute(node: ast.ImportFrom, importer: str, *, is_package: bool) -> str:
    """The module a ``from ... import`` names, a relative one resolved against ``importer``."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(path: Path, *, package: Path, modules: set[str]) -> Iterator[str]:
    """Every module of ``package`` that ``path`` imports, at its top or inside a function;
    ``modules`` are the package's modules (a ``from x import y`` of a module names ``x.y``)."""
    prefix = package.name
    importer = module_name(path, package)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith(f"{prefix}."))
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, importer, is_package=path.name == "__init__.py")
            if module != prefix and not module.startswith(f"{prefix}."):
                continue
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                yield candidate if candidate in modules else module


@dataclass(frozen=True)
class House:
    """A package's modules and who imports whom among them."""

    package: Path
    modules: Mapping[str, Path]
    graph: Mapping[str, Sequence[str]]

    @classmethod
    def of(cls, package: Path) -> House:
        modules = {module_name(path, package): path for path in package.rglob("*.py")}
        known = set(modules)
        graph = {
            name: sorted({t for t in imports_of(path, package=package, modules=known) if t != name})
            for name, path in modules.items()
        }
        return cls(package, modules, graph)

    def rooms(self) -> set[str]:
        return {room(name) for name in self.modules} - {"__init__"}

    def upward(self, module: str, layers: Sequence[str]) -> list[str]:
        """What ``module`` imports from rooms above its own in ``layers`` (lowest first)."""
        if room(module) not in layers:
            return []
        level = layers.index(room(module))
        return [
            t for t in self.graph[module] if room(t) in layers and layers.index(room(t)) > level
        ]

    def circle(self) -> list[str] | None:
        """An import circle (its modules, the first again at the end), None when there is none."""
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        path: list[str] = []

        def visit(name: str) -> list[str] | None:
            state[name] = 1
            path.append(name)
            for target in self.graph.get(name, []):
                if state.get(target) == 1:
                    return [*path[path.index(target) :], target]
                if target not in state and (found := visit(target)) is not None:
                    return found
            path.pop()
            state[name] = 2
            return None

        for name in sorted(self.graph):
            if name not in state and (found := visit(name)) is not None:
                return found
        return None

    def unnamed_in(self, section: str, *, top_packages: int, top_modules: bool = True) -> list[str]:
        """The modules ``section`` (of the code map) names neither by their path in the
        package (`` `job/view.py` ``) nor, inside a subpackage, by file name on a line with the
        subpackage's path (`` `kueue/` `` … `` `workload.py` ``). ``__init__`` modules of
        packages at most ``top_packages`` deep are the rooms' own headings, and the package's top
        modules are checked only with ``top_modules``."""
        missing = []
        for name, path in sorted(self.modules.items()):
            relative = path.relative_to(self.package)
            if relative.name == "__init__.py" and len(relative.parts) <= top_packages:
                continue
            if len(relative.parts) == 1 and not top_modules:
                continue
            if relative.name == "__init__.py":
                direct, nested = f"`{relative.parent.as_posix()}/`", False
            else:
                direct = f"`{relative.as_posix()}`"
                parent = f"`{relative.parent.as_posix()}/`"
                nested = parent in section and f"`{relative.name}`" in section
            if direct not in section and not nested:
                missing.append(name)
        return missing


def doc_section(doc: Path, heading: str) -> str:
    """The text of ``doc`` from the ``## <heading>`` line to the next ``## `` heading."""
    text = doc.read_text(encoding="utf-8")
    section = text[text.index(f"## {heading}") :]
    end = section.find("\n## ", 1)
    return section if end == -1 else section[:end]
