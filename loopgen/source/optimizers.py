"""The shape of what configure_optimizers returns (optimizers, schedulers, their configs), read without running it."""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping
from typing import Any

from loopgen.source.facts import OptimizersFacts, SchedulerFacts
from loopgen.source.fixed import Fixed, Unfixed
from loopgen.source.syntax import FUNCTIONS, Function, Source, Visitor, call_arguments, dotted_name, self_name

_OPTIMIZER_KEYS = frozenset({"optimizer", "lr_scheduler", "monitor", "frequency"})


_SCHEDULER_KEYS = frozenset({"scheduler", "interval", "frequency", "monitor", "strict", "name", "reduce_on_plateau"})


# statements with a body of their own
_COMPOUND = tuple(
    getattr(ast, name) for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar", "Match")
    if hasattr(ast, name)
)  # fmt: skip


def read_optimizers(fn: Function, source: Source, fixed: Fixed | None = None) -> OptimizersFacts | str:
    """What configure_optimizers returns, from its source: the facts, or why the source does not show them.

    The body must end in its only return statement, with plain statements before it (assignments, calls,
    nested functions); the names the return uses are followed through the assignments. Optimizers and
    schedulers must be built by calling a class (`torch.optim.SGD(...)`, `StepLR(...)`). An `if` whose test
    the spec decides (`fixed`: the values the spec's init_args give the module) is read as the branch taken,
    and so is a conditional expression (`StepLR(...) if self.hparams.step else None`).
    """
    fixed = fixed or Fixed()
    me = self_name(fn)
    body = _taken(fn.body, fixed, me)
    raised = next((s for s in body if isinstance(s, (ast.Raise, *_COMPOUND))), None)
    if isinstance(raised, ast.Raise):
        return f"configure_optimizers raises (line {raised.lineno}) with the init_args the spec gives its module"
    returns = _Returns()
    returns.walk(body)
    if returns.count != 1:
        return "configure_optimizers returns from more than one place"
    # each assignment binds a new version of its name ("scheduler#2"), and the names an expression reads are
    # those bound before it: `scheduler = {"scheduler": scheduler, ...}` reads the scheduler built above it
    names: dict[str, ast.expr] = {}
    current: dict[str, str] = {}
    returned: ast.expr | None = None

    def bind(name: str, value: ast.expr) -> None:
        version = f"{name}#{len(names)}"
        names[version] = value
        current[name] = version

    for statement in body:
        if isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(statement, _COMPOUND):
            return "configure_optimizers' return depends on control flow (if, for, with, try)"
        if isinstance(statement, ast.Return):
            returned = _Versions(current).read(statement.value)
        elif isinstance(statement, ast.Assign):
            value = _Versions(current).read(statement.value)
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    bind(target.id, value)  # type: ignore[arg-type]
                elif _unpacked(target, value):  # `optims, scheds = [], []`
                    for item, item_value in zip(target.elts, value.elts):  # type: ignore[attr-defined]
                        bind(item.id, item_value)  # type: ignore[attr-defined]
                elif (entry := _dict_entry(target, names, current)) is not None:
                    name, kept, key = entry  # `config["lr_scheduler"] = scheduler`: the dict with that entry
                    keys = [k for k in kept.keys if not (isinstance(k, ast.Constant) and k.value == key)]
                    values = [v for k, v in zip(kept.keys, kept.values) if k in keys]
                    bind(name, ast.copy_location(ast.Dict(keys=[*keys, target.slice], values=[*values, value]), kept))
                else:
                    _forget_targets(target, current)
                    _forget_container(target, names, current)
        elif (
            isinstance(statement, ast.AnnAssign)
            and statement.value is not None
            and isinstance(statement.target, ast.Name)
        ):
            bind(statement.target.id, _Versions(current).read(statement.value))  # type: ignore[arg-type]
        elif isinstance(statement, (ast.Expr, ast.AugAssign)) and (grown := _grown(statement)) is not None:
            name, added = grown
            kept = names.get(current.get(name, ""))
            if not isinstance(kept, (ast.List, ast.Name)):
                current.pop(name, None)  # not a list the source shows: what it holds is unknown
                continue
            if isinstance(kept, ast.Name) or _held_elsewhere(current[name], names):  # another name's list too
                return f"configure_optimizers grows `{name}` (line {statement.lineno}), a list not built in it alone"
            grown_list = ast.copy_location(ast.List(elts=[*kept.elts, *_Versions(current).read_all(added)]), kept)
            bind(name, grown_list)
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
            _forget_targets(statement.target, current)
        elif isinstance(statement, ast.Expr):
            for node in ast.walk(statement):  # a method call may change the list or dict it is called on
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    _forget_container(node.func.value, names, current)
    if returned is None:
        return "configure_optimizers returns nothing"
    try:
        return _Shape(names, source, fn, fixed).read(returned)
    except _Unknown as unknown:
        return str(unknown)


