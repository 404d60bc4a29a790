"""Which subcommands a script has (loop.subcommands, or what the module provides), what the spec may say about
them, and what the script's command line refuses. Lightning parity of the runs themselves is
tests/parity/test_evaluation.py's."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from loopgen.errors import LoopgenError
from loopgen.pipeline import render_spec
from loopgen.verify import subcommands_of
from tests.helpers import env_with_root

MODELS = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def loader(n):
    g = torch.Generator().manual_seed(n)
    return DataLoader(TensorDataset(torch.randn(n, 4, generator=g), torch.randn(n, 1, generator=g)), batch_size=4)


class Fits(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        pass

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return loader(16)

    def val_dataloader(self):
        return loader(8)


class Tests(Fits):
    def test_step(self, batch, batch_idx):
        pass

    def test_dataloader(self):
        return loader(8)


class TestEpochEnd(Tests):
    def test_epoch_end(self, outputs):
        pass


class TrainEpochEnd(Tests):
    def training_epoch_end(self, outputs):
        pass


class FetchesItsOwn(Tests):
    # Lightning's dataloader_iter steps: the step takes the loader's iterator and fetches its batches

    def training_step(self, dataloader_iter):
        x, y = next(dataloader_iter)
        return torch.nn.functional.mse_loss(self(x), y)

    def test_step(self, dataloader_iter, batch_idx=None):
        next(dataloader_iter)
"""

TRAINER = {"max_epochs": 1, "logger": False, "enable_progress_bar": False, "enable_model_summary": False}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "subproj").mkdir()
    (tmp_path / "subproj" / "__init__.py").write_text("")
    (tmp_path / "subproj" / "models.py").write_text(textwrap.dedent(MODELS))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(project: Path, model: str, loop: dict | None = None, **trainer) -> Path:
    spec = {"seed_everything": 1, "model": f"subproj.models.{model}", "trainer": {**TRAINER, **trainer}}
    if loop is not None:
        spec["loop"] = loop
    path = project / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def render_problems(path: Path) -> list[str]:
    with pytest.raises(LoopgenError) as excinfo:
        render_spec(path)
    return [re.sub(r" \(line \d+\)", "", str(problem)) for problem in excinfo.value.problems]


def commands(text: str) -> list[str]:
    """The script's evaluation subcommands (its command line's choices besides fit)."""
    return subcommands_of(text)


def test_a_module_that_only_fits_keeps_a_fit_only_script(project: Path) -> None:
    text, notices = render_spec(write(project, "Fits"))
    assert commands(text) == [] and "def evaluate(" not in text and not notices


def test_test_step_brings_every_subcommand_the_module_provides(project: Path) -> None:
    text, _ = render_spec(write(project, "Tests"))
    # predict: forward, for Lightning's default predict_step, but no predict_dataloader: not offered
    assert commands(text) == ["validate", "test"]
    assert "def run_test(" in text and "def run_validate(" in text and "def run_predict(" not in text


def test_loop_subcommands_chooses_them(project: Path) -> None:
    text, _ = render_spec(write(project, "Fits", loop={"subcommands": ["fit", "validate"]}))
    assert commands(text) == ["validate"]
    text, _ = render_spec(write(project, "Tests", loop={"subcommands": ["fit"]}))
    assert commands(text) == [] and "def evaluate(" not in text


def test_loop_subcommands_problems(project: Path) -> None:
    found = render_problems(write(project, "Tests", loop={"subcommands": ["fit", "tset", "test", "test"]}))
    assert found == [
        "loop.subcommands[1]: unknown subcommand 'tset' (did you mean 'test'?)",
        "loop.subcommands[3]: test is listed twice",
    ], found
    found = render_problems(write(project, "Tests", loop={"subcommands": ["test"]}))
    assert found == ["loop.subcommands: the script always has fit: list it (e.g. [fit, test])"], found
    found = render_problems(write(project, "Fits", loop={"subcommands": ["fit", "predict"]}))
    assert found == [
        (
            "loop.subcommands: predict needs predict_step (or forward, for Lightning's default predict_step)"
            " on subproj.models.Fits and predict_dataloader() on subproj.models.Fits"
        )
    ], found


def test_steps_that_fetch_their_own_batches_are_refused(project: Path) -> None:
    """A step taking dataloader_iter would get a batch and fail when it runs: refused, at the step."""
    found = render_problems(write(project, "FetchesItsOwn"))
    assert [problem.split(": ", 1)[1] for problem in found] == [
        f"subproj.models.FetchesItsOwn.{step} takes dataloader_iter (Lightning's steps that fetch their own"
        " batches), which the script does not serve: take the batch, (batch, batch_idx)"
        for step in ("training_step", "test_step")
    ], found


