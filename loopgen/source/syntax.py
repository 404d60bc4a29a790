"""Helpers over `ast` every reader shares: a file's source text, visitors, dotted names, parameters."""

from __future__ import annotations

import ast
import copy
from collections.abc import Sequence

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


Function = ast.FunctionDef | ast.AsyncFunctionDef


class Source:
    """A file's text, for what `ast` does not keep: the code of a node as written (with the parentheses around
    it) and its string literals as written (quotes and prefix included, each part of an implicit concatenation
    on its own)."""

    def __init__(self, source: bytes) -> None:
        self._source = source
        self._lines: list[str] = []
        self._data = b""
        self._starts: list[int] = []

    @property
    def raw(self) -> bytes:
        """The file's bytes, as read."""
        return self._source

    def _load(self) -> None:
        from importlib.util import decode_source  # the file's encoding, universal newlines (as ast reads it)

        self._lines = [f"{line}\n" for line in decode_source(self._source).split("\n")]
        lines = [line.encode() for line in self._lines]
        self._data = b"".join(lines)  # UTF-8: ast's column offsets count its bytes
        self._starts = [0]
        for line in lines:
            self._starts.append(self._starts[-1] + len(line))

    def _offset(self, line: int, column: int) -> int:
        return self._starts[line - 1] + column

    def lines(self, node: ast.stmt) -> list[str]:
        """The lines of the statement `node` as written, its decorators included."""
        if not self._starts:
            self._load()
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return [line.rstrip("\n") for line in self._lines[first - 1 : node.end_lineno]]

    def code(self, node: ast.expr, within: ast.stmt | None = None) -> str:
        """The source text of `node`; with the statement `within` it is in, with the parentheses written
        around it."""
        if not self._starts:
            self._load()
        start = self._offset(node.lineno, node.col_offset)
        end = self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[arg-type]
        if within is not None:
            tokens = self._tokens(within)
            first = next((i for i, t in enumerate(tokens) if t[0] == start), None)
            last = next((i for i, t in enumerate(tokens) if t[1] == end), None)
            while first and last is not None and last + 1 < len(tokens):
                if tokens[first - 1][2] != "(" or tokens[last + 1][2] != ")":
                    break
                first, last = first - 1, last + 1
                start, end = tokens[first][0], tokens[last][1]
        return self._data[start:end].decode()

    def _tokens(self, statement: ast.stmt) -> list[tuple[int, int, str]]:
        """(start, end, text) of the tokens of `statement`, without comments and line breaks."""
        import io
        import tokenize

        first = statement.lineno - 1
        lines = self._lines[first : statement.end_lineno]
        tokens = []
        skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        try:
            read = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
        except (tokenize.TokenError, SyntaxError):  # not expected of code Python parsed: no parentheses then
            return []
        for token in read:
            if token.type not in skip and token.string:
                (row, column), (end_row, end_column) = token.start, token.end
                start = self._offset(first + row, len(lines[row - 1][:column].encode()))
                tokens.append(
                    (start, self._offset(first + end_row, len(lines[end_row - 1][:end_column].encode())), token.string)
                )
        return tokens

    def strings(self, node: ast.expr) -> list[str]:
        """The plain (not formatted) string literals of a str / bytes constant or an f-string, as written."""
        import io
        import tokenize

        code = self.code(node)
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(f"({code}\n)").readline))
        except (tokenize.TokenError, SyntaxError):  # not expected of code Python parsed: read it as one literal
            return [code]
        written = (t.string for t in tokens if t.type == tokenize.STRING)
        return [s for s in written if "f" not in s[: s.find(s[-1])].lower()]


# the statements after which the rest of a block never runs
_TERMINATORS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def reachable(statements: Sequence[ast.stmt]) -> list[ast.stmt]:
    """`statements` without the ones a return, raise, continue or break before them in the same block keeps from
    running, in nested blocks too (the nodes are copied where a nested block loses some, never changed)."""
    kept: list[ast.stmt] = []
    for statement in statements:
        kept.append(_reachable_within(statement))
        if isinstance(statement, _TERMINATORS):
            break
    return kept


def _reachable_within(node: ast.AST) -> ast.AST:
    changed = {}
    for field in _BLOCKS:
        block = getattr(node, field, None)
        if isinstance(block, list) and block and not isinstance(node, (*FUNCTIONS, ast.ClassDef, ast.Lambda)):
            pruned = reachable(block) if isinstance(block[0], ast.stmt) else [_reachable_within(b) for b in block]
            if len(pruned) != len(block) or any(a is not b for a, b in zip(pruned, block)):
                changed[field] = pruned
    if not changed:
        return node
    node = copy.copy(node)
    for field, block in changed.items():
        setattr(node, field, block)
    return node