def _taken(body: list[ast.stmt], fixed: Fixed, me: str | None) -> list[ast.stmt]:
    """`body` with each `if` whose test the spec decides replaced by the branch taken, up to the first return
    (what follows it never runs). The local names the tests read are known while their values are."""
    taken: list[ast.stmt] = []
    local: dict[str, object] = {}
    pending = list(body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, ast.If):
            try:
                test = fixed.value(statement.test, me, local)
            except Unfixed:
                taken.append(statement)  # read as control flow
                continue
            pending[:0] = statement.body if test else statement.orelse
            continue
        taken.append(statement)
        if isinstance(statement, (ast.Return, ast.Raise)):
            break
        if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
            try:
                value = fixed.value(statement.value, me, local)
            except Unfixed:
                for target in statement.targets:
                    local.pop(target.id, None)  # type: ignore[attr-defined]
            else:
                local.update({target.id: value for target in statement.targets})  # type: ignore[attr-defined]
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                local.pop(node.id, None)
    return taken


class _Versions(ast.NodeTransformer):
    """A copy of an expression whose names read the versions bound so far (their source positions kept)."""

    def __init__(self, current: Mapping[str, str]) -> None:
        self.current = current

    def read(self, node: ast.expr | None) -> ast.expr | None:
        return None if node is None else self.visit(copy.deepcopy(node))

    def read_all(self, nodes: list[ast.expr]) -> list[ast.expr]:
        return [self.visit(copy.deepcopy(node)) for node in nodes]

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if isinstance(node.ctx, ast.Load) and node.id in self.current:
            return ast.copy_location(ast.Name(id=self.current[node.id], ctx=node.ctx), node)
        return node


class _Unknown(Exception):
    """The source does not show what configure_optimizers returns (the message says why)."""


class _Returns(Visitor):
    def __init__(self) -> None:
        self.count = 0

    def visit_Return(self, node: ast.Return) -> None:
        self.count += 1

    def visit_FunctionDef(self, node: Function) -> bool:
        return False  # a nested function's returns are its own

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> bool:
        return False


def _grown(statement: ast.Expr | ast.AugAssign) -> tuple[str, list[ast.expr]] | None:
    """(name, elements added) of `name.append(x)`, `name.extend([x, y])` or `name += [x, y]`; None otherwise."""
    if isinstance(statement, ast.AugAssign):
        target, added = statement.target, statement.value
        if not isinstance(statement.op, ast.Add) or not isinstance(added, (ast.List, ast.Tuple)):
            return None
        return (target.id, list(added.elts)) if isinstance(target, ast.Name) else None
    call = statement.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) or call.keywords:
        return None
    owner, method = call.func.value, call.func.attr
    if not isinstance(owner, ast.Name) or len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return None
    if method == "append":
        return owner.id, [call.args[0]]
    if method == "extend" and isinstance(call.args[0], (ast.List, ast.Tuple)):
        return owner.id, list(call.args[0].elts)
    return None


def _unpacked(target: ast.expr, value: ast.expr | None) -> bool:
    """Whether `target = value` binds names one by one to the items of a list or tuple the source shows."""
    return (
        isinstance(target, (ast.Tuple, ast.List))
        and isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and all(isinstance(e, ast.Name) for e in target.elts)
        and not any(isinstance(e, ast.Starred) for e in value.elts)
    )


