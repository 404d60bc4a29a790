"""What configure_callbacks returns, read without running it: the classes it builds and their arguments."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopgen.source.syntax import dotted_name


@dataclass(frozen=True)
class HParam:
    """An argument read from `self.hparams.NAME` (or `self.hparams["NAME"]`): the model's init argument NAME."""

    name: str


@dataclass(frozen=True)
class ReturnedCallback:
    """One callback configure_callbacks builds: the class (its dotted path where it is defined), its keyword
    arguments (literals or HParams), and the line that builds it."""

    class_path: str
    args: tuple[tuple[str, Any], ...]
    line: int
    positional: tuple[Any, ...] = ()  # the arguments given by position (literals or HParams), in order


# `resolve(dotted)`: the dotted path of the class a name in the method's module refers to, or None
Resolve = Callable[[str], "str | None"]


def read_callbacks(fn: ast.FunctionDef | ast.AsyncFunctionDef, me: str | None, resolve: Resolve,
                   where: Callable[[int], str]) -> tuple[ReturnedCallback, ...] | str:  # fmt: skip
    """The callbacks configure_callbacks returns, or why its source does not show them (naming the line).

    The body may hold a docstring, assignments of names to callbacks (or to lists of them) and one return, last:
    of a callback, a list or tuple of them, None, or a name bound above. Each callback is a call of a class with
    keyword arguments that are literals or `self.hparams.NAME`."""
    bound: dict[str, tuple[ReturnedCallback, ...]] = {}
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return):
        return f"{where(fn.lineno)}: configure_callbacks must end in its return statement"
    for statement in body[:-1]:
        if not (isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets)):
            return (
                f"{where(statement.lineno)}: configure_callbacks may only assign names to the callbacks it builds"
                " before its return"
            )
        value = _callbacks(statement.value, me, resolve, bound, where)
        if isinstance(value, str):
            return value
        for target in statement.targets:
            bound[target.id] = value  # type: ignore[attr-defined]
    returned = body[-1].value  # type: ignore[attr-defined]
    if returned is None or (isinstance(returned, ast.Constant) and returned.value is None):
        return ()
    return _callbacks(returned, me, resolve, bound, where)


def _callbacks(node: ast.expr, me: str | None, resolve: Resolve, bound: dict[str, tuple[ReturnedCallback, ...]],
               where: Callable[[int], str]) -> tuple[ReturnedCallback, ...] | str:  # fmt: skip
    """The callbacks an expression gives: a call, a name bound to callbacks, a list or tuple of those."""
    if isinstance(node, (ast.List, ast.Tuple)):
        found: list[ReturnedCallback] = []
        for element in node.elts:
            one = _callbacks(element, me, resolve, bound, where)
            if isinstance(one, str):
                return one
            found += one
        return tuple(found)
    if isinstance(node, ast.Name) and node.id in bound:
        return bound[node.id]
    if isinstance(node, ast.Call):
        one = _callback(node, me, resolve, where)
        return one if isinstance(one, str) else (one,)
    return f"{where(node.lineno)}: configure_callbacks returns something other than callbacks built in it"


def _callback(call: ast.Call, me: str | None, resolve: Resolve,
              where: Callable[[int], str]) -> ReturnedCallback | str:  # fmt: skip
    name = dotted_name(call.func)
    class_path = resolve(name) if name else None
    if class_path is None:
        return f"{where(call.lineno)}: configure_callbacks builds a callback whose class loopgen cannot find"
    positional = []
    for arg in call.args:
        value = _UNKNOWN if isinstance(arg, ast.Starred) else _argument(arg, me)
        if value is _UNKNOWN:
            return (
                f"{where(arg.lineno)}: {name}'s argument {ast.unparse(arg)} is neither a literal nor self.hparams.NAME,"
                " so loopgen cannot know it"
            )
        positional.append(value)
    args = []
    for keyword in call.keywords:
        if keyword.arg is None:
            return f"{where(call.lineno)}: {name}(**...): pass each argument by keyword"
        value = _argument(keyword.value, me)
        if value is _UNKNOWN:
            return (
                f"{where(keyword.value.lineno)}: {name}({keyword.arg}=...) is neither a literal nor"
                " self.hparams.NAME, so loopgen cannot know it"
            )
        args.append((keyword.arg, value))
    return ReturnedCallback(class_path, tuple(args), call.lineno, tuple(positional))


_UNKNOWN: Any = object()


def _argument(node: ast.expr, me: str | None) -> Any:
    """A literal's value, an HParam for `self.hparams.NAME` / `self.hparams["NAME"]`, else _UNKNOWN."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if me is not None:
        if isinstance(node, ast.Attribute) and dotted_name(node.value) == f"{me}.hparams":
            return HParam(node.attr)
        if isinstance(node, ast.Subscript) and dotted_name(node.value) == f"{me}.hparams":
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return HParam(key.value)
    return _UNKNOWN