class Visitor:
    """Walks statements depth first in source order: `visit_<Node>` before a node's children (False: not into
    them), and `name(text, attribute)` for each identifier `ast` keeps as text (a parameter, a function's name,
    an imported name, True / False / None), `attribute`: a keyword argument's name or a later part of a dotted
    import."""

    def walk(self, statements: Sequence[ast.AST]) -> None:
        for statement in statements:
            self.visit(statement)

    def visit(self, node: ast.AST) -> None:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is not None and method(node) is False:
            return
        for text, attribute in _identifiers(node):
            self.name(text, attribute)
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def name(self, text: str, attribute: bool) -> None:
        pass


def _identifiers(node: ast.AST) -> list[tuple[str, bool]]:
    if isinstance(node, ast.arg):
        return [(node.arg, False)]
    if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
        return [(node.name, False)]
    if isinstance(node, ast.Constant):
        return [(str(node.value), False)] if node.value is None or isinstance(node.value, bool) else []
    if isinstance(node, ast.keyword):
        return [(node.arg, True)] if node.arg else []
    if isinstance(node, ast.alias):
        parts = [] if node.name == "*" else _dotted_parts(node.name)
        return [*parts, *([(node.asname, False)] if node.asname else [])]
    if isinstance(node, ast.ImportFrom):
        return _dotted_parts(node.module) if node.module else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(name, False) for name in node.names]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [(node.name, False)] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [(node.rest, False)] if node.rest else []
    if isinstance(node, ast.MatchClass):
        return [(name, False) for name in node.kwd_attrs]
    name = getattr(node, "name", None)  # a type parameter (Python 3.12)
    return [(name, False)] if isinstance(name, str) and not isinstance(node, ast.stmt) else []


def _dotted_parts(name: str) -> list[tuple[str, bool]]:
    return [(part, i > 0) for i, part in enumerate(name.split("."))]


def literal_name(node: ast.AST | None) -> str | None:
    """The text of a name, True, False or None; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return str(node.value)
    return None


def call_arguments(call: ast.Call) -> list[tuple[str | None, str, ast.expr]]:
    """(keyword, star: "" / "*" / "**", value) of each argument of `call`, in source order."""
    arguments = [
        *((None, "*", a.value) if isinstance(a, ast.Starred) else (None, "", a) for a in call.args),
        *((k.arg, "" if k.arg else "**", k.value) for k in call.keywords),
    ]
    nodes = [*call.args, *call.keywords]
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i].lineno, nodes[i].col_offset))
    return [arguments[i] for i in order]


class _CallFinder(Visitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Call(self, node: ast.Call) -> None:
        self.found = self.found or dotted_name(node.func) in self.names


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` for a name or attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted_name(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def parameters_of(fn: Function, *, skip_first: bool) -> tuple[str, ...]:
    p = fn.args
    positional = [*p.posonlyargs, *p.args][1 if skip_first else 0 :]
    names = [param.arg for param in positional]
    if p.vararg is not None:
        names.append(f"*{p.vararg.arg}")
    names += [param.arg for param in p.kwonlyargs]
    if p.kwarg is not None:
        names.append(f"**{p.kwarg.arg}")
    return tuple(names)


def defaulted_parameters(fn: Function) -> tuple[str, ...]:
    """The parameters of `fn` that have a default value (keyword-only ones included)."""
    p = fn.args
    positional = [*p.posonlyargs, *p.args]
    with_default = positional[len(positional) - len(p.defaults) :] if p.defaults else []
    keywords = [param for param, default in zip(p.kwonlyargs, p.kw_defaults) if default is not None]
    return tuple(param.arg for param in [*with_default, *keywords])


def class_methods(cls: ast.ClassDef) -> list[Function]:
    """The methods a class body defines, in source order; a method given another name there
    (`on_validation_epoch_end = on_train_epoch_end`) is that method under that name too."""
    found: list[Function] = []
    for statement in cls.body:
        if isinstance(statement, FUNCTIONS):
            found.append(statement)
        elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
            method = next((fn for fn in reversed(found) if fn.name == statement.value.id), None)
            for target in statement.targets if method is not None else ():
                if isinstance(target, ast.Name):
                    found.append(copy.copy(method))
                    found[-1].name = target.id
    return found


def self_name(fn: Function) -> str | None:
    """What a method calls its instance (its first parameter); None for a static method."""
    positional = [*fn.args.posonlyargs, *fn.args.args]
    static = any(dotted_name(d) in ("staticmethod", "builtins.staticmethod") for d in fn.decorator_list)
    return positional[0].arg if positional and not static else None


def calls_any(fn: Function, names: set[str]) -> bool:
    """Whether the body of `fn` calls one of the dotted `names`."""
    finder = _CallFinder(names)
    finder.walk(fn.body)
    return finder.found
