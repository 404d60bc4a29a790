"""What a class's methods do: self.log to the bar, save_hyperparameters, automatic_optimization, trainer reads (in
the methods, and in the project's functions they hand the module to)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from loopgen.source.syntax import Function, Source, Visitor, call_arguments, calls_any, dotted_name, literal_name


class _HparamsCalls(Visitor):
    """The `logger` argument of each `me.save_hyperparameters(...)` call: True (absent or literal True), False,
    or None (not a literal)."""

    def __init__(self, me: str) -> None:
        self.me = me
        self.loggers: list[bool | None] = []

    def visit_Call(self, node: ast.Call) -> None:
        if dotted_name(node.func) != f"{self.me}.save_hyperparameters":
            return
        value: bool | None = True
        for keyword, star, argument in call_arguments(node):
            if keyword == "logger":
                value = {"True": True, "False": False}.get(literal_name(argument) or "")
            elif star:
                value = None  # **kwargs may hold it
        self.loggers.append(value)


# prog_bar's position: LightningModule.log(name, value, prog_bar, ...), log_dict(dictionary, prog_bar, ...)
_PROG_BAR_POSITION = {"log": 2, "log_dict": 1}


class _ProgressBarLogs(Visitor):
    """Whether a `X.log(...)` / `X.log_dict(...)` call (self.log, pl_module.log) may pass prog_bar=True: its
    `prog_bar` argument (by keyword, or the position Lightning gives it) is there and not the literal False, or
    *args / **kwargs may hold it."""

    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Attribute) or node.func.attr not in _PROG_BAR_POSITION:
            return
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        values = [k.value for k in node.keywords if k.arg == "prog_bar"]
        if len(positional) > _PROG_BAR_POSITION[node.func.attr]:
            values.append(positional[_PROG_BAR_POSITION[node.func.attr]])
        starred = any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords)
        literal_false = [literal_name(value) == "False" for value in values]
        self.found = self.found or starred or not all(literal_false)


def logs_to_bar(fn: Function) -> bool:
    finder = _ProgressBarLogs()
    finder.walk(fn.body)
    return finder.found


def logs_hparams(fn: Function, me: str, so_far: bool | None) -> bool | None:
    """Whether the hyperparameters go to the loggers, after the save_hyperparameters calls of `fn` (None: one
    call's `logger` argument is not a literal)."""
    calls = _HparamsCalls(me)
    calls.walk(fn.body)
    for value in calls.loggers:
        if value is None or so_far is None:
            so_far = None
        else:
            so_far = so_far or value
    return so_far


LOG_DICT_HOOKS = frozenset(
    {"training_step", "training_step_end", "validation_step", "training_epoch_end", "validation_epoch_end"}
)


EXPERIMENT_READ = re.compile(r"\blogger\.experiment\b|\bloggers\[[^\]]*\]\.experiment\b")


class Words(Visitor):
    """The names, attribute names and string literals of a method body, and the `me.X` attributes."""

    def __init__(self, me: str | None, source: Source) -> None:
        self.me = me
        self.source = source
        self.words: set[str] = set()
        self.strings: set[str] = set()
        self.attributes: set[str] = set()

    def name(self, text: str, attribute: bool) -> None:
        self.words.add(text)

    def visit_Name(self, node: ast.Name) -> None:
        self.words.add(node.id)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, (str, bytes)):
            self._strings(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> bool:
        self._strings(node)
        self._replacements(node)
        return False  # its own text is no string literal

    def _replacements(self, node: ast.JoinedStr) -> None:
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                self.visit(value.value)
                if isinstance(value.format_spec, ast.JoinedStr):
                    self._replacements(value.format_spec)

    def _strings(self, node: ast.expr) -> None:
        for written in self.source.strings(node):
            self.words.add(written.strip("\"'"))
            self.strings.add(written.strip("\"'"))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.words.add(node.attr)
        if isinstance(node.value, ast.Name) and node.value.id == self.me:
            self.attributes.add(node.attr)


class AutomaticOptimization(Visitor):
    """The last value a class body gives `automatic_optimization`: `self.automatic_optimization = X` in a method,
    a class attribute, or a property returning X. True (Lightning's default) until one is seen; None: not a
    literal."""

    def __init__(self) -> None:
        self.value: bool | None = True

    def _set(self, node: ast.expr | None) -> None:
        self.value = {"True": True, "False": False}.get(literal_name(node) or "")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if _is_automatic_optimization(target):
                self._set(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None and _is_automatic_optimization(node.target):
            self._set(node.value)

    def visit_FunctionDef(self, node: Function) -> None:
        if node.name == "automatic_optimization":  # a property
            returns = _ReturnValues()
            returns.walk(node.body)
            values = {literal_name(r) for r in returns.values}
            self.value = {"True": True, "False": False}.get(values.pop() or "") if len(values) == 1 else None

    visit_AsyncFunctionDef = visit_FunctionDef


class _ReturnValues(Visitor):
    def __init__(self) -> None:
        self.values: list[ast.expr | None] = []

    def visit_Return(self, node: ast.Return) -> None:
        self.values.append(node.value)


def _is_automatic_optimization(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):  # a class attribute
        return target.id == "automatic_optimization"
    return isinstance(target, ast.Attribute) and target.attr == "automatic_optimization"


def trainer_names(fn: Function, me: str | None, is_callback: bool) -> tuple[str | None, str | None, str | None]:
    """(the instance's name, the trainer parameter's name, the module parameter's name) of a method.

    A module reaches the trainer as `self.trainer`; a callback's hooks get it as their first parameter and the
    module as their second (Lightning's `(trainer, pl_module, ...)`), and reach it as `pl_module.trainer` too.
    """
    if not is_callback:
        return me, None, None
    params = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)][1 if me else 0 :]
    trainer = params[0] if params and (params[0] == "trainer" or fn.name.startswith(("on_", "setup"))) else None
    if trainer is None and "trainer" in params:
        trainer = "trainer"
    module = params[1] if trainer is not None and len(params) > 1 else None
    return None, trainer, module


