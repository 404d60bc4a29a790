"""The script checks at run time what the spec declared: a clear error when the model disagrees."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import env_with_root, render

MODEL = '''
import torch
from torch.utils.data import DataLoader, TensorDataset


class Flexible(torch.nn.Module):
    """configure_optimizers and training_step return what init_args ask for."""

    def __init__(self, optimizers=1, scheduler=None, frequencies=None, hiddens=True, monitor=None, nan=None):
        super().__init__()
        self.a, self.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
        self.nan = nan
        if nan == "parameter":
            self.unused = torch.nn.Parameter(torch.tensor([float("nan")]))
        self.n, self.scheduler_kind, self.frequencies, self.hiddens, self.monitor = (
            optimizers, scheduler, frequencies, hiddens, monitor)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 3, 2, generator=g)), batch_size=4)

    def training_step(self, batch, batch_idx, *args):
        loss = self.b(self.a(batch[0])).sum()
        if self.nan == "loss" and batch_idx == 1:
            loss = loss * float("nan")
        return {"loss": loss, "hiddens": None} if self.hiddens else loss

    def configure_optimizers(self):
        optimizers = [torch.optim.SGD(self.parameters(), lr=0.1) for _ in range(self.n)]
        if self.frequencies:
            return [{"optimizer": o, "frequency": f} for o, f in zip(optimizers, self.frequencies)]
        if self.scheduler_kind == "plateau":
            plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizers[0])
            return {"optimizer": optimizers[0], "lr_scheduler": plateau, "monitor": self.monitor}
        if self.scheduler_kind == "step":
            return optimizers, [torch.optim.lr_scheduler.StepLR(optimizers[0], 1)]
        return optimizers


class TwoOptimizers(Flexible):
    def training_step(self, batch, batch_idx, optimizer_idx):
        return self.b(self.a(batch[0])).sum()
'''


def run(
    tmp_path,
    monkeypatch,
    init_args: dict,
    trainer: dict | None = None,
    loop: dict | None = None,
    model: str = "Flexible",
):
    (tmp_path / "flex").mkdir(exist_ok=True)
    (tmp_path / "flex" / "__init__.py").write_text("")
    (tmp_path / "flex" / "models.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    spec = {
        "seed_everything": 0,
        "model": {"class_path": f"flex.models.{model}", "init_args": init_args},
        "trainer": {
            "accelerator": "cpu",
            "max_epochs": 1,
            "logger": False,
            "enable_checkpointing": False,
            "enable_progress_bar": False,
            **(trainer or {}),
        },
    }
    if loop:
        spec["loop"] = loop
    script = tmp_path / "train.py"
    script.write_text(render(spec, tmp_path))
    return subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env_with_root(tmp_path), capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "init_args, trainer, loop, message",
    [
        (
            {"optimizers": 2},
            None,
            None,
            "configure_optimizers() returned 2 optimizers; this script was rendered for one",
        ),
        ({"scheduler": "step"}, None, {"lr_schedulers": False}, "set `loop: {lr_schedulers: true}`"),
        (
            {"optimizers": 2, "frequencies": [1, 1], "model": "TwoOptimizers"},
            None,
            {"optimizer_frequencies": [2, 1]},
            "gives the optimizer frequencies [1, 1], but this script was rendered for [2, 1]",
        ),
        (
            {"hiddens": False},
            {"truncated_bptt_steps": 2},
            None,
            'training_step must return {"loss": ..., "hiddens": ...}',
        ),
        (
            {"scheduler": "plateau", "monitor": "val_loss"},
            None,
            None,
            "ReduceLROnPlateau conditioned on metric val_loss which is not available. Available metrics are: []",
        ),
        ({"nan": "loss"}, {"terminate_on_nan": True}, None, "ValueError: The loss returned in `training_step` is nan"),
        (
            {"nan": "parameter"},
            {"terminate_on_nan": True},
            None,
            "ValueError: Detected nan and/or inf values in `unused`. Check your forward pass",
        ),
    ],
    ids=[
        "two-optimizers",
        "undeclared-scheduler",
        "frequencies",
        "no-hiddens",
        "missing-monitor",
        "nan-loss",
        "nan-parameter",
    ],
)
def test_clear_error(tmp_path, monkeypatch, init_args, trainer, loop, message):
    init_args = dict(init_args)
    model = init_args.pop("model", "Flexible")
    result = run(tmp_path, monkeypatch, init_args, trainer, loop, model)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr[-2000:]


def test_declared_scheduler_runs(tmp_path, monkeypatch):
    result = run(tmp_path, monkeypatch, {"scheduler": "step"})
    assert result.returncode == 0, result.stderr[-2000:]


def test_nan_without_terminate_on_nan_trains_on(tmp_path, monkeypatch):
    assert run(tmp_path, monkeypatch, {"nan": "loss"}).returncode == 0


STEP_END = """
import torch
from flex.models import Flexible


class PlainStep(Flexible):
    def training_step(self, batch, batch_idx):
        return self.b(self.a(batch[0])).sum()


class StepEndNone(PlainStep):
    def training_step_end(self, output):
        self.seen = getattr(self, "seen", 0) + 1
        return None  # keeps training_step's output


class StepEndScaled(PlainStep):
    def training_step_end(self, output):
        return output * 0.5


class SkipsAndCollects(PlainStep):
    # training_step skips odd batches; training_epoch_end sees only the steps that returned a loss (1.9.5)

    def training_step(self, batch, batch_idx):
        return None if batch_idx % 2 else self.b(self.a(batch[0])).sum()

    def training_epoch_end(self, outputs):
        self.collected = [sorted(o) for o in outputs]

    def val_dataloader(self):
        return self.train_dataloader()

    def validation_step(self, batch, batch_idx):
        # None from validation_step is left out of validation_epoch_end's outputs (1.9.5)
        return None if batch_idx % 2 else batch_idx

    def validation_epoch_end(self, outputs):
        self.validation_outputs = outputs
"""


def test_training_step_end(tmp_path, monkeypatch):
    """None from training_step_end keeps training_step's output; anything else replaces it."""
    import torch

    from tests.helpers import train_script

    run(tmp_path, monkeypatch, {})  # writes the flex package
    (tmp_path / "flex" / "step_end.py").write_text(STEP_END)
    weights = {}
    for name in ("PlainStep", "StepEndNone", "StepEndScaled"):
        spec = {
            "seed_everything": 0,
            "model": f"flex.step_end.{name}",
            "trainer": {"accelerator": "cpu", "max_epochs": 2, "logger": False},
        }
        script = tmp_path / f"{name}.py"
        script.write_text(render(spec, tmp_path))
        monkeypatch.setenv("PYTHONPATH", str(tmp_path))
        weights[name] = train_script(script, tmp_path / f"{name}.pt")["state_dict"]
    assert all(torch.equal(weights["PlainStep"][k], weights["StepEndNone"][k]) for k in weights["PlainStep"])
    assert not all(torch.equal(weights["PlainStep"][k], weights["StepEndScaled"][k]) for k in weights["PlainStep"])


COUNTERS = """
from flex.step_end import PlainStep


class ReadsCounters(PlainStep):
    def on_train_start(self):
        self.seen = [(self.current_epoch, self.global_step)]

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.seen.append((self.current_epoch, self.global_step))
"""


def trained_attributes(tmp_path, monkeypatch, model: str, max_epochs: int, attributes: str) -> str:
    """Train `flex.<model>` and print `attributes` (an expression in `m`, the trained model)."""
    run(tmp_path, monkeypatch, {})  # writes the flex package
    (tmp_path / "flex" / "step_end.py").write_text(STEP_END)
    (tmp_path / "flex" / "counters.py").write_text(COUNTERS)
    spec = {
        "seed_everything": 0,
        "model": f"flex.{model}",
        "trainer": {"accelerator": "cpu", "max_epochs": max_epochs, "logger": False},
    }
    script = tmp_path / "attributes.py"
    script.write_text(render(spec, tmp_path))
    code = f"import runpy; m = runpy.run_path({str(script)!r})['main'](); print({attributes})"
    result = subprocess.run([sys.executable, "-c", code], env=env_with_root(tmp_path), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_training_epoch_end_sees_only_steps_with_a_loss(tmp_path, monkeypatch):
    printed = trained_attributes(
        tmp_path, monkeypatch, "step_end.SkipsAndCollects", 1, "m.collected, m.validation_outputs"
    )
    assert printed == "[['loss']] [0]"  # 2 batches: batch 1 skipped, in training and validation


def test_plain_module_reads_the_loop_counters(tmp_path, monkeypatch):
    printed = trained_attributes(tmp_path, monkeypatch, "counters.ReadsCounters", 2, "m.seen")
    assert printed == "[(0, 0), (0, 1), (0, 2), (1, 3), (1, 4)]"


TRAIN_ONLY = '''
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class TrainOnly(pl.LightningModule):
    """Two training batches an epoch, and no validation at all."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.ones(8, 2), torch.ones(8, 1)), batch_size=4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Estimating(TrainOnly):
    """Validates on two batches; reads trainer.estimated_stepping_batches in configure_optimizers, which loads
    the training data before the sanity check."""

    def val_dataloader(self):
        return DataLoader(TensorDataset(torch.ones(8, 2), torch.ones(8, 1)), batch_size=4)

    def validation_step(self, batch, batch_idx):
        pass

    def configure_optimizers(self):
        print("estimate", self.trainer.estimated_stepping_batches)
        return super().configure_optimizers()
'''


@pytest.mark.parametrize(
    ("model", "limit_val_batches"),
    [("TrainOnly", 1.0), ("TrainOnly", 0), ("Estimating", 0.25)],
    ids=["no_validation", "limit_val_0", "estimate_before_the_sanity_check"],
)
def test_an_interval_beyond_the_epoch_is_checked_as_lightning_checks_it(tmp_path, model, limit_val_batches) -> None:
    """Lightning 2.x checks an int val_check_interval against the epoch's batches as the training data loads,
    even without validation, unless limit_val_batches is 0, and before the sanity check (whose 0.25 of two val
    batches it would refuse) where configure_optimizers reads the estimate: the script raises where Lightning's
    Trainer raises, with its message, and trains where it trains."""
    from tests.helpers import run_parity_side

    (tmp_path / "trainonly.py").write_text(TRAIN_ONLY)
    trainer = {"max_epochs": 1, "val_check_interval": 3, "limit_val_batches": limit_val_batches}
    spec = {"seed_everything": 0, "model": {"class_path": f"trainonly.{model}"}, "trainer": trainer}
    sides = {
        side: run_parity_side(side, spec, tmp_path / side, env_with_root(tmp_path)) for side in ("lightning", "loopgen")
    }
    message = "`val_check_interval` (3) must be less than or equal to the number of the training batches (2)."
    for side, result in sides.items():
        if limit_val_batches:
            assert result.returncode != 0 and message in result.stderr, (side, result.stderr[-2000:])
        else:
            assert result.returncode == 0, (side, result.stderr[-2000:])
