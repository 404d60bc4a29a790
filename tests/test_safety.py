"""No spec value can become code. Arbitrary strings, numbers (inf, nan, huge integers) and nested structures go
into the spec's value fields (the model's, the data's and the optimizer's init_args); the rendered script, parsed,
has the same code as a script of placeholder values everywhere outside those values, and each value is written
as literals that evaluate to exactly what the spec gave. Arbitrary text as a class path or an argument name is
refused as an input error, never written."""

from __future__ import annotations

import ast
import keyword
import math
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from loopgen.errors import LoopgenError
from loopgen.pipeline import render_spec

SOURCE = """
import torch
from torch.utils.data import DataLoader


class Net(torch.nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.layer = torch.nn.Linear(1, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()


class Data:
    def __init__(self, **kwargs):
        pass

    def train_dataloader(self):
        return DataLoader(torch.zeros(4, 1), batch_size=2)
"""

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**120), max_value=10**120)
    | st.floats(allow_nan=True, allow_infinity=True)
    | text
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)
names = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n))
init_args = st.dictionaries(names, values, max_size=4)
numbers = st.integers(min_value=-(10**120), max_value=10**120) | st.floats(allow_nan=True, allow_infinity=True)

CALLS = {"Net": "model", "Data": "data", "SGD": "optimizer"}  # the calls that carry the spec's values


def spec_of(model: dict, data: dict, optimizer: dict) -> dict:
    return {
        "seed_everything": 1,
        "model": {"class_path": "proj.Net", "init_args": model},
        "data": {"class_path": "proj.Data", "init_args": data},
        "optimizer": {"class_path": "torch.optim.SGD", "init_args": optimizer},
        "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False, "enable_progress_bar": False},
    }


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def only_literals(node: ast.AST) -> bool:
    """Literals, containers of them, a sign, and float() of a literal: nothing that names or runs code."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(only_literals(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and only_literals(k) for k in node.keys) and all(map(only_literals, node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and [type(a) for a in node.args] == [ast.Constant]
        and not node.keywords
    )


def carried(tree: ast.Module) -> dict[str, dict[str, ast.expr]]:
    """The keyword arguments of the calls that carry the spec's values, by spec section."""
    found: dict[str, dict[str, ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in CALLS:
                found[CALLS[name]] = {kw.arg: kw.value for kw in node.keywords}
    return found


def skeleton(tree: ast.Module) -> str:
    """The script's code with the header docstring gone and every carried value replaced by a placeholder."""
    tree.body = tree.body[1:]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name in CALLS:
                for kw in node.keywords:
                    kw.value = ast.Constant("PLACEHOLDER")
    return ast.dump(tree)


def render(directory: Path, spec: dict) -> str:
    path = directory / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, allow_unicode=False, sort_keys=False), encoding="utf-8")
    return render_spec(path)[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("safety")
    (directory / "proj.py").write_text(textwrap.dedent(SOURCE))
    return directory


def placeholders(args: dict) -> dict:
    return {name: 0 for name in args}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=init_args, data=init_args, lr=numbers, momentum=numbers)
def test_values_stay_values(project, monkeypatch, model, data, lr, momentum):
    monkeypatch.chdir(project)
    optimizer = {"lr": lr, "momentum": momentum}
    spec = spec_of(model, data, optimizer)
    assume(
        same(yaml.safe_load(yaml.safe_dump(spec, allow_unicode=False, sort_keys=False)), spec)
    )  # what YAML can carry
    script = render(project, spec)
    baseline = render(project, spec_of(placeholders(model), placeholders(data), placeholders(optimizer)))
    tree = ast.parse(script)
    for section, args in carried(tree).items():
        given_args = {"model": model, "data": data, "optimizer": optimizer}[section]
        assert list(args) == list(given_args), section
        for name, node in args.items():
            assert only_literals(node), ast.dump(node)
            value = eval(compile(ast.Expression(node), "<value>", "eval"), {"__builtins__": {"float": float}})
            assert same(value, given_args[name]), (section, name, value, given_args[name])
    assert set(carried(tree)) == {"model", "data", "optimizer"}
    assert skeleton(tree) == skeleton(ast.parse(baseline))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(class_path=st.text(max_size=30), name=st.text(max_size=12))
def test_names_are_identifiers_or_refused(project, monkeypatch, class_path, name):
    monkeypatch.chdir(project)
    spec = spec_of({}, {}, {"lr": 0.1})
    spec["model"] = {"class_path": class_path, "init_args": {name: 1}}
    try:
        yaml.safe_dump(spec)
    except yaml.YAMLError:
        assume(False)
    try:
        script = render(project, spec)
    except LoopgenError:
        return  # refused with a message: nothing written
    # rendered: then it named the user's class with identifiers only
    assert class_path == "proj.Net" and name.isidentifier() and not keyword.iskeyword(name), script[:200]


def test_refused_values_name_their_key(project, monkeypatch):
    monkeypatch.chdir(project)
    spec = spec_of({"big": 10**4001}, {}, {"lr": 0.1})
    with pytest.raises(LoopgenError) as raised:
        render(project, spec)
    (problem,) = raised.value.problems
    assert problem.where == "model.init_args.big" and problem.line is not None
