"""The engines (templates/engines/<engine>.j2) are variants of one interface: each defines the same macros with
the same parameters, and the other templates call them instead of testing which engine the plan names."""

from __future__ import annotations

import re

import jinja2
import pytest
from jinja2 import nodes

from loopgen.plan.distributed import Distributed
from loopgen.render.script import template_dir

ENGINES = ("single", "ddp", "dp", "horovod", "xla")
# a test of the engine's kind; plan.distributed's feature flags (rank_zero_gates, no_sync, ...) are fine anywhere
ENGINE_TEST = re.compile(r"plan\.distributed\.(ddp|dp|horovod|xla|enabled|kind|ranks_from)\b")


def macros(engine: str) -> dict[str, list[str]]:
    source = (template_dir() / "engines" / f"{engine}.j2").read_text(encoding="utf-8")
    tree = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).parse(source)
    return {macro.name: [arg.name for arg in macro.args] for macro in tree.find_all(nodes.Macro)}


@pytest.mark.parametrize("engine", ENGINES[1:])
def test_every_engine_defines_the_macros_of_single(engine):
    assert macros(engine) == macros("single")


@pytest.mark.parametrize("kind", [None, "ddp", "dp", "horovod", "xla"])
def test_every_kind_of_plan_names_an_engine_file(kind):
    assert Distributed(kind=kind).engine in ENGINES


def test_no_template_outside_the_engines_tests_which_engine_it_is():
    found = []
    for path in sorted(template_dir().rglob("*.j2")):
        if path.parent.name == "engines":
            continue
        text = path.read_text(encoding="utf-8")
        if path.name == "train.py.j2":  # its import lines (before the first include) are left to the imports
            text = text[text.index("{% include") :]
        found += [f"{path.name}: {line.strip()}" for line in text.splitlines() if ENGINE_TEST.search(line)]
    assert found == []
