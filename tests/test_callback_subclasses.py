"""A user's callback that subclasses one of Lightning's callbacks other than Callback (and BasePredictionWriter,
whose write_on_* the script calls as Lightning does): the script would run only the subclass's own methods,
never the base's behaviour (a BaseFinetuning subclass would freeze nothing and train differently without a
word), so such a callback is refused at render time, at its entry."""

from __future__ import annotations

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
