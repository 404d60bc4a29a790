"""What the spec fixes in a module's source: the values its attributes and hyperparameters take from the spec's
`model.init_args`, so that the reader can follow the branch of configure_optimizers the spec selects.

A public module often chooses its optimizer and scheduler by an init argument (`if self.hparams.optimizer ==
"adam": ...`). The spec gives that argument as a YAML literal and the script constructs the module with it, so
the test's value is known when the script is rendered. Known here, read from the `__init__` the class gets:

- `self.name`, set by a statement at the top level of `__init__` (not under `if`, `for`, `try`) to one of its
  parameters or to a literal, and assigned nowhere else in the class or its bases in the user's code;
- `self.hparams.name` / `self.hparams["name"]`, when that `__init__` calls `self.save_hyperparameters()` at its
  top level (all its parameters but those in `ignore`, or the names it lists), and nothing else in the classes
  calls it or writes to `hparams`.

A parameter's value is the spec's (a plain YAML value), else its default written as a literal. Anything else
(a parameter rebound in `__init__`, `setattr`, `self.__dict__`, a class given as an argument) is not known, and
the reader then treats the test as it did before: the shape is decided when the script runs.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopgen.source.syntax import FUNCTIONS, Function, self_name

_PLAIN = (str, int, float, bool, type(None))


class Unfixed(Exception):
    """The expression's value is not fixed by the spec."""


@dataclass(frozen=True)
class Fixed:
    """The attribute and hyperparameter values the spec fixes (see the module's docstring)."""

    attributes: Mapping[str, Any] = field(default_factory=dict)
    hparams: Mapping[str, Any] | None = None  # None: not known (no save_hyperparameters, or written elsewhere)

    def value(self, node: ast.expr, me: str | None, local: Mapping[str, Any]) -> Any:
        """The value of `node` in a method whose instance is `me`, with the local names `local` known; raises
        Unfixed when the spec does not fix it."""
        try:
            return self._value(node, me, local)
        except Unfixed:
            raise
        except (TypeError, ValueError, RecursionError):  # what the values do not support (`"a" < 1`)
            raise Unfixed from None

    def _value(self, node: ast.expr, me: str | None, local: Mapping[str, Any]) -> Any:
        value = lambda inner: self._value(inner, me, local)
        if isinstance(node, ast.Constant) and isinstance(node.value, _PLAIN):
            return node.value
        if isinstance(node, ast.Name) and node.id in local:
            return local[node.id]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return _DISPLAYS[type(node)](value(e) for e in node.elts)
        if isinstance(node, ast.Attribute) and _is_name(node.value, me) and node.attr in self.attributes:
            return self.attributes[node.attr]
        if isinstance(node, ast.Attribute) and self._is_hparams(node.value, me):
            return self._hparam(node.attr)
        if (
            isinstance(node, ast.Subscript)
            and self._is_hparams(node.value, me)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            return self._hparam(node.slice.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not value(node.operand)
        if isinstance(node, ast.BoolOp):
            result = value(node.values[0])
            for inner in node.values[1:]:
                if bool(result) == isinstance(node.op, ast.Or):  # short-circuits as Python does
                    return result
                result = value(inner)
            return result
        if isinstance(node, ast.Compare):
            left = value(node.left)
            for op, inner in zip(node.ops, node.comparators):
                right = value(inner)
                if not _COMPARISONS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return value(node.body) if value(node.test) else value(node.orelse)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
            return self._method(node.func, [value(a) for a in node.args], me, local)
        raise Unfixed

    def _method(self, func: ast.Attribute, args: list[Any], me: str | None, local: Mapping[str, Any]) -> Any:
        if self._is_hparams(func.value, me) and func.attr == "get" and args and isinstance(args[0], str):
            if self.hparams is None:
                raise Unfixed
            default = args[1] if len(args) > 1 else None
            return self.hparams.get(args[0], default)
        owner = self._value(func.value, me, local)
        if isinstance(owner, str) and func.attr in _STRING_METHODS:
            return getattr(owner, func.attr)(*args)
        raise Unfixed

    def _hparam(self, name: str) -> Any:
        if self.hparams is None or name not in self.hparams:
            raise Unfixed
        return self.hparams[name]

    @staticmethod
    def _is_hparams(node: ast.expr, me: str | None) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "hparams" and _is_name(node.value, me)


_DISPLAYS: Mapping[type, Callable[[Any], Any]] = {ast.Tuple: tuple, ast.List: list, ast.Set: set}

_COMPARISONS: Mapping[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}

# what a test may call on a string it knows (`self.hparams.optimizer.lower() == "adam"`)
_STRING_METHODS = frozenset({"lower", "upper", "casefold", "strip", "startswith", "endswith"})


def _is_name(node: ast.expr, name: str | None) -> bool:
    return name is not None and isinstance(node, ast.Name) and node.id == name


def fixed_values(
    init: Function, classes: Sequence[ast.ClassDef], args: Mapping[str, Any], defaults: Mapping[str, Any]
) -> Fixed:
    """The values the spec's `args` (a module's init_args) fix, for the class whose `__init__` is `init` (its
    literal `defaults`: the reader's Signature.defaults) and whose bases in the user's code, with it, are
    `classes`."""
    me = self_name(init)
    if me is None or init.decorator_list:
        return Fixed()
    p = init.args
    named = [param.arg for param in [*p.posonlyargs, *p.args][1:] + p.kwonlyargs]
    rebound = {target.id for target in _stores(init.body) if isinstance(target, ast.Name)}
    values = {**defaults, **args}  # a value that is not plain is known at run time only
    values = {name: value for name, value in values.items() if _plain(value)}
    params = {name: values[name] for name in named if name in values and name not in rebound}

    attributes: dict[str, Any] = {}
    hparams: dict[str, Any] | None = None
    kept: set[int] = set()  # the statements that set what is known
    for statement in init.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Attribute)
            and _is_name(statement.targets[0].value, me)
        ):
            name, right = statement.targets[0].attr, statement.value
            if isinstance(right, ast.Name) and right.id in params:
                attributes[name] = params[right.id]
                kept.add(id(statement.targets[0]))
            elif isinstance(right, ast.Constant) and isinstance(right.value, _PLAIN):
                attributes[name] = right.value
                kept.add(id(statement.targets[0]))
        elif isinstance(statement, ast.Expr) and _calls(statement.value, me, "save_hyperparameters"):
            hparams = _saved(statement.value, named, params)  # type: ignore[arg-type]
            kept.add(id(statement.value))

    for cls in classes:
        defined = {s.name for s in cls.body if isinstance(s, (*FUNCTIONS, ast.ClassDef))}
        for name in defined:  # a property or method of that name is not the attribute set in __init__
            attributes.pop(name, None)
        for fn in (s for s in cls.body if isinstance(s, FUNCTIONS)):
            mine = self_name(fn)
            for target in _stores(fn.body):
                if id(target) in kept:
                    continue
                if isinstance(target, ast.Attribute) and _is_name(target.value, mine):
                    attributes.pop(target.attr, None)
                    if target.attr == "hparams":
                        hparams = None
                if _reaches_hparams(target, mine):
                    hparams = None
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and id(node) not in kept:
                    name = _called(node)
                    if name == "setattr" or name.endswith(".__setattr__"):
                        attributes.clear()
                    if name.endswith("save_hyperparameters") or (
                        name.rpartition(".")[0].endswith(".hparams") and not name.endswith(".get")
                    ):
                        hparams = None  # saved or changed elsewhere (`self.hparams.update(...)`)
                if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "_hparams"):
                    attributes.clear()
                    hparams = None
    return Fixed(attributes, hparams)