class TrainerUse(Visitor):
    """The `X` of every `<trainer>.X` in a method body, and whether the trainer itself is used otherwise
    (passed to a function, stored, returned, a parameter of a nested function): then any attribute may be
    read."""

    def __init__(self, me: str | None, trainer: str | None, module: str | None) -> None:
        self.me, self.trainer, self.module = me, trainer, module
        self.reads: set[str] = set()
        self.module_reads: set[str] = set()
        self.escapes = False
        self._consumed: set[int] = set()  # trainer expressions seen as the value of an attribute access

    def _is_trainer(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id == self.trainer
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = node.value.id
            return node.attr in ("trainer", "_trainer") and owner in (self.me, self.module) and owner is not None
        return False

    def visit(self, node: ast.AST) -> None:
        if self._is_trainer(node) and id(node) not in self._consumed:
            self.escapes = True
        super().visit(node)

    def name(self, text: str, attribute: bool) -> None:
        if not attribute and text == self.trainer:
            self.escapes = True

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_trainer(node.value):
            self.reads.add(node.attr)
            self._consumed.add(id(node.value))
        elif isinstance(node.value, ast.Name) and self.module is not None and node.value.id == self.module:
            self.module_reads.add(node.attr)

    def visit_Call(self, node: ast.Call) -> None:
        # super().hook(trainer, pl_module, ...) hands the trainer to Lightning's own (empty) hook
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and dotted_name(func.value.func) == "super"
        ):
            self._consumed.update(id(value) for _, _, value in call_arguments(node))


@dataclass
class Handed:
    """What the project's functions that a method hands the module to do with it (`handed_module`)."""

    reads: set[str] = field(default_factory=set)  # trainer attributes read through it
    escapes: bool = False  # its trainer used otherwise, or the module taken by *args / **kwargs: anything may be read
    logs: bool = False  # its log / log_dict called
    attributes: set[str] = field(default_factory=set)  # the module's attributes it mentions (`module.X`)


def handed_module(
    fn: Function,
    where: Any,
    names: set[str],
    find: Callable[[Any, str], tuple[Any, Function | ast.ClassDef, str] | None],
    seen: frozenset[str] = frozenset(),
) -> Handed:
    """What the functions `fn` passes the module to (one of `names`, as an argument) read of its trainer, and
    whether they log through it: each function `find` resolves (`where`: the module `fn` is in; it gives the
    function's module, the function and a key) is followed into with the parameter that takes the module, and on
    into the functions it passes that one to. A class of the project given the module may keep it: anything may
    be read. A callee `find` does not resolve (outside the project) is not followed."""
    found = Handed()
    if not names:
        return found
    for call in (node for node in ast.walk(fn) if isinstance(node, ast.Call)):
        given = [i for i, arg in enumerate(call.args) if isinstance(arg, ast.Name) and arg.id in names]
        keywords = [k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id in names]
        callee = dotted_name(call.func)
        target = find(where, callee) if (given or keywords) and callee is not None else None
        if target is None or target[2] in seen:
            continue
        module, function, key = target
        if isinstance(function, ast.ClassDef):
            found.escapes = True  # an object of the project's keeps the module: any of its methods may read anything
            continue
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        named = {*positional, *(a.arg for a in function.args.kwonlyargs)}
        params = {positional[i] for i in given if i < len(positional)} | {k for k in keywords if k in named}
        if any(i >= len(positional) for i in given) or any(k not in named for k in keywords):
            found.escapes = True  # taken by *args or **kwargs: what reads it there is not followed
        for param in params:
            use = TrainerUse(param, None, None)
            use.walk(function.body)
            found.reads |= use.reads
            found.escapes = found.escapes or use.escapes
            found.logs = found.logs or calls_any(function, {f"{param}.log", f"{param}.log_dict"})
            found.attributes |= {
                node.attr
                for node in ast.walk(function)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param
            }
        inner = handed_module(function, module, params, find, seen | {key})
        found.reads |= inner.reads
        found.escapes = found.escapes or inner.escapes
        found.logs = found.logs or inner.logs
        found.attributes |= inner.attributes
    return found
