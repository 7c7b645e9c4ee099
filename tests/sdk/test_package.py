"""The mxjob-progress distribution: standard library only, Python 3.9, frameworks imported only
when used, and the contract written where users read it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import mxjob_progress
import pytest
from mxjob_progress import (
    ENV_CA_CERT,
    ENV_TOKEN,
    ENV_URL,
    MAX_METRICS,
    MAX_NAME,
    MAX_VALUE,
)

SDK = Path(__file__).resolve().parents[2] / "sdk"
PACKAGE = SDK / "mxjob_progress"
MODULES = sorted(PACKAGE.glob("*.py"))
FRAMEWORKS = {"mxnet", "tvm"}
ALLOWED = set(sys.stdlib_module_names) | {"mxjob_progress"}


def _imports(tree: ast.AST) -> list[tuple[str, bool]]:
    """Each absolute import's top-level module, and whether it is inside a function."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((alias.name.split(".")[0], in_function) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], in_function))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            assert in_function, f"import_module at module level, line {node.lineno}"
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def test_the_walk_tells_module_level_imports_from_function_level_ones() -> None:
    tree = ast.parse("import os\nfrom mxnet import nd\ndef f():\n    import tvm.te\n")
    assert _imports(tree) == [("os", False), ("mxnet", False), ("tvm", True)]


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_package_imports_the_standard_library_only(path: Path) -> None:
    imports = _imports(ast.parse(path.read_text(encoding="utf-8")))
    at_module_level = {name for name, in_function in imports if not in_function}
    in_functions = {name for name, in_function in imports if in_function}
    assert at_module_level <= ALLOWED, at_module_level - ALLOWED
    assert in_functions <= ALLOWED | FRAMEWORKS, in_functions - ALLOWED - FRAMEWORKS


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_the_package_is_python_3_9(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 9))
    typed = any(isinstance(node, (ast.FunctionDef, ast.AnnAssign)) for node in ast.walk(tree))
    # Annotations such as ``float | None`` are evaluated on 3.9 unless postponed.
    assert not typed or "from __future__ import annotations" in source


def test_importing_every_module_loads_nothing_but_the_standard_library() -> None:
    names = ["mxjob_progress"] + [f"mxjob_progress.{path.stem}" for path in MODULES]
    script = (
        "import importlib, json, sys\n"
        "before = set(sys.modules)\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        env={**os.environ, "PYTHONPATH": str(SDK)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert loaded - {"mxjob_progress"} <= set(sys.stdlib_module_names), loaded
    assert not loaded & (FRAMEWORKS | {"numpy"})


def test_the_distribution_has_no_dependencies() -> None:
    config = tomllib.loads((SDK / "pyproject.toml").read_text())
    project = config["project"]
    assert project["name"] == "mxjob-progress"
    assert project["requires-python"] == ">=3.9"
    assert project["dependencies"] == []
    assert "optional-dependencies" not in project
    assert config["build-system"]["build-backend"] == "setuptools.build_meta"
    assert config["tool"]["setuptools"]["packages"] == ["mxjob_progress"]
    version = config["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert version == "mxjob_progress._version.__version__"
    assert (PACKAGE / "py.typed").exists()


def test_the_contract_names_the_injected_variables() -> None:
    readme = (SDK / "README.md").read_text()
    contract = mxjob_progress.__doc__ or ""
    for text in (readme, contract):
        for name in (ENV_URL, ENV_CA_CERT, ENV_TOKEN):
            assert f"``{name}``" in text or f"`{name}`" in text, name
        assert "/apis/kubeflow.org/v1/namespaces/{" in text
    assert f"at most {MAX_METRICS} entries" in contract
    assert f"1 to {MAX_NAME}" in contract
    assert f"at most {MAX_VALUE} characters" in contract
