"""Fingerprints of the user's code a render read: the script checks them when it starts (its guards,
templates/guards.j2), so that it never trains on code it was not specialised for.

A class or function is fingerprinted part by part: each method and class attribute of a class by its name, and the
rest of it ("": the `class` or `def` line, its decorators and docstring). A part's fingerprint is the first 8 hex
digits of the sha256 of its lines as written (trailing spaces stripped, blank lines and comment lines left out),
its decorators included; a name defined
more than once at a module's top level (in `if` / `try` blocks) is every definition of it, in source order. The
script computes the same from the file it imported (`fingerprints` in templates/guards.j2 is this module's twin),
so an edit anywhere else in the file does not change them.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from loopgen.source.syntax import FUNCTIONS

# packages whose classes are never the user's code (loopgen knows them by name), as the script tells them apart in
# a class's bases; the standard library's modules are not the user's code either (sys.stdlib_module_names)
LIGHTNING_PACKAGES = ("lightning", "pytorch_lightning")
NOT_USER_PACKAGES = ("torch", *LIGHTNING_PACKAGES, "lightning_fabric", "torchmetrics")


@dataclass(frozen=True)
class Read:
    """One class or function of the user's code that a render read: where it is defined, and its parts'
    fingerprints (the part "" first, then each method in source order)."""

    module: str  # the dotted name of the module that defines it
    path: str  # its file, from the root the module was found under (for the script's header)
    digest: str  # the first 16 hex digits of the sha256 of that file's bytes (unchanged: nothing in it changed)
    name: str
    parts: tuple[tuple[str, str], ...]


def definitions(statements: Iterable[ast.AST]) -> Iterator[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """The classes and functions a module defines at its top level, in `if`, `try` and `with` blocks too, in
    source order (never inside a class or function)."""
    for node in statements:
        if isinstance(node, (ast.ClassDef, *FUNCTIONS)):
            yield node
        elif isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield from definitions(ast.iter_child_nodes(node))


def fingerprints(lines: Sequence[str], nodes: Sequence[ast.AST]) -> dict[str, str]:
    """The fingerprint of each part of the definitions `nodes` of one name (`lines`: the file's lines): each method
    and class attribute of a class by its name (`on_validation_epoch_end = on_train_epoch_end` is one), and the rest
    ("")."""
    texts: dict[str, str] = {}
    for node in nodes:
        body = node.body if isinstance(node, ast.ClassDef) else []
        members = [(m.name, m) for m in body if isinstance(m, FUNCTIONS)]
        members += [
            (target.id, m)
            for m in body
            if isinstance(m, (ast.Assign, ast.AnnAssign))
            for target in (m.targets if isinstance(m, ast.Assign) else [m.target])
            if isinstance(target, ast.Name)
        ]
        inside = {i for _, member in members for i in _span(member)}
        for name, member in members:
            texts[name] = texts.get(name, "") + _text(lines, _span(member))
        texts[""] = texts.get("", "") + _text(lines, [i for i in _span(node) if i not in inside])
    return {part: hashlib.sha256(text.encode()).hexdigest()[:8] for part, text in texts.items()}


def _span(node: ast.AST) -> range:
    """The indices of the lines of a statement, a definition's decorators included."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])  # type: ignore[attr-defined]
    return range(first - 1, node.end_lineno)  # type: ignore[attr-defined]


def _text(lines: Sequence[str], indices: Iterable[int]) -> str:
    """The lines, less blank lines and comment lines (an edit of those is no edit of the code)."""
    kept = (lines[i].rstrip() for i in indices)
    return "".join(line + "\n" for line in kept if line.strip() and not line.lstrip().startswith("#"))


def file_lines(source: bytes) -> list[str]:
    """A file's lines as the script reads them: its encoding and universal newlines, as Python imports it."""
    from importlib.util import decode_source

    return decode_source(source).split("\n")


def user_module(module: str) -> bool:
    """Whether classes of the module `module` count as the user's code (not torch's, Lightning's, the standard
    library's): the script tells its classes' bases apart by the same rule."""
    top = module.partition(".")[0]
    return top not in NOT_USER_PACKAGES and top not in sys.stdlib_module_names


def read_object(module: str, path: str, source: bytes, statements: Iterable[ast.AST], name: str) -> Read:
    """The fingerprints of the module-level class or function `name` of a module (`statements`: its top-level
    statements, or those that bind names, loopgen.source.syntax.binding_statements)."""
    nodes = [node for node in definitions(statements) if node.name == name]
    found = fingerprints(file_lines(source), nodes)
    digest = hashlib.sha256(source).hexdigest()[:16]
    return Read(module, path, digest, name, tuple(sorted(found.items(), key=lambda item: item[0] != "")))


def read_objects(found: Iterable[tuple[str, str, bytes, Iterable[ast.AST], str]]) -> tuple[Read, ...]:
    """The fingerprints of the classes and functions `found` (each: its module's name, file and bytes, the
    module's top-level statements, its name), less those of the standard library."""
    return tuple(read_object(*item) for item in found if user_module(item[0]))
