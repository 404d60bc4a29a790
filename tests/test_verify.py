"""`loopgen verify`'s three outcomes: identical (0) on a supported spec; different (1): the first difference on a
module that trains differently under the two, or the script failing where Lightning trained; could not compare (2),
saying why: Lightning or jsonargparse[signatures] missing (simulated by a stub package on PYTHONPATH that fails to
import, as an uninstalled one would), the Lightning run failing, a module the script imports missing, a spec that
does not render or is unseeded."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from loopgen import verify as verify_module
from loopgen.cli import main
from loopgen.errors import LoopgenError
from tests.helpers import ROOT


def write_spec(tmp_path: Path, model: str, **trainer: object) -> Path:
    spec = {
        "seed_everything": 5,
        "model": {"class_path": model, "init_args": {"hidden": 8}},
        "trainer": {"max_epochs": 2, "logger": False, "enable_checkpointing": False, **trainer},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_identical_on_a_supported_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.models.MLP", val_check_interval=0.5)
    assert main(["verify", str(spec), "--steps", "12"]) == 0
    assert capsys.readouterr().out.strip() == "identical: 12 steps, 4 tensors"


def evaluation_spec(tmp_path: Path, model: str) -> Path:
    """A module with test_step and predict_step and a datamodule: its script has validate, test and predict."""
    spec = {
        "seed_everything": 5,
        "model": {"class_path": model},
        "data": {"class_path": "tests.parity.eval_models.EvalData"},
        "trainer": {"max_epochs": 2, "logger": False, "enable_checkpointing": False, "enable_progress_bar": False},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_the_evaluation_subcommands_are_compared_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    assert main(["verify", str(evaluation_spec(tmp_path, "tests.parity.eval_models.HookedEvalModel"))]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["identical: 12 steps, 4 tensors", "identical: validate, test, predict of the fitted weights"], out


@pytest.mark.slow
def test_an_evaluation_difference_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    assert main(["verify", str(evaluation_spec(tmp_path, "tests.parity.side_models.EvalSideDependent"))]) == 1
    out = capsys.readouterr().out
    assert "different: test: [0] test_loss: Lightning 0." in out and ", the script 0." in out, out


@pytest.mark.slow
def test_reports_the_first_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.side_models.SideDependent")
    assert main(["verify", str(spec), "--steps", "6"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("different: step 4, tensor net.0.weight, max abs difference "), out
    assert "mid-epoch (steps up to 3 identical)" in out


@pytest.mark.slow
def test_the_script_failing_where_lightning_trained_is_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.side_models.ScriptSideFails")
    assert main(["verify", str(spec), "--steps", "3"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("different: the script failed (exit status 1) where Lightning trained:"), out
    assert out.rstrip().endswith("RuntimeError: the script's run broke here"), out


def stub_package(tmp_path: Path, name: str) -> Path:
    """A directory holding a package `name` whose import fails as an uninstalled one's does: put first on
    PYTHONPATH, it hides the installed package from verify's runs."""
    package = tmp_path / "stubs" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
    return package.parent


@pytest.mark.parametrize(
    ("package", "expected"),
    [
        ("pytorch_lightning", "cannot compare: verify needs Lightning to train the reference run: pip install"),
        ("jsonargparse", "cannot compare: LightningCLI, which reads the spec for the reference run, needs"),
    ],
)
def test_a_missing_package_is_no_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], package: str, expected: str
) -> None:
    pytest.importorskip("pytorch_lightning")
    monkeypatch.setenv("PYTHONPATH", str(stub_package(tmp_path, package)))
    assert main(["verify", str(write_spec(tmp_path, "tests.parity.models.MLP"))]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"loopgen: error: {expected}"), err
    assert f"No module named '{package}'" in err and "pip install 'loopgen[verify]'" in err, err


@pytest.mark.slow
def test_a_failed_lightning_run_cannot_be_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    assert main(["verify", str(write_spec(tmp_path, "tests.parity.side_models.LightningSideFails"))]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "loopgen: error: cannot compare: the Lightning run failed (exit status 1): RuntimeError: this model cannot"
        " be built under Lightning"
    )


