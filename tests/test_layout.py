"""The compiler's shape: packages that show the pipeline, no module too long to read, no import cycles.

Imports inside functions count: a cycle hidden behind a lazy import is still a cycle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "loopgen"
MAX_LINES = 700


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The loopgen modules `path` imports, anywhere in it (`from loopgen.a import b` imports loopgen.a.b when
    that is a module, else loopgen.a)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in known}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(path, set(known)) - {name} for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_check_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_over_700_lines(name):
    lines = len(modules()[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it by feature"


def test_the_pipeline_packages():
    """A newcomer finds each stage in its package: the spec, the user's source, the plan (one module per
    feature), the renderer; the commands at the top."""
    for package in ("spec", "source", "plan", "render"):
        assert (PACKAGE / package / "__init__.py").is_file(), package
    plan_modules = {path.stem for path in (PACKAGE / "plan").glob("*.py")}
    assert {"precision", "optimization", "checkpointing", "loggers", "progress", "ddp", "xla"} <= plan_modules


def test_the_command_line_imports_cleanly():
    """`import loopgen.cli` in a fresh interpreter, importing every module of the package."""
    names = " ".join(name for name in sorted(modules()) if name != "loopgen.__main__")  # runs the command
    code = f"import importlib, loopgen.cli\nfor name in {names!r}.split(): importlib.import_module(name)"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
