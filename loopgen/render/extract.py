"""Helpers lifted out of a function: so that main() reads as the loop, a template marks a block of set-up or resume
code that main() runs once, and the renderer moves it into a function of its own, named for what it does.

    # loopgen:extract resume: The checkpoint `--ckpt-path` names, loaded into the run just built.
    ...the block, written with main()'s names...
    # loopgen:end

becomes a call in the block's place and a function after the one the block was in:

    resumed, position = resume(options, model, optimizer, scheduler, trainer)

    def resume(options, model, optimizer, scheduler, trainer):
        \"\"\"The checkpoint `--ckpt-path` names, loaded into the run just built.\"\"\"
        ...the block...
        return resumed, position

Which names go in and which come back is read from the code with `symtable` (Python's own scoping), not written by
the template: a parameter is a local of the enclosing function that the block reads; a name comes back when the
block binds it and the enclosing function reads it elsewhere (in its own body or in a function nested in it). A
name the block binds on one path only comes back as None on the others (the code after it tests the same condition).
A block of fewer than MIN_STATEMENTS statements stays in place: a call would not make the function clearer.
A block that the enclosing function could not hand over whole is refused with the reason: a `return`, `break`,
`continue` or `yield` of its own, a `global` name it assigns, or a function it defines that reads a variable the
enclosing function rebinds later.
"""

from __future__ import annotations

import ast
import re
import symtable
import textwrap
from dataclasses import dataclass

from loopgen.errors import LoopgenError

# A block of fewer statements stays where it is.
MIN_STATEMENTS = 3

_START = re.compile(r"^(?P<indent> *)# loopgen:extract (?P<name>\w+): (?P<doc>.+)$")
_END = re.compile(r"^ *# loopgen:end$")


@dataclass(frozen=True)
class _Region:
    name: str
    doc: str
    indent: int
    start: int  # the marker lines, 1-based
    end: int


def extract_helpers(text: str) -> str:
    """`text` with each marked block moved into a function of its own (see the module's docstring)."""
    regions = _regions(text)
    if not regions:
        return text
    for region in reversed(regions):  # from the bottom: earlier line numbers stay valid
        text = _extract(text, region)
    return text


def _regions(text: str) -> list[_Region]:
    regions: list[_Region] = []
    open_: re.Match[str] | None = None
    start = 0
    for number, line in enumerate(text.split("\n"), 1):
        match = _START.match(line)
        if match:
            if open_ is not None:
                raise LoopgenError(f"loopgen:extract {match['name']} starts inside {open_['name']}")
            open_, start = match, number
        elif _END.match(line):
            if open_ is None:
                raise LoopgenError("loopgen:end without a loopgen:extract")
            regions.append(_Region(open_["name"], open_["doc"], len(open_["indent"]), start, number))
            open_ = None
    if open_ is not None:
        raise LoopgenError(f"loopgen:extract {open_['name']} has no loopgen:end")
    return regions


def _extract(text: str, region: _Region) -> str:
    lines = text.split("\n")
    tree = ast.parse(text)
    function = _enclosing(tree, region)
    body = lines[region.start : region.end - 1]
    if not any(line.strip() and not line.strip().startswith("#") for line in body):
        # the block rendered no code for this spec: nothing to lift
        return "\n".join(lines[: region.start - 1] + lines[region.end :])
    if any(isinstance(node, ast.FunctionDef) and node.name == region.name for node in tree.body):
        raise LoopgenError(f"loopgen:extract {region.name}: the script defines {region.name} already")
    statements = _statements(function, region)
    if sum(isinstance(node, ast.stmt) for statement in statements for node in ast.walk(statement)) < MIN_STATEMENTS:
        # a call would not make the function shorter or clearer: the block stays, without its markers
        return "\n".join(lines[: region.start - 1] + body + lines[region.end :])
    _check_control_flow(region, statements)

    scope = _scope(text, function)
    outer_locals = {s.get_name() for s in scope.get_symbols() if s.is_local() and not s.is_global()}
    declared_global = {s.get_name() for s in scope.get_symbols() if s.is_declared_global()}
    block_source = textwrap.dedent("\n".join(body))
    block = symtable.symtable(f"def _block():\n{textwrap.indent(block_source, '    ')}\n", "<block>", "exec")
    block_scope = block.get_children()[0]
    binds = [s.get_name() for s in block_scope.get_symbols() if s.is_assigned() or s.is_imported()]
    own_globals = {s.get_name() for s in block_scope.get_symbols() if s.is_declared_global()}
    if assigned_globals := sorted(set(binds) & declared_global - own_globals):
        raise LoopgenError(f"loopgen:extract {region.name}: it assigns the global(s) {', '.join(assigned_globals)}")
    if stranded := sorted(own_globals & _stored_outside(function, region)):
        # its `global` statement moves with the block: the function would make these names its own locals
        raise LoopgenError(f"loopgen:extract {region.name}: the function assigns the global(s) {', '.join(stranded)}")

    loads, stores = _names_in_order(statements)
    reads = _reads(block_scope)
    bound_before = _bound_before(function, region)
    read_first = _read_before_bound(statements)
    parameters = [
        name
        for name in loads
        if name in reads
        and name in outer_locals
        and (name not in binds or (name in bound_before and name in read_first))
    ]
    used_elsewhere = _used_outside(function, scope, region)
    returns = [name for name in stores if name in outer_locals and name in used_elsewhere]
    _check_closures(region, block_scope, outer_locals, function, binds)

    definite = _definitely_bound(statements) | set(parameters)
    unbound_first = [name for name in returns if name not in definite]

    doc = textwrap.wrap(region.doc, 78)  # with its quotes, at most 88 columns
    doc[0] = f'"""{doc[0]}'
    doc[-1] = f'{doc[-1]}"""'
    helper_lines = [f"def {region.name}({', '.join(parameters)}):", *(f"    {line}" for line in doc)]
    if unbound_first:
        helper_lines.append("    " + " = ".join(unbound_first) + " = None  # bound on one path only")
    helper_lines += [("    " + line if line.strip() else "") for line in block_source.split("\n")]
    if returns:
        helper_lines.append(f"    return {', '.join(returns)}")

    call = f"{region.name}({', '.join(parameters)})"
    if returns:
        call = f"{', '.join(returns)} = {call}"
    indent = " " * region.indent
    lines[region.start - 1 : region.end] = [indent + call]
    # the helper goes right after the function it was lifted from
    after = next(node for node in ast.parse("\n".join(lines)).body if getattr(node, "name", None) == function.name)
    lines[after.end_lineno : after.end_lineno] = ["", "", *helper_lines]
    return "\n".join(lines)


def _enclosing(tree: ast.Module, region: _Region) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.lineno < region.start <= node.end_lineno:
            return node
    raise LoopgenError(f"loopgen:extract {region.name}: the block is not in a module-level function")


def _statements(function: ast.FunctionDef, region: _Region) -> list[ast.stmt]:
    """The block's statements: siblings in one body of the function."""
    for node in ast.walk(function):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            inside = [s for s in body if isinstance(s, ast.stmt) and region.start < s.lineno < region.end]
            if inside:
                if any(s.end_lineno >= region.end for s in inside):
                    break
                return inside
    raise LoopgenError(f"loopgen:extract {region.name}: the block is not a sequence of whole statements")


def _check_control_flow(region: _Region, statements: list[ast.stmt]) -> None:
    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Nonlocal)) or (
            isinstance(node, (ast.Break, ast.Continue)) and not in_loop
        ):
            raise LoopgenError(
                f"loopgen:extract {region.name}: line {node.lineno} leaves the enclosing function's flow"
            )
        loop = isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        for child in ast.iter_child_nodes(node):
            visit(child, in_loop or (loop and child not in getattr(node, "orelse", [])))

    for statement in statements:
        visit(statement, False)


def _scope(text: str, function: ast.FunctionDef) -> symtable.SymbolTable:
    table = symtable.symtable(text, "<script>", "exec")
    for child in table.get_children():
        if child.get_name() == function.name and child.get_type() == "function":
            return child
    raise LoopgenError(f"no scope for {function.name}")


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _comprehension_names(node: ast.AST) -> set[int]:
    """The Name nodes under `node` that are a comprehension's own variables (its targets, and where it reads them),
    by id: they bind and read nothing in the function's scope. The first `for`'s iterable is read outside."""
    own: set[int] = set()
    for comprehension in ast.walk(node):
        if not isinstance(comprehension, _COMPREHENSIONS):
            continue
        targets = {n.id for g in comprehension.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        outside = {id(n) for n in ast.walk(comprehension.generators[0].iter)}
        own |= {
            id(n)
            for n in ast.walk(comprehension)
            if isinstance(n, ast.Name) and n.id in targets and id(n) not in outside
        }
    return own


def _names_in_order(statements: list[ast.stmt]) -> tuple[list[str], list[str]]:
    """The names the block reads (in the order they appear) and binds (in the order ast.walk meets them), each
    once, at any depth; a comprehension's own variables are neither."""
    own = set().union(*(_comprehension_names(statement) for statement in statements))
    loads = sorted(
        (node.lineno, node.col_offset, node.id)
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in own
    )
    stores: dict[str, None] = {}
    for statement in statements:
        for node in ast.walk(statement):
            if id(node) in own:
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                stores.setdefault(node.id, None)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                stores.setdefault(node.name, None)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    stores.setdefault((alias.asname or alias.name).split(".")[0], None)
    return list(dict.fromkeys(name for _, _, name in loads)), list(stores)


def _reads(scope: symtable.SymbolTable) -> set[str]:
    """Names the block reads from outside itself: its own free references and those of the functions in it (not
    a nested function's own locals)."""
    reads = {s.get_name() for s in scope.get_symbols() if s.is_referenced()}
    for child in scope.get_children():
        reads |= _free(child)
    return reads


def _free(scope: symtable.SymbolTable) -> set[str]:
    """The names a nested function (or the functions nested in it) reads from the scopes around it."""
    free = {s.get_name() for s in scope.get_symbols() if s.is_free() or s.is_global()}
    for child in scope.get_children():
        free |= _free(child)
    return free


def _names(node: ast.AST) -> set[str]:
    """Every name under `node`, read or bound."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _loads(node: ast.AST) -> set[str]:
    """Every name `node` reads, in nested functions too (a superset is enough where this is used)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _stores(function: ast.FunctionDef) -> list[tuple[str, int]]:
    """The names the function binds by assignment, each with its line (a comprehension's variables are its own)."""
    own = _comprehension_names(function)
    return [
        (n.id, n.lineno)
        for n in ast.walk(function)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in own
    ]


def _bound_before(function: ast.FunctionDef, region: _Region) -> set[str]:
    bound = {arg.arg for arg in function.args.args}
    bound |= {name for name, line in _stores(function) if line < region.start}
    for node in ast.walk(function):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not function and node.lineno < region.start:
            bound.add(node.name)
    return bound


def _used_outside(function: ast.FunctionDef, scope: symtable.SymbolTable, region: _Region) -> set[str]:
    """The names the function may read, after the block, as the block left them: read later in its own body before
    a statement of its body rebinds them, or free in a function nested in it."""
    used: set[str] = set()
    for child in _nested(scope):
        if not region.start < child.get_lineno() < region.end:
            used |= {s.get_name() for s in child.get_symbols() if s.is_free()}
    killed: set[str] = set()
    for statement in function.body:
        if statement.end_lineno <= region.end:
            continue
        if statement.lineno < region.start:  # the block is inside this statement: what runs after it in there
            used |= _loads_after(statement, region.end) - killed
            continue
        if isinstance(statement, ast.For):
            # the loop's own variable, read in its body, is the loop's (it may run no time: not rebound after)
            used |= {name for name, _ in _own_loads(statement)} - killed - _names(statement.target)
            continue
        used |= {name for name, _ in _own_loads(statement)} - killed
        if isinstance(statement, ast.Assign):
            killed |= set().union(*map(_names, statement.targets))
    return used


def _loads_after(statement: ast.stmt, line: int) -> set[str]:
    """The names `statement` reads after `line`, but a loop's own variable read in its body (as at the top level of
    the function: the loop may run no time, and it rebinds the name before reading it)."""
    used = {name for name, at in _own_loads(statement) if at > line}
    loops = [node for node in ast.walk(statement) if isinstance(node, ast.For) and node.lineno > line]
    for loop in loops:
        targets = _names(loop.target)
        inside = {name for name, _ in _own_loads(loop)} & targets
        outside = {name for name, at in _own_loads(statement) if at > line and not _within(at, loop)}
        used -= inside - outside
    return used


def _within(line: int, node: ast.AST) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)


