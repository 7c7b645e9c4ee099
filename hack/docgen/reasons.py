"""The reasons the controller writes, found in its source: of Events and of conditions.

A reason is an argument at a call: ``EventSpec("Warning", EXITED_WITH_CODE, ...)``,
``recorder.record(job, "Normal", "Started", ...)``, ``set_condition(..., reason=...)``. Many are
constants, some are literals, some pass through a parameter (``finish(sync, ctype, reason, ...)``
records whatever its callers give) or a loop. This module follows each argument back to the
values it can have: a constant or literal is read (the module is imported and the name looked
up), a parameter is followed to every call of its function, a local to its assignments and
``for`` loops, both branches of a conditional expression are taken. What comes from data at run
time (``problem.reason``: the kubelet's word) is returned as :class:`Dynamic`, for the page to
explain. The arguments of one call are resolved together, so a reason stays paired with its
condition type or Event type.
"""

from __future__ import annotations

import ast
import importlib
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from docgen.crd import ROOT

PACKAGE = "controller"


@dataclass(frozen=True)
class Dynamic:
    """A value read from data at run time, not written in the code."""

    module: str
    expression: str


Value = str | bool | Dynamic | None
"""A resolved argument; None when the call leaves it out."""


@dataclass(frozen=True)
class Sink:
    """A call whose arguments are wanted: its name, and where each argument is (a position,
    a keyword, or both); a default for one the call may leave out."""

    name: str
    arguments: Mapping[str, tuple[int | None, str]]
    defaults: Mapping[str, Value] = field(default_factory=dict)


@dataclass(frozen=True)
class _Function:
    module: str
    node: ast.FunctionDef
    is_method: bool

    @property
    def parameters(self) -> list[str]:
        args = self.node.args
        return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


@dataclass(frozen=True)
class _Param:
    function: _Function
    name: str


@dataclass(frozen=True)
class _Choice:
    """``a if <parameter> is <compared> else b``: decided at each call of the function."""

    function: _Function
    parameter: str
    equal: bool
    """The test holds when the parameter equals ``compared`` (``is``, ``==``); else when not."""
    compared: Value
    then: tuple[Value, ...]
    otherwise: tuple[Value, ...]

    def pick(self, value: Value) -> tuple[Value, ...]:
        return self.then if (value == self.compared) == self.equal else self.otherwise


_Open = _Param | _Choice
"""A value its function's callers decide."""


@dataclass(frozen=True)
class _Site:
    module: str
    function: _Function | None
    call: ast.Call


_Item = Value | tuple[ast.expr, str, "_Function | None"]


def _called(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class Source:
    """The parsed modules of a package, indexed by function and by called name."""

    def __init__(self, package: str = PACKAGE, root: Path = ROOT) -> None:
        self.functions: dict[str, list[_Function]] = {}
        self.sites: dict[str, list[_Site]] = {}
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            self._index(module, tree.body, None, in_class=False)

    def _index(
        self, module: str, body: list[ast.stmt], owner: _Function | None, *, in_class: bool
    ) -> None:
        for statement in body:
            if isinstance(statement, ast.ClassDef):
                self._index(module, statement.body, owner, in_class=True)
                continue
            if isinstance(statement, ast.FunctionDef):
                function = _Function(module, statement, is_method=in_class)
                self.functions.setdefault(statement.name, []).append(function)
                self._index(module, statement.body, function, in_class=False)
                continue
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and (name := _called(node)):
                    self.sites.setdefault(name, []).append(_Site(module, owner, node))

    def calls(self, sink: Sink) -> Iterator[tuple[str, dict[str, Value]]]:
        """(module of the call, argument → value) for every value combination of every call."""
        for site in self.sites.get(sink.name, []):
            items: dict[str, _Item] = {}
            for key, (position, keyword) in sink.arguments.items():
                found = _argument(site.call, position, keyword)
                items[key] = (
                    (found, site.module, site.function)
                    if found is not None
                    else sink.defaults.get(key)
                )
            for combination in self._combine(items, depth=0):
                yield site.module, combination

    def _combine(self, items: Mapping[str, _Item], *, depth: int) -> list[dict[str, Value]]:
        if depth > 8:
            raise RecursionError(f"arguments passed through too many calls: {items}")
        options = {key: self._values(item) for key, item in items.items()}
        found: list[dict[str, Value]] = []
        for combination in itertools.product(*options.values()):
            chosen = dict(zip(options, combination, strict=True))
            open_ = [v for v in chosen.values() if isinstance(v, _Param | _Choice)]
            if not open_:
                found.append({k: v for k, v in chosen.items() if not isinstance(v, _Open)})
                continue
            function = open_[0].function
            for site in self.sites.get(function.node.name, []):
                for passed in self._at(site, function, chosen):
                    found += self._combine(passed, depth=depth + 1)
        return found

    def _at(
        self, site: _Site, function: _Function, chosen: Mapping[str, Value | _Open]
    ) -> list[dict[str, _Item]]:
        """The arguments one call of ``function`` passes: a parameter becomes the call's
        expression, a choice the branch the call's argument picks (both when it cannot tell)."""
        options: dict[str, list[_Item]] = {}
        for key, value in chosen.items():
            if isinstance(value, _Param):
                options[key] = [self._passed(site, function, value.name)]
            elif isinstance(value, _Choice):
                given = self._values(self._passed(site, function, value.parameter))
                picked: list[_Item] = []
                for argument in given:
                    branch = (
                        value.then + value.otherwise
                        if isinstance(argument, _Param | _Choice)
                        else value.pick(argument)
                    )
                    picked += [b for b in branch if b not in picked]
                options[key] = picked
            else:
                options[key] = [value]
        return [dict(zip(options, c, strict=True)) for c in itertools.product(*options.values())]

    def _passed(self, site: _Site, function: _Function, parameter: str) -> _Item:
        """The argument a call gives a parameter (its expression), or the parameter's default."""
        args = function.node.args
        positional_names = [a.arg for a in (*args.posonlyargs, *args.args)]
        shift = 1 if function.is_method and isinstance(site.call.func, ast.Attribute) else 0
        positional = None
        if parameter in positional_names and positional_names.index(parameter) >= shift:
            positional = positional_names.index(parameter) - shift
        found = _argument(site.call, positional, parameter)
        if found is not None:
            return (found, site.module, site.function)
        return None

    def _values(self, item: _Item) -> list[Value | _Open]:
        if item is None or isinstance(item, str | bool | Dynamic):
            return [item]
        node, module, function = item
        return _resolve(node, module, function)


def _argument(call: ast.Call, position: int | None, keyword: str) -> ast.expr | None:
    for given in call.keywords:
        if given.arg == keyword:
            return given.value
    if position is not None and position < len(call.args):
        return call.args[position]
    starred = [a for a in call.args[: (position or 0) + 1] if isinstance(a, ast.Starred)]
    return starred[0] if starred else None


def _resolve(node: ast.expr, module: str, function: _Function | None) -> list[Value | _Open]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bool):
        return [node.value]
    if isinstance(node, ast.IfExp):
        choice = _choice(node, module, function)
        if choice is not None:
            return [choice]
        return [*_resolve(node.body, module, function), *_resolve(node.orelse, module, function)]
    dotted = _dotted(node)
    if dotted is None:
        return [Dynamic(module, ast.unparse(node))]
    if function is not None and dotted[0] in function.parameters:
        return (
            [_Param(function, dotted[0])]
            if len(dotted) == 1
            else [Dynamic(module, ".".join(dotted))]
        )
    assigned = None if function is None else _assigned(dotted[0], function)
    if assigned is None:
        return [_lookup(module, dotted)]
    if len(dotted) > 1:
        return [Dynamic(module, ".".join(dotted))]
    found: list[Value | _Open] = []
    for expression in assigned:
        found += _resolve(expression, module, function)
    return found


