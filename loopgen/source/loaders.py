"""What `val_dataloader` returns, read from its source: several loaders (fit validates each in turn), or one it
builds on every path."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from loopgen.source.syntax import dotted_name

_DISPLAYS = (ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.DictComp, ast.GeneratorExp)


def _own_returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[ast.Return], dict[str, list[ast.expr]]]:
    """`fn`'s returns, in source order, and what each local name was assigned: a nested function's
    or class's returns and names are its own."""
    assigned: dict[str, list[ast.expr]] = {}
    returns: list[ast.Return] = []
    pending: list[ast.AST] = list(fn.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            returns.append(node)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        pending.extend(ast.iter_child_nodes(node))
    return sorted(returns, key=lambda r: (r.lineno, r.col_offset)), assigned


def returns_several(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The line of the first return in `fn` that may give several loaders: a list, tuple or dict of two or
    more, or one whose length the source does not show (a comprehension, a starred item), directly or through a
    local name it was assigned; None when none does."""
    returns, assigned = _own_returns(fn)
    for ret in returns:
        values = assigned.get(ret.value.id, []) if isinstance(ret.value, ast.Name) else [ret.value]
        if any(_several(value) for value in values):  # type: ignore[arg-type]
            return ret.lineno
    return None


def returns_a_loader(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether every return of `fn` builds one DataLoader (`return DataLoader(...)`): never a list of them."""
    returns, _ = _own_returns(fn)
    return bool(returns) and all(
        isinstance(ret.value, ast.Call) and dotted_name(ret.value.func).rpartition(".")[2] == "DataLoader"
        for ret in returns
    )


def _several(node: ast.expr | None) -> bool:
    if not isinstance(node, _DISPLAYS):
        return False
    if isinstance(node, (ast.ListComp, ast.DictComp, ast.GeneratorExp)):
        return True
    items = node.keys if isinstance(node, ast.Dict) else node.elts
    return len(items) > 1 or any(item is None or isinstance(item, ast.Starred) for item in items)


def uses_name(statements: Iterable[list[ast.stmt]], read: Iterable[ast.AST], name: str) -> bool:
    """Whether the code read (`read`) names `name` (as a name, an attribute or a keyword argument), or a class or
    function of the files read (`statements`) that does, to any depth."""
    definitions = [
        (node.name, _names_in(node))
        for body in statements
        for node in body
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    tainted = {name}
    grown = True
    while grown:
        grown = False
        for defined, names in definitions:
            if defined not in tainted and names & tainted:
                tainted.add(defined)
                grown = True
    return any(_names_in(node) & tainted for node in read)


def uses_iterable_dataset(statements: Iterable[list[ast.stmt]], read: Iterable[ast.AST]) -> bool:
    """Whether the code read (`read`: the class's lineage, the functions followed) may build a loader without a
    length: it names IterableDataset, or a class or function of the files read (`statements`: each file's
    top-level statements) that does, to any depth (a streaming dataset class defined beside the data module).
    Another class in the same file that the code never names does not count."""
    return uses_name(statements, read, "IterableDataset")


def _names_in(node: ast.AST) -> set[str]:
    """The names, attribute names, parameters, keyword arguments and identifier-like strings in `node`."""
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
        elif isinstance(n, (ast.keyword, ast.arg)) and n.arg:
            names.add(n.arg)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
            names.add(n.value)  # a mapping's key: DataLoader(data, **{"num_workers": 2})
    return names
