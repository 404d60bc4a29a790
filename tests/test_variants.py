"""The progress bars (templates/progress/<bar>.j2), the loggers (templates/loggers/<kind>.j2) and the profilers
(templates/profilers/<kind>.j2) are variants by file, as the engines are (tests/test_engines.py): each file of a folder defines the same macros with the same
parameters, and the other templates call them instead of testing which bar or which logger the plan names."""

from __future__ import annotations

import dataclasses
import re

import jinja2
import pytest
from jinja2 import nodes

from loopgen.plan.loggers import LOGGER_KINDS, Logging
from loopgen.plan.profiling import Profiling
from loopgen.plan.progress import Progress
from loopgen.render.script import template_dir

BARS = ("none", "own", "tqdm", "rich")
LOGGERS = ("csv", "tensorboard", "mlflow", "wandb")
PROFILERS = ("none", "simple", "advanced", "pytorch")
# a test of the profiler's kind; plan.profiling's other fields (enabled, ranked, directory, ...) are fine anywhere
PROFILER_TEST = re.compile(r"plan\.profiling\.(kind|variant)\b")
# a test of the bar's kind; plan.progress's feature flags (metrics, validation, leave, ...) are fine anywhere
BAR_TEST = re.compile(r"plan\.progress\.(kind|own|enabled|bar)\b")
# a test of a logger's kind: a kind's name, or membership in plan.logging.kinds (iterating kinds_in_order is fine)
LOGGER_TEST = re.compile(r"""["'](csv|tensorboard|mlflow|wandb)["']|plan\.logging\.kinds\b""")
# tests that stand in templates being rewritten elsewhere, each with the reason; remove an entry once it is gone
LOGGER_TEST_ALLOWED: dict[str, str] = {}


def macros(folder: str, name: str) -> dict[str, list[str]]:
    source = (template_dir() / folder / f"{name}.j2").read_text(encoding="utf-8")
    tree = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).parse(source)
    return {macro.name: [arg.name for arg in macro.args] for macro in tree.find_all(nodes.Macro)}


@pytest.mark.parametrize("bar", BARS[1:])
def test_every_bar_defines_the_macros_of_none(bar):
    assert macros("progress", bar) == macros("progress", "none")


@pytest.mark.parametrize("kind", LOGGERS[1:])
def test_every_logger_defines_the_macros_of_csv(kind):
    assert macros("loggers", kind) == macros("loggers", "csv")


@pytest.mark.parametrize("kind", PROFILERS[1:])
def test_every_profiler_defines_the_macros_of_none(kind):
    assert macros("profilers", kind) == macros("profilers", "none")


@pytest.mark.parametrize("kind", [None, "simple", "advanced", "pytorch"])
def test_every_kind_of_profiler_names_a_file(kind):
    fields = {field.name: None for field in dataclasses.fields(Profiling)}
    assert Profiling(**{**fields, "kind": kind}).variant in PROFILERS


def test_no_template_outside_the_profilers_tests_which_profiler_it_is():
    imports = '{% import "profilers/" ~ plan.profiling.variant ~ ".j2" as profiler with context %}'
    assert [line for line in _lines(PROFILER_TEST, "profilers") if not line.endswith(imports)] == []


def test_the_folders_hold_the_variants_and_their_shared_code_only():
    assert {p.stem for p in (template_dir() / "progress").glob("*.j2")} == {*BARS, "shared"}
    assert {p.stem for p in (template_dir() / "profilers").glob("*.j2")} == {*PROFILERS, "shared"}
    assert {p.stem for p in (template_dir() / "loggers").glob("*.j2")} == {*LOGGERS, "shared"}


@pytest.mark.parametrize("kind", [None, "own", "tqdm", "rich"])
def test_every_kind_of_bar_names_a_file(kind):
    fields = {field.name: 0 for field in dataclasses.fields(Progress)}
    assert Progress(**{**fields, "kind": kind}).bar in BARS


def test_every_kind_of_logger_names_a_file_in_order():
    fields = {field.name: None for field in dataclasses.fields(Logging)}
    logging = Logging(**{**fields, "kinds": frozenset(LOGGER_KINDS.values())})
    assert logging.kinds_in_order == LOGGERS


def _lines(pattern: re.Pattern[str], folder: str) -> list[str]:
    found = []
    for path in sorted(template_dir().rglob("*.j2")):
        if path.parent.name == folder:
            continue
        text = path.read_text(encoding="utf-8")
        if path.name == "train.py.j2":  # its import lines (before the first include) are left to the imports
            text = text[text.index("{% include") :]
        found += [f"{path.name}: {line.strip()}" for line in text.splitlines() if pattern.search(line)]
    return found


def test_no_template_outside_the_bars_tests_which_bar_it_is():
    imports = '{% import "progress/" ~ plan.progress.bar ~ ".j2" as bar with context %}'
    assert [line for line in _lines(BAR_TEST, "progress") if not line.endswith(imports)] == []


def test_no_template_outside_the_loggers_tests_which_logger_it_is():
    assert [line for line in _lines(LOGGER_TEST, "loggers") if line not in LOGGER_TEST_ALLOWED] == []