def _own_loads(node: ast.AST) -> list[tuple[str, int]]:
    """The names `node` reads in the function's own scope (not in the functions or classes defined in it, nor a
    comprehension's own variables)."""
    own = _comprehension_names(node)
    return [(name, line) for name, line, key in _loads_outside_definitions(node) if key not in own]


def _loads_outside_definitions(node: ast.AST) -> list[tuple[str, int, int]]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return []
    found = [(node.id, node.lineno, id(node))] if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) else []
    for child in ast.iter_child_nodes(node):
        found += _loads_outside_definitions(child)
    return found


def _nested(scope: symtable.SymbolTable) -> list[symtable.SymbolTable]:
    tables = []
    for child in scope.get_children():
        tables += [child, *_nested(child)]
    return tables


def _stored_outside(function: ast.FunctionDef, region: _Region) -> set[str]:
    return {name for name, line in _stores(function) if not region.start < line < region.end}


def _check_closures(
    region: _Region,
    block_scope: symtable.SymbolTable,
    outer_locals: set[str],
    function: ast.FunctionDef,
    binds: list[str],
) -> None:
    """A function the block defines must not read a variable the enclosing function rebinds after the block: once
    lifted, it would keep the value of the call."""
    later = {name for name, line in _stores(function) if line > region.end}
    for child in block_scope.get_children():
        free = {s.get_name() for s in child.get_symbols() if s.is_free() or s.is_global()}
        stale = sorted((free & outer_locals & later) - set(binds))
        if stale:
            raise LoopgenError(
                f"loopgen:extract {region.name}: {child.get_name()} reads {', '.join(stale)}, rebound after the block"
            )


def _read_before_bound(statements: list[ast.stmt]) -> set[str]:
    """Names the block may read before it binds them itself: they come in as parameters."""
    bound: set[str] = set()
    read: set[str] = set()
    for statement in statements:
        loads = _loads(statement)
        if isinstance(statement, ast.For):  # its variable, read in its body, is its own
            loads = (loads - _names(statement.target)) | _loads(statement.iter)
        read |= loads - bound
        bound |= _definitely_bound([statement])
    return read


def _definitely_bound(statements: list[ast.stmt]) -> set[str]:
    """Names every path through the block binds: those of its top-level assignments (and `with` bodies)."""
    bound: set[str] = set()
    for statement in statements:
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            bound |= set().union(*map(_names, targets))
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            bound |= _definitely_bound(statement.body)
        elif isinstance(statement, ast.If) and statement.orelse:
            bound |= _definitely_bound(statement.body) & _definitely_bound(statement.orelse)
        elif isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            bound.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in statement.names}
    return bound
