"""The tests' own layout: test modules share helpers through helper modules, and wait one way.

A test module (``test_*.py``) imported by another is collected twice, and its fixtures and
constants become an API nobody sees as one. What tests share lives in helper modules
(``tests/helpers/``, ``tests/e2e/*_fixtures.py``, ``tests/shared/shared_samples.py``...), and the
one waiting helper is :func:`tests.helpers.waiting.wait_for`.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
WAITING = TESTS / "helpers" / "waiting.py"


def _modules(pattern: str) -> list[Path]:
    return sorted(p for p in TESTS.rglob(pattern) if "__pycache__" not in p.parts)


def _is_test_module(name: str) -> bool:
    return name.rpartition(".")[2].startswith("test_")


def imports_of_test_modules(path: Path) -> list[str]:
    """``line: import`` for each import in ``path`` of a module named ``test_*``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            if node.module and _is_test_module(node.module):
                names = [source]
            else:  # ``from tests.e2e import test_x``: a test module imported by name
                names = [f"{source}.{a.name}" for a in node.names if a.name.startswith("test_")]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names]
    return found


def functions_named(path: Path, name: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    ]


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in _modules("test_*.py")
        if (found := imports_of_test_modules(path))
    }
    assert not offenders, f"move what they share into a helper module: {offenders}"


def test_only_the_waiting_helper_defines_wait_for() -> None:
    offenders = {
        str(path.relative_to(TESTS)): lines
        for path in _modules("*.py")
        if path != WAITING and (lines := functions_named(path, "wait_for"))
    }
    assert not offenders, f"use tests.helpers.waiting.wait_for instead: {offenders}"
    assert functions_named(WAITING, "wait_for")


def test_the_layout_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "from tests.e2e.test_install_running import PodCreations\n"
        "from tests.e2e import test_gang_volcano, controller_fixtures\n"
        "import tests.e2e.test_demo as demo\n"
        "from tests.e2e.controller_fixtures import test_function_collected_twice\n"
        "from tests.helpers.waiting import wait_for\n"
        "def helper():\n"
        "    def wait_for(): ...\n"
    )
    assert imports_of_test_modules(sample) == [
        "1: tests.e2e.test_install_running",
        "2: tests.e2e.test_gang_volcano",
        "3: tests.e2e.test_demo",
        "4: tests.e2e.controller_fixtures.test_function_collected_twice",
    ]
    assert functions_named(sample, "wait_for") == [7]


def waiting_helpers_imported(path: Path) -> list[str]:
    """``line: module.name`` for each ``wait*`` helper ``path`` imports from elsewhere than
    ``tests.helpers.waiting`` (e.g. a tooling module's own polling loop)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{node.lineno}: {node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "tests.helpers.waiting"
        for alias in node.names
        if alias.name.startswith(("wait_for", "wait_until", "eventually"))
    ]


def test_tests_wait_only_through_the_waiting_helper(tmp_path: Path) -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in _modules("*.py")
        if (found := waiting_helpers_imported(path))
    }
    assert not offenders, f"use tests.helpers.waiting.wait_for instead: {offenders}"
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "from localkube.scenarios.gang_demo import wait_until\n"
        "from tests.helpers.waiting import wait_for\n"
    )
    assert waiting_helpers_imported(sample) == ["1: localkube.scenarios.gang_demo.wait_until"]


def test_every_bench_module_is_run_by_a_make_bench_target() -> None:
    """A ``bench_*.py`` compares or measures: ``make test`` never collects it (it is not a
    ``test_*.py``), so only a ``make bench-…`` target that names it ever runs it."""
    makefile = (TESTS.parent / "Makefile").read_text(encoding="utf-8")
    modules = [str(path.relative_to(TESTS.parent)) for path in _modules("bench_*.py")]
    assert modules, "no bench module found: the check would hold of nothing"
    assert [module for module in modules if module not in makefile] == []
    assert "bench-recovery:" in makefile


PRINTING_TOOLS = {
    "helpers/module_times.py": "main",
    "test_function_length.py": "__main__",
}
"""Command-line tools under tests/ whose output is their job, and where each prints: ``main`` of
``python -m tests.helpers.module_times`` (the run's module-time report), the ``if __name__ ==
"__main__":`` block of test_function_length.py (run as a script, the longest functions)."""


def _is_main_block(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":``"""
    return isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"


def prints_outside(path: Path, allowed: str | None = None) -> list[int]:
    """Lines of ``path`` that call the builtin ``print`` outside ``allowed``: the top-level
    function of that name, or the ``if __name__ == "__main__":`` block for ``"__main__"``. A
    ``print(`` in a string (a program a container or subprocess runs) is no call: not counted."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    spans = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if (allowed == "__main__" and _is_main_block(node))
        or (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == allowed)
    ]
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and not any(first <= node.lineno <= last for first, last in spans)
    )


def test_no_test_prints() -> None:
    """A test asserts; a timing goes to pytest's ``--durations`` or a bench's JSON, a failure's
    diagnostics into its assertion or exception message: nothing of a test goes to stdout."""
    offenders = {
        str(path.relative_to(TESTS)): lines
        for path in _modules("*.py")
        if (lines := prints_outside(path, PRINTING_TOOLS.get(str(path.relative_to(TESTS)))))
    }
    assert not offenders, f"assert instead, or put it in a failure's message: {offenders}"
    for where, allowed in PRINTING_TOOLS.items():  # each tool is there and still prints
        assert prints_outside(TESTS / where) != prints_outside(TESTS / where, allowed), where


def test_the_print_check_catches_a_call_and_spares_strings_and_the_tools_output(
    tmp_path: Path,
) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "def test_x():\n"
        '    run(["python", "-c", "print(1)"])\n'
        "    console.print('a method, not the builtin')\n"
        "    print(f'took {seconds:.1f} s')\n"
        "def main():\n"
        "    print('report')\n"
        "if __name__ == '__main__':\n"
        "    print(main())\n"
    )
    assert prints_outside(sample) == [4, 6, 8]
    assert prints_outside(sample, "main") == [4, 8]
    assert prints_outside(sample, "__main__") == [4, 6]