def _choice(node: ast.IfExp, module: str, function: _Function | None) -> _Choice | None:
    """``a if <parameter> is <constant> else b`` with constant branches, else None."""
    test = node.test
    if function is None or not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    if not isinstance(test.left, ast.Name) or test.left.id not in function.parameters:
        return None
    if not isinstance(test.ops[0], ast.Is | ast.Eq | ast.IsNot | ast.NotEq):
        return None
    compared = _resolve(test.comparators[0], module, function)
    then = _resolve(node.body, module, function)
    otherwise = _resolve(node.orelse, module, function)
    values = [*compared, *then, *otherwise]
    if len(compared) != 1 or any(isinstance(v, _Param | _Choice) for v in values):
        return None
    return _Choice(
        function=function,
        parameter=test.left.id,
        equal=isinstance(test.ops[0], ast.Is | ast.Eq),
        compared=compared[0],  # type: ignore[arg-type]
        then=tuple(then),  # type: ignore[arg-type]
        otherwise=tuple(otherwise),  # type: ignore[arg-type]
    )


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else [*base, node.attr]
    return None


def _lookup(module: str, dotted: list[str]) -> Value:
    """A module-level name (or an attribute of one) as the imported module holds it."""
    value: object = importlib.import_module(module)
    for part in dotted:
        value = getattr(value, part)
    if isinstance(value, Enum):
        value = value.value
    if not isinstance(value, str | bool):
        raise TypeError(f"{module}: {'.'.join(dotted)} is {value!r}, not a string")
    return value


def _assigned(name: str, function: _Function) -> list[ast.expr] | None:
    """The expressions a local variable of ``function`` is given (by ``=`` or a ``for`` over a
    literal tuple or list), None when ``name`` is no local; a ``for`` over anything else gives
    the iterable itself, which then reads as data."""
    found: list[ast.expr] = []
    local = False
    for node in ast.walk(function.node):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                local = True
                found.append(node.value)
        elif isinstance(node, ast.For | ast.comprehension):
            picked = _loop_values(node.target, node.iter, name)
            if picked is not None:
                local = True
                found += picked
    return found if local else None


def _loop_values(target: ast.expr, iterable: ast.expr, name: str) -> list[ast.expr] | None:
    """What a loop binds ``name`` to, None when it binds no ``name``."""
    if isinstance(target, ast.Name):
        index = None
        if target.id != name:
            return None
    elif isinstance(target, ast.Tuple):
        ids = [t.id if isinstance(t, ast.Name) else "" for t in target.elts]
        if name not in ids:
            return None
        index = ids.index(name)
    else:
        return None
    if not isinstance(iterable, ast.Tuple | ast.List):
        return [ast.Subscript(value=iterable, slice=ast.Constant(value=0))]
    if index is None:
        return list(iterable.elts)
    return [e.elts[index] for e in iterable.elts if isinstance(e, ast.Tuple | ast.List)]
