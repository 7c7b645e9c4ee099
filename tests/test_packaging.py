"""The wheel and the images carry the product only, each process with its own dependencies.

`pyproject.toml` lists what each process needs: the project's dependencies (`shared/`), and the
`webhook`, `controller` and `certs` extras; each Dockerfile installs one extra. These tests read
the imports of the product's modules and hold them to those lists, so an import added without its
dependency fails here rather than when an image starts.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PRODUCT = ("shared", "webhook", "controller", "certs")
# Which product packages (beside itself) and which extra each package may use.
ALLOWED: dict[str, tuple[tuple[str, ...], str | None]] = {
    "shared": ((), None),
    # The serving certificate and its reloading, which both processes share, are certs/serving.py
    # and certs/reloader.py: cryptography only, which the webhook extra lists too. certs/cli.py's
    # PyYAML is never imported by the webhook: the test of what the webhook loads checks it.
    "webhook": (("shared", "certs"), "webhook"),
    # The certificate keeper (controller/certificates/keeper.py) issues with certs/authority.py,
    # which needs only cryptography; certs/cli.py's PyYAML is never imported by the controller.
    "controller": (("shared", "certs"), "controller"),
    # The certificate decisions read and write API times with shared/apitime.py; shared is in
    # the base dependencies, so every process that has certs has it.
    "certs": (("shared",), "certs"),
}


def _declared(extra: str | None) -> set[str]:
    names = list(PROJECT["project"]["dependencies"])
    if extra is not None:
        names += PROJECT["project"]["optional-dependencies"][extra]
    return {canonicalize_name(Requirement(name).name) for name in names}


def _imported_top_levels(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__", package}


def test_the_wheel_holds_the_product_packages_only() -> None:
    found = PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert found == [name for package in PRODUCT for name in (package, f"{package}.*")]
    assert "package-dir" not in PROJECT["tool"]["setuptools"]


def _wheel_files() -> set[str]:
    """The files the wheel carries, as setuptools' ``build_py`` (the step that fills it) lists them.

    Read from the project's own configuration by setuptools, without building: the modules of every
    listed package and their package data.
    """
    pytest.importorskip("setuptools")
    code = (
        "import json, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from setuptools.config.pyprojecttoml import apply_configuration\n"
        "from setuptools.dist import Distribution\n"
        "dist = Distribution({'script_name': 'setup.py'})\n"
        "apply_configuration(dist, 'pyproject.toml')\n"
        "build = dist.get_command_obj('build_py')\n"
        "build.ensure_finalized()\n"
        "files = [path for _, _, path in build.find_all_modules()]\n"
        "files += [f'{src}/{name}' for _, src, _, names in build.data_files for name in names]\n"
        "print(json.dumps(files))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return {Path(path).as_posix() for path in json.loads(result.stdout)}


def test_the_wheel_carries_no_test_support() -> None:
    files = _wheel_files()
    assert {"webhook/reviews.py", "controller/main.py", "shared/py.typed"} <= files
    # Every room of the controller's house is in the wheel, not only its top.
    assert {
        "controller/job/reconciler.py",
        "controller/integrations/kueue/workload_sync.py",
    } <= files
    # Reviews as the API server sends them are test support: tests/webhook/reviews_samples.py.
    assert "webhook/testing.py" not in files
    support = {f for f in files if Path(f).stem in ("testing", "conftest") or "/test" in f}
    assert support == set()


@pytest.mark.parametrize("package", PRODUCT)
def test_every_import_of_a_product_package_is_declared_for_its_process(package: str) -> None:
    products, extra = ALLOWED[package]
    declared = _declared(extra)
    distributions = packages_distributions()
    undeclared = {}
    for module in sorted(_imported_top_levels(package)):
        if module in products:
            continue
        dists = {canonicalize_name(d) for d in distributions.get(module, [module])}
        if not dists & declared:
            undeclared[module] = sorted(dists)
    assert undeclared == {}


def _imported_by(modules: list[str]) -> set[str]:
    """The top-level packages a fresh interpreter holds after importing ``modules``."""
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return set(result.stdout.split())


def _all_modules(package: str) -> list[str]:
    return [
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "__main__.py"
    ]


def test_the_webhook_never_imports_the_kubernetes_client_or_the_controller() -> None:
    loaded = _imported_by(_all_modules("webhook"))
    assert "webhook" in loaded and "flask" in loaded
    assert loaded.isdisjoint({"kubernetes", "controller", "localkube", "yaml"})


def test_the_controller_never_imports_the_webhook_or_its_server() -> None:
    loaded = _imported_by(_all_modules("controller"))
    assert "controller" in loaded and "kubernetes" in loaded
    assert loaded.isdisjoint({"webhook", "flask", "gunicorn", "localkube"})