def test_a_plain_module_cannot_be_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A plain torch.nn.Module trains under the script (loopgen's model protocol), never under Lightning's Trainer:
    said before anything runs."""
    pytest.importorskip("pytorch_lightning")
    assert main(["verify", str(ROOT / "examples" / "classifier.yaml")]) == 2
    assert capsys.readouterr().err.strip() == (
        "loopgen: error: cannot compare: examples.models.Classifier is a plain torch.nn.Module (loopgen's model"
        " protocol), which Lightning's Trainer cannot train; verify compares LightningModules"
    )


@pytest.mark.slow
def test_a_module_missing_for_the_script_is_no_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.side_models.ScriptSideFails")
    data = yaml.safe_load(spec.read_text())
    data["model"]["init_args"]["missing_module"] = "loopgen_no_such_module"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    assert main(["verify", str(spec), "--steps", "3"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "loopgen: error: cannot compare: the script imports loopgen_no_such_module, which is not installed here"
        " (Lightning trained without it); install it and verify again"
    )


def test_without_lightning_a_one_line_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(verify_module, "lightning_package", lambda: None)
    assert main(["verify", str(write_spec(tmp_path, "tests.parity.models.MLP"))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'loopgen[verify]'" in err


def test_unseeded_spec_and_bad_steps_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, "tests.parity.models.MLP")
    data = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**data, "seed_everything": False}))
    assert main(["verify", str(spec)]) == 2
    assert "seed_everything: false" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:
        main(["verify", str(spec), "--steps", "0"])
    assert exit.value.code == 2


def test_a_spec_that_does_not_render_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, "tests.parity.models.MLP", max_epochs="two")
    assert main(["verify", str(spec)]) == 2
    assert "trainer.max_epochs" in capsys.readouterr().err


def test_runs_without_an_optimizer_step_cannot_be_compared(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    for side in ("lightning", "script"):
        (tmp_path / side).mkdir()
    with pytest.raises(LoopgenError, match=r"^cannot compare: neither run made an optimizer step"):
        verify_module._report(tmp_path / "lightning", tmp_path / "script", io.StringIO())


@pytest.mark.slow
def test_a_composed_spec_is_verified_as_composed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-c FILE and overrides: both runs train the composed spec (the override shortens them to 6 steps)."""
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.models.MLP", max_steps=100)
    other = tmp_path / "exp.yaml"
    other.write_text("model:\n  init_args:\n    hidden: 4\n", encoding="utf-8")
    assert main(["verify", "-c", str(spec), "-c", str(other), "--trainer.max_steps=6", "--model.lr=0.2"]) == 0
    assert capsys.readouterr().out.strip() == "identical: 6 steps, 4 tensors"


HELPER_MODULE = '''
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


def scaled_loss(module, loss):
    """A helper outside the class, handed the module, reading its trainer."""
    return loss * (1.0 + module.trainer.current_epoch)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return scaled_loss(self, torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g))
        return DataLoader(data, batch_size=8)
'''


@pytest.mark.slow
def test_a_helper_handed_the_module_reads_its_trainer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module passed to a function of the project that reads module.trainer: the script gives it the trainer
    (it crashed with "not attached to a `Trainer`" when the reader did not follow the call) and trains as
    Lightning does."""
    pytest.importorskip("pytorch_lightning")
    monkeypatch.chdir(tmp_path)  # verify finds the user's modules from the current directory
    (tmp_path / "helped").mkdir()
    (tmp_path / "helped" / "__init__.py").write_text("")
    (tmp_path / "helped" / "model.py").write_text(HELPER_MODULE)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "seed_everything: 1\nmodel: {class_path: helped.model.Net}\n"
        "trainer: {max_epochs: 2, logger: false, enable_checkpointing: false, enable_progress_bar: false}\n"
    )
    assert main(["verify", str(spec)]) == 0
    assert capsys.readouterr().out.strip() == "identical: 8 steps, 2 tensors"