def _dict_entry(
    target: ast.expr, names: Mapping[str, ast.expr], current: Mapping[str, str]
) -> tuple[str, ast.Dict, str] | None:
    """(name, dict, key) of an assignment to `name["key"]`, where `name` holds a dict the source shows."""
    if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)):
        return None
    key = target.slice
    kept = names.get(current.get(target.value.id, ""))
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(kept, ast.Dict)):
        return None
    if None in kept.keys or _held_elsewhere(current[target.value.id], names):
        return None
    return target.value.id, kept, key.value


def _forget_container(node: ast.expr, names: Mapping[str, ast.expr], current: dict[str, str]) -> None:
    """Forget the name under `node` (`config` of `config["k"]`, `config.update`) when it holds a list or a dict
    the source shows: its contents changed in a way the reader does not follow."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    if isinstance(node, ast.Name) and isinstance(names.get(current.get(node.id, "")), (ast.List, ast.Dict)):
        current.pop(node.id, None)


def _held_elsewhere(version: str, names: Mapping[str, ast.expr]) -> bool:
    """Whether a binding holds the list `version` itself (an alias, an element), not an item of it (`l[0]`)."""
    for value in names.values():
        pending: list[ast.AST] = [value]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Name) and node.id == version:
                return True
            if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
                pending.extend(ast.iter_child_nodes(node))
    return False


def _forget_targets(target: ast.expr, names: dict[str, str]) -> None:
    elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else []
    for node in (target, *(e.value if isinstance(e, ast.Starred) else e for e in elements)):
        if isinstance(node, ast.Name):
            names.pop(node.id, None)


def _element(node: ast.expr) -> ast.expr:
    """A list or tuple element without its star."""
    return node.value if isinstance(node, ast.Starred) else node


class _Shape:
    """Reads one return expression of configure_optimizers, following local names."""

    def __init__(self, names: Mapping[str, ast.expr], source: Source, fn: Function, fixed: Fixed) -> None:
        self.names = names
        self.source = source
        self.fn = fn
        self.fixed = fixed
        self.optimizer_nodes: list[ast.expr] = []

    def resolve(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> ast.expr:
        while True:
            if isinstance(node, ast.Name) and node.id in self.names and node.id not in seen:
                seen = seen | {node.id}
                node = self.names[node.id]
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.slice, ast.Constant)
                and type(node.slice.value) is int
                and isinstance(listed := self.resolve(node.value, seen), (ast.List, ast.Tuple))
                and -len(listed.elts) <= node.slice.value < len(listed.elts)
                and not any(isinstance(e, ast.Starred) for e in listed.elts)
            ):
                node = listed.elts[node.slice.value]  # `optimizers[0]`: an item of a list the source shows
            elif isinstance(node, ast.IfExp):
                try:
                    test = self.fixed.value(node.test, self_name(self.fn), {})
                except Unfixed:
                    return node
                node = node.body if test else node.orelse
            else:
                return node

    def read(self, returned: ast.expr) -> OptimizersFacts:
        node = self.resolve(returned)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.resolve(e) for e in node.elts if not isinstance(e, ast.Starred)]
            if len(items) != len(node.elts):
                raise _Unknown("configure_optimizers returns a list built with *")
            if len(items) == 2 and all(isinstance(i, (ast.List, ast.Tuple)) for i in items):
                optimizers = [self.optimizer(_element(e)) for e in items[0].elts]  # type: ignore[attr-defined]
                schedulers = [self.scheduler(_element(e)) for e in items[1].elts]  # type: ignore[attr-defined]
                return OptimizersFacts("lists", tuple(optimizers), tuple(schedulers))
            if items and all(isinstance(i, ast.Dict) for i in items):
                configs = [self.optimizer_dict(item) for item in items]  # type: ignore[arg-type]
                frequencies = [config[3] for config in configs]
                return OptimizersFacts(
                    "dicts",
                    tuple(config[0] for config in configs),
                    tuple(s for index, config in enumerate(configs) for s in config[1](index)),
                    frequencies=tuple(frequencies) if all(f is not None for f in frequencies) else None,
                )
            return OptimizersFacts("optimizers", tuple(self.optimizer(item) for item in items))
        if isinstance(node, ast.Dict):
            optimizer, schedulers, monitor, frequency = self.optimizer_dict(node)
            frequencies = None if frequency is None else (frequency,)
            return OptimizersFacts("dict", (optimizer,), tuple(schedulers(0)), monitor, frequencies)
        return OptimizersFacts("optimizer", (self.optimizer(node),))

    def optimizer(self, node: ast.expr) -> str:
        node = self.resolve(node)
        cls = _class_called(node)
        if cls is None:
            raise _Unknown(f"configure_optimizers returns {self.describe(node)}, not an optimizer built in it")
        self.optimizer_nodes.append(node)
        return cls

    def optimizer_dict(self, node: ast.Dict) -> tuple[str, Any, str | None, int | None]:
        """(optimizer class, schedulers(index) -> its SchedulerFacts, monitor, frequency) of an optimizer dict."""
        entries = self.entries(node, _OPTIMIZER_KEYS, "an optimizer dict")
        if "optimizer" not in entries:
            raise _Unknown('configure_optimizers returns a dict without an "optimizer" key')
        optimizer = self.optimizer(entries["optimizer"])
        index = len(self.optimizer_nodes) - 1
        monitor = self.literal(entries["monitor"], "monitor") if "monitor" in entries else None
        frequency = self.literal(entries["frequency"], "frequency") if "frequency" in entries else None
        scheduler = entries.get("lr_scheduler")

        def schedulers(_: int) -> list[SchedulerFacts]:
            if scheduler is None:
                return []
            facts = self.scheduler(scheduler)
            return [SchedulerFacts(facts.cls, index, facts.config, facts.name, facts.name_known)]

        return optimizer, schedulers, monitor, frequency

    def scheduler(self, node: ast.expr) -> SchedulerFacts:
        node = self.resolve(node)
        if isinstance(node, ast.Dict):
            entries = self.entries(node, _SCHEDULER_KEYS, "an lr_scheduler dict")
            if "scheduler" not in entries:
                raise _Unknown('configure_optimizers returns an lr_scheduler dict without a "scheduler" key')
            bare = self.scheduler(entries.pop("scheduler"))
            name, name_known = None, True
            if "name" in entries:  # only for logging the learning rate: not a reason to unpack at run time
                try:
                    name = self.literal(entries.pop("name"), "name")
                except _Unknown:
                    name_known = False
            config = {key: self.literal(value, key) for key, value in entries.items()}
            return SchedulerFacts(bare.cls, bare.optimizer, config, name, name_known)
        cls = _class_called(node)
        if cls is None or not isinstance(node, ast.Call):
            raise _Unknown(f"configure_optimizers returns {self.describe(node)}, not a scheduler built in it")
        first = next((value for keyword, _, value in call_arguments(node) if keyword in (None, "optimizer")), None)
        target = self.resolve(first) if first is not None else None
        index = next((i for i, o in enumerate(self.optimizer_nodes) if o is target), None)
        return SchedulerFacts(cls, index)

    def entries(self, node: ast.Dict, known: frozenset[str], what: str) -> dict[str, ast.expr]:
        entries = {}
        for key_node, value in zip(node.keys, node.values):
            if not self.one_string(key_node):
                raise _Unknown(f"configure_optimizers returns {what} whose keys are not all written out")
            key = key_node.value  # type: ignore[union-attr]
            if key not in known:
                raise _Unknown(f"configure_optimizers returns {what} with the key {key!r}")
            entries[key] = value
        return entries

    def one_string(self, node: ast.expr | None) -> bool:
        """Whether `node` is one string literal (not several side by side, not an f-string)."""
        if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
            return False
        return len(self.source.strings(node)) == 1

    def literal(self, node: ast.expr, key: str) -> Any:
        node = self.resolve(node)
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError):
            raise _Unknown(
                f'configure_optimizers sets "{key}" to {self.describe(node)}, known only at run time'
            ) from None

    def describe(self, node: ast.expr) -> str:
        code = " ".join(self.source.code(node, self.fn).split())
        return f"`{code if len(code) <= 60 else code[:57] + '...'}`"


def _class_called(node: ast.expr) -> str | None:
    """`SGD` for `torch.optim.SGD(...)`: the class a call constructs (a dotted name ending in a capital)."""
    if not isinstance(node, ast.Call):
        return None
    name = dotted_name(node.func)
    last = name.rpartition(".")[2] if name else ""
    return last if last[:1].isupper() else None