def test_what_evaluation_does_not_serve_yet_keeps_fit_only_and_says_so(project: Path) -> None:
    """Lightning 1.9.5's evaluation outputs (test_epoch_end, which 2.x refuses): fit only, and a notice; listing
    the subcommands is an error. A profiler, a 1.9.5 flag on one device and a 1.9.5 hook under DDP are served."""
    reason = "validate, test and predict are not written for a `test_epoch_end` hook (Lightning 1.9.5's; 2.x"
    text, notices = render_spec(write(project, "TestEpochEnd"))
    assert commands(text) == [] and any(n.startswith(f"the module has test_step, but the script's {reason}")
                                        for n in notices), notices  # fmt: skip
    found = render_problems(write(project, "TestEpochEnd", loop={"subcommands": ["fit", "test"]}))
    assert len(found) == 1 and found[0].startswith(f"loop.subcommands: {reason}"), found
    for model, flags in (("Tests", {"profiler": "simple"}), ("Tests", {"track_grad_norm": 2}),
                         ("TrainEpochEnd", {"strategy": "ddp", "devices": 2, "accelerator": "cpu"})):  # fmt: skip
        text, notices = render_spec(write(project, model, **flags))
        assert commands(text) == ["validate", "test"] and not notices, flags


def test_ddp_evaluates_on_each_process_share_and_so_do_lightning_1_9_5s_strategies(project: Path) -> None:
    """DDP's runs read each process's share of the loaders (predict's unrepeated), under torch.no_grad in a gloo
    group; DataParallel's run the steps through its wrapper, Horovod's read their shares in inference mode (no
    torch.distributed group)."""
    text, notices = render_spec(write(project, "Tests", strategy="ddp", devices=2, accelerator="cpu"))
    assert commands(text) == ["validate", "test"] and not notices
    run_test = "".join(text[text.index("def run_test(") : text.index("def loaders_of(")].split())
    assert "with_distributed_sampler(loader,isinstance(loader.sampler,RandomSampler),world_size,global_rank" in run_test
    assert "with torch.no_grad():" in text and "inference_mode" not in text  # the CPU's gloo
    assert "repeats=False" not in text  # no predict: no unrepeated shares
    text, _ = render_spec(write(project, "Tests", strategy="ddp", devices=2, accelerator="auto"))
    assert 'torch.no_grad() if dist.get_backend() == "gloo" else torch.inference_mode()' in text
    text, notices = render_spec(write(project, "Tests", strategy="dp", devices=2, accelerator="gpu"))
    assert commands(text) == ["validate", "test"] and not notices
    assert 'dp_model("test_step", *args)' in text and "torch.inference_mode()" in text
    text, notices = render_spec(write(project, "Tests", strategy="horovod", devices=2, accelerator="cpu"))
    assert commands(text) == ["validate", "test"] and not notices
    assert "with torch.inference_mode():" in text and "dist." not in text


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = project / "train.py"
    script.write_text(render_spec(project / "spec.yaml", script)[0], encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=project, env=env_with_root(project), capture_output=True, text=True
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["fit", "--ckpt-path", "x.ckpt"], "fit --ckpt-path: this script was rendered without checkpointing"),
        (["test", "--test", "best"], "--test is an option of fit, not of test"),
        (["predict"], "invalid choice: 'predict'"),
        (["test", "--ckpt-path", "best"], "test --ckpt-path best: `ModelCheckpoint` is not configured"),
        (["validate", "--ckpt-path", "missing.ckpt"], "--ckpt-path missing.ckpt: no such file"),
    ],
)
def test_the_command_line_refuses_what_the_script_cannot_do(project: Path, args: list[str], error: str) -> None:
    write(project, "Tests", enable_checkpointing=False)
    result = run(project, *args)
    assert result.returncode != 0 and error in result.stderr, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


def test_best_without_a_checkpoint_to_read_it_from(project: Path) -> None:
    write(project, "Tests")
    result = run(project, "test", "--ckpt-path", "best")
    assert result.returncode == 1 and "test --ckpt-path best: no checkpoint in " in result.stderr, result.stderr
    result = run(project, "validate", "--ckpt-path", "last")
    assert result.returncode == 1 and "validate --ckpt-path last: no last checkpoint in " in result.stderr