def _saved(call: ast.Call, named: list[str], params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The hyperparameters `self.save_hyperparameters(...)` saves, as far as the spec fixes them; None when the
    call's arguments do not show which."""
    if any(not (isinstance(a, ast.Constant) and isinstance(a.value, str)) for a in call.args):
        return None  # a dict, a namespace, a starred list
    names = [a.value for a in call.args] or list(named)  # type: ignore[misc]
    for keyword in call.keywords:
        if keyword.arg == "ignore":
            try:
                ignored = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
            ignored = [ignored] if isinstance(ignored, str) else ignored
            if not isinstance(ignored, (list, tuple)):
                return None
            names = [name for name in names if name not in ignored]
        elif keyword.arg not in ("logger", "frame"):
            return None
    return {name: params[name] for name in names if name in params}


def _plain(value: Any) -> bool:
    """A value a test can be decided on: a YAML scalar, or a list of them (not a class given as an argument)."""
    if isinstance(value, (list, tuple)):
        return all(isinstance(item, _PLAIN) for item in value)
    return isinstance(value, _PLAIN)


def _stores(body: Sequence[ast.stmt]) -> list[ast.expr]:
    """Every expression stored to or deleted in `body` (nested functions and comprehensions included)."""
    found: list[ast.expr] = []
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and isinstance(
                getattr(node, "ctx", None), (ast.Store, ast.Del)
            ):
                found.append(node)
            elif isinstance(node, FUNCTIONS):
                found.extend(ast.Name(id=a.arg, ctx=ast.Store()) for a in _all_args(node))
    return found


def _all_args(fn: Function) -> list[ast.arg]:
    p = fn.args
    return [*p.posonlyargs, *p.args, *p.kwonlyargs, *([p.vararg] if p.vararg else []), *([p.kwarg] if p.kwarg else [])]


def _reaches_hparams(target: ast.expr, me: str | None) -> bool:
    """Whether a store writes into the hyperparameters (`self.hparams.lr = ...`, `self.hparams["lr"] = ...`)."""
    node = target
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        inner = node.value
        if isinstance(inner, ast.Attribute) and inner.attr == "hparams" and _is_name(inner.value, me):
            return True
        node = inner
    return False


def _calls(node: ast.expr, me: str | None, method: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and _is_name(node.func.value, me)
    )


def _called(node: ast.Call) -> str:
    """The dotted name a call calls (`self.hparams.update`), "" when it is not a name."""
    parts = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    return ".".join([func.id, *reversed(parts)])
