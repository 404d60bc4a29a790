"""The command line: render / run / check / diff / schema, exit codes, atomic output, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, env_with_root, write_spec

MODEL = """
import torch
from torch.utils.data import DataLoader, TensorDataset

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 2, generator=g), torch.randn(8, 1, generator=g)), batch_size=4)
"""

SPEC = {
    "seed_everything": 1,
    "model": {"class_path": "proj.models.Tiny"},
    "trainer": {"max_epochs": 2, "logger": False, "enable_checkpointing": False, "enable_progress_bar": False},
}


def loopgen(*args: str, cwd: Path, check: bool = False) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "loopgen", *args], cwd=cwd, env=env_with_root(), capture_output=True, text=True
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "models.py").write_text(MODEL)
    write_spec(tmp_path, SPEC)
    return tmp_path


def test_render_to_stdout_and_file(project):
    out = loopgen("render", "spec.yaml", cwd=project, check=True).stdout
    compile(out, "train.py", "exec")
    loopgen("render", "spec.yaml", "-o", "train.py", cwd=project, check=True)
    assert (project / "train.py").read_text().replace("train.py", "X") == out.replace("train.py", "X")


def test_render_is_deterministic(project):
    first = loopgen("render", "spec.yaml", cwd=project, check=True).stdout
    assert loopgen("render", "spec.yaml", cwd=project, check=True).stdout == first


def test_run_executes_the_script_and_returns_its_status(project):
    assert loopgen("run", "spec.yaml", cwd=project).returncode == 0
    (project / "proj" / "models.py").write_text(
        MODEL + "\n    def on_train_start(self):\n        raise SystemExit(7)\n"
    )
    assert loopgen("run", "spec.yaml", cwd=project).returncode == 7


def test_check_and_diff(project):
    loopgen("render", "spec.yaml", "-o", "train.py", cwd=project, check=True)
    assert loopgen("check", "spec.yaml", "train.py", cwd=project).returncode == 0
    write_spec(project, {**SPEC, "trainer": {**SPEC["trainer"], "max_epochs": 5}}, "other.yaml")
    stale = loopgen("check", "other.yaml", "train.py", cwd=project)
    assert stale.returncode == 1 and "-MAX_EPOCHS = 2" in stale.stdout and "+MAX_EPOCHS = 5" in stale.stdout
    result = loopgen("diff", "spec.yaml", "other.yaml", cwd=project)
    diff = result.stdout
    assert result.returncode == 1  # the scripts differ, as diff(1) says
    assert "-MAX_EPOCHS = 2" in diff and "+MAX_EPOCHS = 5" in diff


def test_schema_is_json():
    schema = json.loads(loopgen("schema", cwd=ROOT, check=True).stdout)
    assert "trainer" in schema["properties"]


@pytest.mark.parametrize(
    "spec_text, expected",
    [
        ("model: proj.models.Tiny\ntrainer:\n  max_epoch: 3\n", ["trainer.max_epoch", "line 3", "max_epochs"]),
        ("model: proj.models.Tiny\ntrainer:\n  max_epochs: many\n", ["trainer.max_epochs", "line 3"]),
        ("model: proj.models.Tiy\n", ["model", "Tiny"]),
        ("model: proj.modls.Tiny\n", ["model", "proj.models"]),
        ("model: [unclosed\n", ["line"]),
        ("trainer:\n  max_epochs: 1\n", ["model"]),
    ],
    ids=["typo-key", "wrong-type", "missing-class", "missing-module", "bad-yaml", "no-model"],
)
def test_bad_spec_exits_2_with_one_line_per_problem(project, spec_text, expected):
    (project / "bad.yaml").write_text(spec_text)
    (project / "out.py").write_text("keep me")
    result = loopgen("render", "bad.yaml", "-o", "out.py", cwd=project)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stdout == ""
    for text in expected:
        assert text in result.stderr
    assert all(line.startswith("loopgen: ") for line in result.stderr.strip().splitlines())
    assert (project / "out.py").read_text() == "keep me"


def test_missing_spec_file(project):
    result = loopgen("render", "nope.yaml", cwd=project)
    assert result.returncode == 2 and "nope.yaml" in result.stderr and "Traceback" not in result.stderr


def test_rendering_never_imports_the_users_module(project):
    marker = project / "imported.txt"
    poisoned = f"open({str(marker)!r}, 'w').write('x')\nraise RuntimeError('imported!')\n" + MODEL
    (project / "proj" / "models.py").write_text(poisoned)
    result = loopgen("render", "spec.yaml", cwd=project)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


def test_unwritable_output_directory(project):
    result = loopgen("render", "spec.yaml", "-o", "no/such/dir/train.py", cwd=project)
    assert result.returncode == 2 and "no/such/dir" in result.stderr


def test_output_is_replaced_atomically(project, monkeypatch):
    """A failure while writing leaves the old file untouched and no temporary file behind."""
    from loopgen import cli

    target = project / "train.py"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cli.os, "replace", broken_replace)
    with pytest.raises(OSError):
        cli.write_atomically(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in project.iterdir() if p.name.startswith(".train.py")] == []


def test_python_dash_m_and_console_script_agree(project):
    assert loopgen("--version", cwd=project, check=True).stdout.startswith("loopgen ")


BLACK_60 = "[tool.black]\nline-length = 60\nskip-string-normalization = true\n"


def black_check(script: Path, cwd: Path) -> subprocess.CompletedProcess:
    """`black --check` as the project runs it: from its directory, with its own configuration."""
    return subprocess.run(
        [sys.executable, "-m", "black", "--check", str(script)], cwd=cwd, capture_output=True, text=True
    )


def test_script_is_formatted_as_the_project_configures_black(project):
    (project / "pyproject.toml").write_text(BLACK_60)
    loopgen("render", "spec.yaml", "-o", "train.py", cwd=project, check=True)
    script = (project / "train.py").read_text()
    assert black_check(project / "train.py", project).returncode == 0
    assert loopgen("check", "spec.yaml", "train.py", cwd=project).returncode == 0
    assert loopgen("render", "spec.yaml", cwd=project, check=True).stdout == script  # stdout: the current directory's

    (project / "plain").mkdir()
    (project / "plain" / "pyproject.toml").write_text("[tool.black]\n")
    loopgen("render", "spec.yaml", "-o", "plain/train.py", cwd=project, check=True)
    plain = (project / "plain" / "train.py").read_text()
    assert plain != script and len(plain.splitlines()) < len(script.splitlines())  # 88 wraps less than 60
    assert black_check(project / "plain" / "train.py", project / "plain").returncode == 0
    assert loopgen("check", "spec.yaml", "plain/train.py", cwd=project).returncode == 0
    (project / "plain" / "train.py").write_text(script)  # formatted for the other project
    assert loopgen("check", "spec.yaml", "plain/train.py", cwd=project).returncode == 1


def test_nearest_pyproject_with_a_black_table_wins(project):
    (project / "pyproject.toml").write_text(BLACK_60)
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text('[project]\nname = "sub"\n\n[tool.ruff]\nline-length = 100\n')
    loopgen("render", "spec.yaml", "-o", "train.py", cwd=project, check=True)
    loopgen("render", "spec.yaml", "-o", "sub/train.py", cwd=project, check=True)
    assert (project / "sub" / "train.py").read_text() == (project / "train.py").read_text()
    assert black_check(project / "sub" / "train.py", project / "sub").returncode == 0


@pytest.mark.parametrize(
    "pyproject, expected",
    [
        ("[tool.black\nline-length = 60\n", "not valid TOML"),
        ('[tool.black]\nline-length = "long"\n', "line-length"),
        ('[tool.black]\ntarget-version = "py310"\n', "target-version"),
        ('[tool.black]\ntarget-version = ["py2"]\n', "py2"),
        ("[tool.black]\nenable-unstable-feature = ['string_processing']\n", "preview"),
        ("[tool]\nblack = 3\n", "[tool.black]"),
    ],
    ids=["bad-toml", "bad-int", "not-a-list", "bad-version", "feature-without-preview", "not-a-table"],
)
def test_bad_black_configuration_exits_2_with_one_line(project, pyproject, expected):
    (project / "pyproject.toml").write_text(pyproject)
    for args in (["render", "spec.yaml", "-o", "train.py"], ["render", "spec.yaml"]):
        result = loopgen(*args, cwd=project)
        assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("loopgen: error: "), result.stderr
        assert str(project / "pyproject.toml") in lines[0] and expected in lines[0]
    assert not (project / "train.py").exists()


def test_rendering_does_not_depend_on_hash_seed_or_working_directory(tmp_path):
    """The same spec and output give the same bytes, whatever the hash seed and current directory."""
    spec = ROOT / "examples" / "callback_stop.yaml"
    out = tmp_path / "out" / "callback_stop.py"
    out.parent.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    scripts = set()
    for seed, cwd in (("0", ROOT), ("1", ROOT), ("12345", elsewhere), ("1", elsewhere)):
        env = {**env_with_root(), "LOOPGEN_NO_CACHE": "1", "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-m", "loopgen", "render", str(spec), "-o", str(out)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        scripts.add(out.read_bytes())
    assert len(scripts) == 1
