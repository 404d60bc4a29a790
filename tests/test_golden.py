"""generated_examples/ is exactly what the example specs render to now (regenerate: python -m tests.golden)."""

import ast
import subprocess
import sys

import pytest

from tests.golden import GENERATED, ROOT, example_specs, golden_path, render_example


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


# optional packages a script may import, each only when its spec names the class that needs it
OPTIONAL = {
    "tensorboard": "TensorBoardLogger",
    "torch.utils.tensorboard": "TensorBoardLogger",
    "mlflow": "MLFlowLogger",
    "wandb": "WandbLogger",
    "tqdm": "TQDMProgressBar",
    "rich": "RichProgressBar",
}


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_script_imports_only_stdlib_torch_and_user_code(spec):
    tree = ast.parse(golden_path(spec).read_text(encoding="utf-8"))
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module)
    named = spec.read_text(encoding="utf-8")
    optional = {module for module, cls in OPTIONAL.items() if cls in named}
    allowed = set(sys.stdlib_module_names) | {"torch", "examples"} | optional
    imported = {module.split(".")[0] for module in modules}
    assert imported <= allowed, imported - allowed
    assert not imported & {"loopgen", "pytorch_lightning", "lightning", "numpy", "yaml", "matplotlib"}
    unnamed = {module for module in modules for package in set(OPTIONAL) - optional if module.startswith(package)}
    assert not unnamed, f"{sorted(unnamed)} imported, but the spec names none of {sorted(OPTIONAL.values())}"


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_script_is_clean_under_ruff(spec):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", str(golden_path(spec))],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def test_scripts_are_formatted_with_blacks_defaults(tmp_path):
    """With an empty configuration (so not the repository's line length of 120), and as a plain `black --check`
    finds it: generated_examples/pyproject.toml asks for the defaults."""
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    scripts = [str(golden_path(spec)) for spec in example_specs()]
    for command in (["--config", str(empty), *scripts], [str(GENERATED)]):
        result = subprocess.run(
            [sys.executable, "-m", "black", "--check", *command], cwd=ROOT, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr


def test_scripts_are_clean_under_stricter_ruff():
    """pycodestyle, pyflakes, bugbear and unused arguments, at black's default line length."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E,F,W,B,ARG", str(GENERATED)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("spec", example_specs(), ids=lambda p: p.stem)
def test_script_defines_nothing_it_does_not_use(spec):
    from tests.test_text import unused_definitions

    assert not unused_definitions(golden_path(spec).read_text(encoding="utf-8"))
