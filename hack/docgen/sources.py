"""The docstrings Python keeps nowhere at run time: those written under an attribute.

The settings dataclasses (controller/runtime/settings.py, webhook/settings.py) and the modules'
constants (``ATTEMPT_ANNOTATION`` in controller/job/observed.py...) explain each name in
a string literal right below it. The interpreter drops those strings, so they are read from the
source: the reference then says what the code's author said, in one place.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from types import ModuleType

from docgen.markdown import rst_to_markdown


def _documented(body: list[ast.stmt]) -> dict[str, str]:
    """Name → the docstring after its assignment, among ``body``'s statements."""
    found: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        target: ast.expr | None = None
        if isinstance(statement, ast.AnnAssign):
            target = statement.target
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[target.id] = rst_to_markdown(inspect.cleandoc(following.value.value))
    return found


def attribute_docs(cls: type) -> dict[str, str]:
    """The class's attribute docstrings, as Markdown."""
    tree = ast.parse(inspect.getsource(cls))
    node = tree.body[0]
    if not isinstance(node, ast.ClassDef):
        raise TypeError(f"{cls!r} is not defined by a class statement")
    return _documented(node.body)


def constant_docs(module: ModuleType) -> dict[str, str]:
    """The module's constant docstrings, as Markdown."""
    return _documented(ast.parse(inspect.getsource(module)).body)


def first_sentence(text: str) -> str:
    """The text up to its first full stop that ends a sentence."""
    head, dot, _ = text.partition(". ")
    return head + "." if dot else text
