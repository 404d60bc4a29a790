"""The names a module binds at its top level, as Python binds them when it imports the module with Lightning
installed: read with `ast`, nothing runs (loopgen/source/modules.py follows them across modules).

- `try:` / `except ImportError:` (or ModuleNotFoundError, Exception, a bare `except:`): the try body's bindings
  when all it imports can be imported (`Importable`: Lightning, torch, the standard library, the project's
  modules and the packages installed where loopgen renders), else those of its statements before the first import
  that fails, then the handler's;
- `if` / `elif` / `else`: the branch the condition takes, when the source decides it (`TYPE_CHECKING` is false,
  `__name__` is the module's own name, not "__main__", `sys.version_info`, `sys.platform` and `os.name` are this
  interpreter's; literals, names bound to them (`_AVAILABLE = True` in the try body that runs), and `not` / `and` /
  `or` of these); otherwise the names each branch binds are alternatives (so are a `match`'s cases and a
  conditional expression's values), which the reader refuses where it uses one whose alternatives differ in what
  matters;
- imports (`import a.b`, `import a.b as c`, `from .m import n as o`, relative to the module's package), assignments
  of dotted names (`Base = pl.LightningModule`) and literals, class and function definitions, `del`; a name no
  statement binds is a builtin, or comes from a `from m import *` (`Scope.stars`).
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from loopgen.source.syntax import FUNCTIONS, Function, dotted_name

# whether `from module import name` (`import module`: name None) succeeds where the script runs
Importable = Callable[[str, "str | None"], bool]

# the exceptions an `except` clause names that catch a failed import
_CATCHES_IMPORT_ERROR = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@dataclass(frozen=True, eq=False)
class Bound:
    """One value a module-level name may have at run time."""

    # the absolute dotted name it was imported as or assigned ("lightning.pytorch", "proj.base.Base",
    # "builtins.object"); a class or function the module defines; a literal (`_AVAILABLE = True`: a flag a condition
    # may test); None: a value the reader does not follow
    value: str | ast.ClassDef | Function | ast.Constant | None
    line: int  # the statement that binds it
    condition: int | None = None  # the line of the condition loopgen cannot decide that makes it one of several


@dataclass(frozen=True)
class Scope:
    """A module's names: each with the values it may have (several only under conditions loopgen cannot decide;
    none: the name is not bound), and the modules its `from m import *` statements read, in source order."""

    names: dict[str, tuple[Bound, ...]]
    stars: tuple[str, ...]


def module_scope(
    name: str, package: str, body: Sequence[ast.stmt], importable: Importable, stop: ast.stmt | None = None
) -> Scope:
    """The names the module `name` (in `package`) binds: at its end, or just before the statement `stop`."""
    binder = _Binder(name, package, importable, stop)
    names: dict[str, tuple[Bound, ...]] = {}
    try:
        binder.block(body, names)
    except _Stop as stopped:
        names = stopped.names
    return Scope(names, tuple(binder.stars))


def qualify(names: dict[str, tuple[Bound, ...]], expr: str) -> tuple[Bound, ...]:
    """The values the dotted expression `expr` may have against module-level `names`: `pl.LightningModule` with
    `pl` bound to "lightning.pytorch" is "lightning.pytorch.LightningModule"; an attribute of a class or of
    something the reader does not follow is None; () when its first name is not bound (nor a builtin)."""
    head, _, rest = expr.partition(".")
    if head not in names:
        return (Bound(f"builtins.{expr}", 0),) if hasattr(builtins, head) else ()
    return tuple(_attribute(bound, rest) for bound in names[head])


def import_source(package: str, node: ast.ImportFrom) -> str | None:
    """The absolute module name `from ... import` reads from, in a module of `package`; None for a relative
    import above the top package."""
    name = node.module
    level = node.level
    if not level:
        return name
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    return ".".join([*parts[: len(parts) - level + 1], *([name] if name else [])]) or None


def class_expression(node: ast.expr) -> str | None:
    """The dotted name a base class is written as: `Base[T]` (a generic's alias) is `Base`; None for anything
    else (a call, a starred list)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return dotted_name(node)


def _attribute(bound: Bound, rest: str) -> Bound:
    if not rest or bound.value is None:
        return bound
    value = f"{bound.value}.{rest}" if isinstance(bound.value, str) else None
    return replace(bound, value=value)


class _Stop(Exception):  # not an error: the statement the scope is read up to was reached
    def __init__(self, names: dict[str, tuple[Bound, ...]]) -> None:
        super().__init__()
        self.names = names


class _Unknown(Exception):  # not an error: a condition's value the source does not show
    pass


class _Binder:
    """Walks a module's top-level statements as an import runs them."""

    def __init__(self, name: str, package: str, importable: Importable, stop: ast.stmt | None) -> None:
        self.name, self.package, self.importable, self.stop = name, package, importable, stop
        self.stars: list[str] = []

    def block(self, statements: Sequence[ast.stmt], names: dict[str, tuple[Bound, ...]]) -> None:
        for statement in statements:
            if statement is self.stop:
                raise _Stop(names)
            self.statement(statement, names)

    def statement(self, node: ast.stmt, names: dict[str, tuple[Bound, ...]]) -> None:
        line = node.lineno
        if isinstance(node, (ast.ClassDef, *FUNCTIONS)):
            names[node.name] = (Bound(node, line),)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                names[alias.asname or top] = (Bound(alias.name if alias.asname else top, line),)
        elif isinstance(node, ast.ImportFrom):
            source = import_source(self.package, node)
            for alias in node.names:
                if alias.name == "*":
                    self.stars += [source] if source else []
                else:
                    names[alias.asname or alias.name] = (Bound(source and f"{source}.{alias.name}", line),)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            values = self.value(node.value, names, line)
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self.assign(target, node.value, values, names, line)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
            self.assign(node.target, None, (Bound(None, line),), names, line)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names.pop(target.id, None)
        elif isinstance(node, ast.If):
            self.conditional(node, names)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.attempt(node, names)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.block(node.body, names)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            self.block(node.body, names)
            self.block(node.orelse, names)
        elif isinstance(node, ast.Match):
            cases = [case.body for case in node.cases]
            irrefutable = any(
                isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None and case.guard is None
                for case in node.cases
            )
            self.branches(cases if irrefutable else [*cases, []], names, line)

    def conditional(self, node: ast.If, names: dict[str, tuple[Bound, ...]]) -> None:
        """An if / elif / else chain (read as one, however long): the branch the conditions take; the branches from
        the first condition loopgen cannot decide to the first that holds, when there is one."""
        chain, last = [(node.test, node.body)], node.orelse
        while len(last) == 1 and isinstance(last[0], ast.If):
            chain.append((last[0].test, last[0].body))
            last = last[0].orelse
        blocks = []
        for test, body in chain:
            decided = self.decide(test, names)
            if decided is not False:
                blocks.append(body)
            if decided is True:
                break
        else:
            blocks.append(last)
        if len(blocks) == 1:
            self.block(blocks[0], names)
        else:
            self.branches(blocks, names, node.lineno)

    def assign(
        self,
        target: ast.expr,
        node: ast.expr | None,
        values: tuple[Bound, ...],
        names: dict[str, tuple[Bound, ...]],
        line: int,
    ) -> None:
        if isinstance(target, ast.Name):
            names[target.id] = values
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == len(target.elts)
            for i, element in enumerate(target.elts):
                if pairs and not isinstance(element, ast.Starred):
                    value = node.elts[i]  # type: ignore[union-attr]
                    self.assign(element, value, self.value(value, names, line), names, line)
                else:
                    self.assign(element, None, (Bound(None, line),), names, line)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, None, (Bound(None, line),), names, line)

    def value(self, node: ast.expr, names: dict[str, tuple[Bound, ...]], line: int) -> tuple[Bound, ...]:
        """What a name assigned `node` may be: the dotted name it refers to, or either value of a conditional
        expression the source does not decide."""
        if isinstance(node, ast.IfExp):
            decided = self.decide(node.test, names)
            if decided is not None:
                return self.value(node.body if decided else node.orelse, names, line)
            either = [*self.value(node.body, names, line), *self.value(node.orelse, names, line)]
            return tuple(b if b.condition is not None else replace(b, condition=line) for b in either)
        if isinstance(node, ast.Constant):
            return (Bound(node, line),)
        expr = class_expression(node)
        found = qualify(names, expr) if expr is not None else ()
        return tuple(replace(b, line=line) for b in found) or (Bound(None, line),)

    def branches(self, blocks: Sequence[Sequence[ast.stmt]], names: dict[str, tuple[Bound, ...]], line: int) -> None:
        """Each block may run: a name each binds has the values of all (a block that deletes it or leaves it unbound
        adds none: using it there fails)."""
        before = dict(names)
        outcomes = []
        for block in blocks:
            outcome = dict(before)
            self.block(block, outcome)
            outcomes.append(outcome)
        names.clear()
        for key in dict.fromkeys(key for outcome in outcomes for key in outcome):
            values = list(dict.fromkeys(b for outcome in outcomes for b in outcome.get(key, ())))
            if len(values) > 1:
                values = [b if b.condition is not None else replace(b, condition=line) for b in values]
            names[key] = tuple(values)

    def attempt(self, node: ast.Try, names: dict[str, tuple[Bound, ...]]) -> None:
        """A try statement: its body and else when all the body imports can be imported; else its statements up
        to the failing import, then the first handler that catches an ImportError; its finally block."""
        handler = next((h for h in node.handlers if _catches_import_error(h.type)), None)
        failing = None
        if handler is not None:
            failing = next((i for i, s in enumerate(node.body) if not self.imports_succeed(s)), None)
        if failing is None or handler is None:
            self.block(node.body, names)
            self.block(node.orelse, names)
        else:
            self.block(node.body[:failing], names)
            self.block(handler.body, names)
        self.block(node.finalbody, names)

    def imports_succeed(self, statement: ast.stmt) -> bool:
        pending: list[ast.AST] = [statement]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Import) and not all(self.importable(a.name, None) for a in node.names):
                return False
            if isinstance(node, ast.ImportFrom):
                source = import_source(self.package, node)
                wanted = [None if a.name == "*" else a.name for a in node.names]
                if source is None or not all(self.importable(source, name) for name in wanted):
                    return False
            if not isinstance(node, (ast.ClassDef, *FUNCTIONS, ast.Lambda)):
                pending.extend(ast.iter_child_nodes(node))
        return True

    def decide(self, test: ast.expr, names: dict[str, tuple[Bound, ...]]) -> bool | None:
        """The condition's truth when the source decides it; None when it does not."""
        if isinstance(test, ast.BoolOp):
            parts = [self.decide(value, names) for value in test.values]
            settles = isinstance(test.op, ast.Or)  # True settles an `or`, False an `and`
            if settles in parts:
                return settles
            return None if None in parts else not settles
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.decide(test.operand, names)
            return None if inner is None else not inner
        if (dotted_name(test) or "").rpartition(".")[2] == "TYPE_CHECKING":
            return False
        try:
            return bool(self.evaluate(test, names))
        except _Unknown:
            return None

    def evaluate(self, node: ast.expr, names: dict[str, tuple[Bound, ...]]) -> object:
        """The value of a literal, of a name bound to one (`if _AVAILABLE:` after `_AVAILABLE = True` in the try
        body that runs), of `__name__`, of `sys.version_info` (its items, slices, major / minor / micro),
        `sys.platform` and `os.name`, and of comparisons of these; _Unknown otherwise."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(self.evaluate(element, names) for element in node.elts)
        if isinstance(node, ast.Name) and node.id == "__name__" and node.id not in names:
            return self.name
        if isinstance(node, ast.Subscript):
            return _apply(lambda: self.evaluate(node.value, names)[self.index(node.slice, names)])  # type: ignore
        if isinstance(node, ast.Compare):
            left = self.evaluate(node.left, names)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.evaluate(comparator, names)
                if not _apply(lambda op=op, left=left, right=right: _COMPARE[type(op)](left, right)):
                    return False
                left = right
            return True
        dotted = dotted_name(node)
        values = qualify(names, dotted) if dotted else ()
        literals = {b.value.value for b in values if isinstance(b.value, ast.Constant)}
        if values and len(literals) == 1 and all(isinstance(b.value, ast.Constant) for b in values):
            return literals.pop()  # a flag, set the same on every branch that may run
        if len(values) == 1 and isinstance(value := values[0].value, str):
            if value == "sys.platform":
                return sys.platform
            if value == "os.name":
                return os.name
            if value == "sys.version_info":
                return sys.version_info
            if value.startswith("sys.version_info.") and value[17:] in ("major", "minor", "micro"):
                return getattr(sys.version_info, value[17:])
        raise _Unknown

    def index(self, node: ast.expr, names: dict[str, tuple[Bound, ...]]) -> object:
        if isinstance(node, ast.Slice):
            bounds = (node.lower, node.upper, node.step)
            return slice(*(None if part is None else self.evaluate(part, names) for part in bounds))
        return self.evaluate(node, names)


_COMPARE: dict[type, Callable[[object, object], object]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,  # type: ignore[operator]
    ast.LtE: lambda a, b: a <= b,  # type: ignore[operator]
    ast.Gt: lambda a, b: a > b,  # type: ignore[operator]
    ast.GtE: lambda a, b: a >= b,  # type: ignore[operator]
    ast.In: lambda a, b: a in b,  # type: ignore[operator]
    ast.NotIn: lambda a, b: a not in b,  # type: ignore[operator]
}


def _apply(compute: Callable[[], object]) -> object:
    """`compute()`, or _Unknown when it fails (values that do not compare, an index out of range)."""
    try:
        return compute()
    except (TypeError, IndexError, KeyError, ValueError) as error:
        raise _Unknown from error


def _catches_import_error(node: ast.expr | None) -> bool:
    if node is None:  # a bare `except:`
        return True
    if isinstance(node, ast.Tuple):
        return any(_catches_import_error(element) for element in node.elts)
    return (dotted_name(node) or "").rpartition(".")[2] in _CATCHES_IMPORT_ERROR
