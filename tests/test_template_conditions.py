"""Every condition in the templates tests one plan decision (docs/architecture.md: a template "never combines two
fields in a condition"). A combination of plan fields is a named field or property of the plan part that owns the
decision, computed in Python.

A condition is the test of `{% if %}` / `{% elif %}`, of an inline `x if c else y`, and of a `{% for ... if c %}`
filter. The plan fields a condition reads are:

- each attribute/item chain rooted at the name `plan`, taken whole (`plan.progress.kind`, `plan.hooks.callbacks[0]`);
- a call of such a chain, with its arguments, as one field (`plan.hooks.model_has("setup")`: `model_has("a")` and
  `model_has("b")` are two);
- a name bound by `{% set name = expr %}` in the template, or in the macro where the condition stands, reads the
  fields `expr` reads (`{% set cl = plan.command_line %}` makes `cl.resume` the field `plan.command_line.resume`;
  `{% set on = plan.a.x or plan.a.y %}` makes `{% if on %}` read two); a macro's parameter or a loop variable of
  the same name hides it.

Comparing one field with a literal (`plan.progress.kind == "tqdm"`) reads one field. Loop variables, macro
parameters and the names of imported templates are not plan fields: a value passed in to a macro is the caller's
decision, and the caller's own conditions are checked where they stand.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jinja2
from jinja2 import nodes

from loopgen.render.script import _environment, template_dir

# Templates not checked yet, each with the reason; remove an entry once its template passes.
ALLOWED: dict[str, str] = {}  # template name -> why its conditions may combine fields (none may)


def _chain(node: nodes.Node) -> bool:
    """`node` is an attribute/item chain rooted at the name `plan`."""
    while isinstance(node, nodes.Getattr | nodes.Getitem):
        node = node.node
    return isinstance(node, nodes.Name) and node.name == "plan"


def _key(node: nodes.Node) -> str:
    """A field's name, as the template spells it (modulo whitespace)."""
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        return f"{_key(node.node)}.{node.attr}"
    if isinstance(node, nodes.Getitem):
        index = repr(node.arg.value) if isinstance(node.arg, nodes.Const) else "..."
        return f"{_key(node.node)}[{index}]"
    if isinstance(node, nodes.Call):
        args = [repr(arg.value) if isinstance(arg, nodes.Const) else "..." for arg in node.args]
        args += [f"{kw.key}={kw.value.value!r}" if isinstance(kw.value, nodes.Const) else "..." for kw in node.kwargs]
        return f"{_key(node.node)}({', '.join(args)})"
    return "..."


def fields(node: nodes.Node, aliases: dict[str, frozenset[str]]) -> set[str]:
    """The distinct plan fields the expression `node` reads."""
    if isinstance(node, nodes.Call) and _chain(node.node):
        found = {_key(node)}
        for arg in [*node.args, *(kw.value for kw in node.kwargs)]:
            found |= fields(arg, aliases)
        return found
    if _chain(node):
        found = {_key(node)}
        while isinstance(node, nodes.Getattr | nodes.Getitem):  # an index computed from fields reads them too
            if isinstance(node, nodes.Getitem):
                found |= fields(node.arg, aliases)
            node = node.node
        return found
    if isinstance(node, nodes.Getattr | nodes.Getitem | nodes.Call):
        root = node
        while isinstance(root, nodes.Getattr | nodes.Getitem | nodes.Call):
            root = root.node
        if isinstance(root, nodes.Name) and root.name in aliases:
            found = {field + _key(node)[len(root.name) :] for field in aliases[root.name]}
            for child in node.iter_child_nodes():
                if child is not node.node:
                    found |= fields(child, aliases)
            return found
    if isinstance(node, nodes.Name):
        return set(aliases.get(node.name, ()))
    found: set[str] = set()
    for child in node.iter_child_nodes():
        found |= fields(child, aliases)
    return found


def _scope(body: list[nodes.Node], outer: dict[str, frozenset[str]], hidden: set[str]) -> dict[str, frozenset[str]]:
    """The aliases inside a template, macro or call block: the enclosing ones but the names its parameters
    (`hidden`) take, and those its own `{% set %}`s bind to an expression that reads plan fields."""
    aliases = {name: read for name, read in outer.items() if name not in hidden}
    pending = list(body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, nodes.Macro | nodes.CallBlock):
            continue  # a scope of its own
        if isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name):
            read = fields(node.node, aliases)
            if read:
                aliases[node.target.name] = frozenset(read)
        pending.extend(node.iter_child_nodes())
    return aliases


def _conditions(
    node: nodes.Node, aliases: dict[str, frozenset[str]]
) -> Iterator[tuple[nodes.Node, dict[str, frozenset[str]]]]:
    """Each condition under `node`, with the aliases where it stands."""
    if isinstance(node, nodes.Macro | nodes.CallBlock):
        hidden = {arg.name for arg in node.args}
        aliases = _scope(node.body, aliases, hidden)
        for child in node.body:
            yield from _conditions(child, aliases)
        return
    if isinstance(node, nodes.For):
        aliases = {name: read for name, read in aliases.items() if name not in _names(node.target)}
    if isinstance(node, nodes.If | nodes.CondExpr | nodes.For) and node.test is not None:
        yield node.test, aliases
    for child in node.iter_child_nodes():
        yield from _conditions(child, aliases)


def _names(target: nodes.Node) -> set[str]:
    return {name.name for name in target.find_all(nodes.Name)} | (
        {target.name} if isinstance(target, nodes.Name) else set()
    )


def combined(source: str, env: jinja2.Environment | None = None) -> list[tuple[int, list[str]]]:
    """(line, fields) for each condition of the template `source` that reads two or more plan fields."""
    tree = (env or _environment()).parse(source)
    found = []
    for test, aliases in _conditions(tree, _scope(tree.body, {}, set())):
        read = fields(test, aliases)
        if len(read) > 1:
            found.append((test.lineno, sorted(read)))
    return sorted(found)


def templates() -> list[Path]:
    root = template_dir()
    return sorted(root.rglob("*.j2"))


def test_no_condition_combines_plan_fields() -> None:
    root = template_dir()
    problems = []
    for path in templates():
        name = path.relative_to(root).as_posix()
        if name in ALLOWED:
            continue
        for line, read in combined(path.read_text(encoding="utf-8")):
            problems.append(f"templates/{name}:{line}: {' + '.join(read)}")
    assert not problems, "conditions that combine plan fields (make each one named plan field):\n" + "\n".join(problems)


def test_allowed_templates_exist() -> None:
    root = template_dir()
    assert all((root / name).is_file() for name in ALLOWED)


def test_every_template_is_parsed() -> None:
    assert len(templates()) > 20


def test_combined_conditions_are_found() -> None:
    """The check is not vacuous: each kind of condition that combines fields is flagged, one field is not."""
    flagged = [
        "{% if plan.a.x and plan.b.y %}x{% endif %}",
        "{% if plan.a.x %}x{% elif plan.a.x or not plan.a.z %}y{% endif %}",
        "{{ 1 if plan.a.x == plan.b.y else 2 }}",
        "{% for c in plan.hooks.callbacks if plan.a.x and c.kind and plan.b.y %}x{% endfor %}",
        '{% if plan.hooks.model_has("a") or plan.hooks.model_has("b") %}x{% endif %}',
        "{% set cl = plan.command_line %}{% if cl.resume and plan.a.x %}x{% endif %}",
        '{% if plan.a["k"] and plan.a["j"] %}x{% endif %}',
    ]
    single = [
        "{% if plan.a.x %}x{% endif %}",
        '{% if plan.progress.kind == "tqdm" %}x{% elif not plan.progress.kind %}y{% endif %}',
        '{% if plan.hooks.model_has("setup") %}x{% endif %}',
        '{{ "a" if plan.a.x is none else "b" }}',
        "{% for cb in plan.hooks.callbacks if cb.kind and cb.state %}x{% endfor %}",
        "{% macro m(flag) %}{% if flag and plan.a.x %}x{% endif %}{% endmacro %}",
        "{% set cl = plan.command_line %}{% if cl.resume %}x{% endif %}",
    ]
    for source in flagged:
        assert combined(source), source
    for source in single:
        assert not combined(source), source
    assert combined("\n\n{% if plan.a.x and plan.b.y %}x{% endif %}") == [(3, ["plan.a.x", "plan.b.y"])]


def test_aliases_are_scoped() -> None:
    """A `{% set %}` that combines fields makes a condition on it combined; a parameter of that name does not."""
    source = (
        "{% macro a() %}{% set on = plan.a.x or plan.a.y %}{% if on %}x{% endif %}{% endmacro %}"
        "{% macro b(on) %}{% if on %}x{% endif %}{% endmacro %}"
        "{% for on in plan.a.z %}{% if on and plan.a.w %}x{% endif %}{% endfor %}"
    )
    assert combined(source) == [(1, ["plan.a.x", "plan.a.y"])]


def test_one_statement_syntax_and_one_indentation_mechanism() -> None:
    """Statements are `{% %}` only (no line statements), and blocks are indented by where their expression
    stands (render/script.py `_place_blocks`), never by Jinja's `indent` filter."""
    env = _environment()
    assert env.line_statement_prefix is None
    root = template_dir()
    for path in sorted(root.rglob("*.j2")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root).as_posix()
        assert not any(line.lstrip().startswith("#%") for line in text.splitlines()), name
        filters = {node.name for node in env.parse(text).find_all(nodes.Filter)}
        assert "indent" not in filters, f"{name} uses | indent"
