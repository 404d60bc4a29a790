"""generated_examples/ is exactly what the example specs render to now (regenerate: python -m tests.golden)."""

import ast
import sys

import pytest

from tests.golden import ROOT, example_specs, golden_path, render_example


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_golden_file_is_current(spec):
    golden = golden_path(spec)
    assert golden.exists(), f"{golden.name} missing: run `python -m tests.golden`"
    assert golden.read_text(encoding="utf-8") == render_example(spec), "stale: run `python -m tests.golden`"


def test_every_golden_file_has_a_spec():
    assert {p.name for p in golden_path(ROOT).parent.glob("*.py")} == {golden_path(s).name for s in example_specs()}


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_script_imports_only_stdlib_torch_and_user_code(spec):
    tree = ast.parse(golden_path(spec).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    allowed = set(sys.stdlib_module_names) | {"torch", "examples"}
    assert imported <= allowed, imported - allowed
    assert not imported & {"loopgen", "pytorch_lightning", "lightning", "numpy", "yaml"}


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_script_is_clean_under_ruff(spec):
    import subprocess

    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", str(golden_path(spec))],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout
