"""A user's callback that subclasses one of Lightning's callbacks other than Callback (and BasePredictionWriter,
whose write_on_* the script calls as Lightning does): the script would run only the subclass's own methods,
never the base's behaviour (a BaseFinetuning subclass would freeze nothing and train differently without a
word), so such a callback is refused at render time, at its entry."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import render

CALLBACKS = '''
import pytorch_lightning as pl
from lightning.pytorch.callbacks import ModelCheckpoint as Checkpoint
from pytorch_lightning.callbacks import BaseFinetuning, BasePredictionWriter


class Freeze(BaseFinetuning):
    def freeze_before_training(self, pl_module):
        self.freeze(pl_module.layer)

    def finetune_function(self, pl_module, current_epoch, optimizer):
        if current_epoch == 1:
            self.unfreeze_and_add_param_group(pl_module.layer, optimizer)


class KeepsBest(Checkpoint):
    def on_train_epoch_end(self, trainer, pl_module):
        print("epoch", trainer.current_epoch)


class Project(Freeze):
    """A project's own base over Lightning's."""


class Plain(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        print("epoch", trainer.current_epoch)


class Writer(BasePredictionWriter):
    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx):
        pass
'''

MODEL = """
import torch
import pytorch_lightning as pl
from torch.utils.data import DataLoader, TensorDataset


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


def spec(tmp_path: Path, callback: str) -> dict:
    (tmp_path / "cbproj").mkdir(exist_ok=True)
    for name, text in {"__init__.py": "", "callbacks.py": CALLBACKS, "model.py": MODEL}.items():
        (tmp_path / "cbproj" / name).write_text(textwrap.dedent(text))
    return {
        "model": "cbproj.model.Net",
        "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False, "callbacks": [callback]},
    }


@pytest.mark.parametrize(
    ("callback", "base"),
    [("Freeze", "BaseFinetuning"), ("KeepsBest", "ModelCheckpoint"), ("Project", "BaseFinetuning")],
)
def test_a_subclass_of_a_lightning_callback_is_refused_at_its_entry(tmp_path: Path, callback: str, base: str) -> None:
    with pytest.raises(LoopgenError) as excinfo:
        render(spec(tmp_path, f"cbproj.callbacks.{callback}"), tmp_path)
    (problem,) = excinfo.value.problems
    assert problem.where == "trainer.callbacks" and problem.line is not None
    assert problem.message.startswith(
        f"cbproj.callbacks.{callback} subclasses Lightning's {base}, whose own behaviour the script does not run"
    )
    assert "subclass Callback and write the behaviour in its hooks" in problem.message


@pytest.mark.parametrize("callback", ["Plain", "Writer"])
def test_callback_and_prediction_writer_subclasses_render(tmp_path: Path, callback: str) -> None:
    text = render(spec(tmp_path, f"cbproj.callbacks.{callback}"), tmp_path)
    assert f"from cbproj.callbacks import {callback}" in text


# --- Lightning's GradientAccumulationScheduler as a callbacks entry: the script's accumulation schedule (its
# training is compared with Lightning 2.6.6's in tests/parity/test_parity.py, accumulation_scheduler_entry)

SCHEDULER = {"class_path": "GradientAccumulationScheduler", "init_args": {"scheduling": {2: 3}}}


def test_a_gradient_accumulation_scheduler_entry_is_the_schedule(tmp_path: Path) -> None:
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    entry = {**base, "trainer": {**base["trainer"], "callbacks": [SCHEDULER, "cbproj.callbacks.Plain"]}}
    flag = {**base, "trainer": {**base["trainer"], "accumulate_grad_batches": {2: 3}}}
    assert "ACCUMULATE_GRAD_BATCHES = {0: 1, 2: 3}" in render(entry, tmp_path)
    assert render(entry, tmp_path).split('"""', 2)[2] == render(flag, tmp_path).split('"""', 2)[2]


@pytest.mark.parametrize(
    ("trainer", "message"),
    [
        ({"accumulate_grad_batches": 2}, "You have set `accumulate_grad_batches` and are using the"),
        ({"callbacks": [SCHEDULER, SCHEDULER]}, "a second GradientAccumulationScheduler: give one schedule"),
        (
            {"callbacks": [{"class_path": "GradientAccumulationScheduler", "init_args": {"scheduling": {1: 0}}}]},
            "accumulation factors must be integers >= 1",
        ),
        (
            {"callbacks": [{"class_path": "GradientAccumulationScheduler", "init_args": {"schedule": {1: 2}}}]},
            "unknown argument of GradientAccumulationScheduler (did you mean 'scheduling'?)",
        ),
        ({"profiler": "simple"}, "a profiler with a GradientAccumulationScheduler entry is not supported by loopgen"),
    ],
)
def test_what_a_scheduler_entry_cannot_serve_is_refused(tmp_path: Path, trainer: dict, message: str) -> None:
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    case = {**base, "trainer": {**base["trainer"], "callbacks": [SCHEDULER], **trainer}}
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)


def test_reading_the_scheduled_factor_with_an_entry_is_refused_where_read(tmp_path: Path) -> None:
    base = spec(tmp_path, "cbproj.callbacks.Reads")
    (tmp_path / "cbproj" / "callbacks.py").write_text(
        CALLBACKS + "\n\nclass Reads(pl.Callback):\n    def on_train_epoch_start(self, trainer, pl_module):\n"
        "        print(trainer.accumulate_grad_batches)\n"
    )
    case = {**base, "trainer": {**base["trainer"], "callbacks": [SCHEDULER, "cbproj.callbacks.Reads"]}}
    with pytest.raises(LoopgenError) as excinfo:
        render(case, tmp_path)
    assert "callbacks.py:" in str(excinfo.value)
    assert "trainer.accumulate_grad_batches with a GradientAccumulationScheduler entry is not supported" in str(
        excinfo.value
    )
