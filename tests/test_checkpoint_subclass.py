"""A user's ModelCheckpoint subclass runs on the script's ModelCheckpointBase (templates/subclassed.j2) and writes
through the script's checkpoint files, so a run resumes from any file it decided exactly: a run stopped after two
epochs and resumed from its subclass's last file ends as the uninterrupted run does (weights, the files kept, the
subclass's own state), `--ckpt-path last` takes what the subclass's `_find_last_checkpoints` finds (its own
CHECKPOINT_NAME_LAST), and the evaluation subcommands' `last` and `best` are its files. Its training is compared
with Lightning 2.6.6's in tests/parity/test_parity.py (checkpoint_subclass_*)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.harness import checkpoint_files
from tests.helpers import env_with_root, render

torch = pytest.importorskip("torch")

WARM = {
    "class_path": "tests.parity.callbacks.WarmCheckpoint",
    "init_args": {"start_epoch": 1, "monitor": "val_loss", "save_top_k": 2, "save_last": True},
}

# a subclass with a last file of its own name, and a module whose test subcommand reports what it tested
PROJECT = """
import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import ModelCheckpoint

from tests.parity.models import CheckpointModel


class Final(ModelCheckpoint):
    CHECKPOINT_NAME_LAST = "final"


class Tested(CheckpointModel):
    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", F.cross_entropy(self(x), y))

    def test_dataloader(self):
        return self.val_dataloader()
"""


def spec(callback: dict, model: str = "tests.parity.models.CheckpointModel", **trainer) -> dict:
    flags = {"max_epochs": 4, "logger": False, "enable_progress_bar": False, "enable_checkpointing": True}
    return {
        "seed_everything": 42,
        "model": {"class_path": model},
        "trainer": {**flags, "callbacks": [callback], **trainer},
    }


def run(script: Path, cwd: Path, *args: str) -> str:
    cwd.mkdir(exist_ok=True)
    result = subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, env=env_with_root(cwd.parent), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def names(directory: Path) -> set[str]:
    return {path.name for path in checkpoint_files(directory)}


def load(path: Path) -> dict:
    return torch.load(path, weights_only=False)


def test_a_run_resumed_from_the_subclass_file_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(render(spec(WARM), tmp_path))
    run(script, tmp_path / "whole")
    run(script, tmp_path / "parts", "--max-epochs", "2")
    # nothing saved in epoch 0 (the subclass's own skip), its last file named after the epoch
    assert names(tmp_path / "parts") == {"epoch=1-step=20.ckpt", "epoch=1-last.ckpt"}
    run(script, tmp_path / "parts", "--ckpt-path", "checkpoints/epoch=1-last.ckpt")
    # the file resumed from is kept (Lightning's rule); every other file is the uninterrupted run's
    whole, parts = names(tmp_path / "whole"), names(tmp_path / "parts")
    assert parts == whole | {"epoch=1-last.ckpt"} and "epoch=3-last.ckpt" in whole
    ends = [load(side / "checkpoints" / "epoch=3-last.ckpt") for side in (tmp_path / "whole", tmp_path / "parts")]
    assert ends[0]["state_dict"].keys() == ends[1]["state_dict"].keys()
    assert all(torch.equal(ends[0]["state_dict"][k], ends[1]["state_dict"][k]) for k in ends[0]["state_dict"])
    (key,) = ends[0]["callbacks"]
    assert key.startswith("WarmCheckpoint{'monitor': 'val_loss'")
    states = [end["callbacks"][key] for end in ends]
    assert states[0]["saved_at"] == states[1]["saved_at"] == [20, 20, 30, 30, 40]  # the subclass's own state
    assert states[0]["best_model_score"] == states[1]["best_model_score"]


def test_last_is_what_the_subclass_finds_and_evaluation_uses_its_files(tmp_path: Path) -> None:
    (tmp_path / "finalproj").mkdir()
    (tmp_path / "finalproj" / "__init__.py").write_text("")
    (tmp_path / "finalproj" / "project.py").write_text(textwrap.dedent(PROJECT))
    entry = {"class_path": "finalproj.project.Final", "init_args": {"monitor": "val_loss", "save_last": True}}
    text = render(spec(entry, "finalproj.project.Tested", max_epochs=3), tmp_path)
    script = tmp_path / "train.py"
    script.write_text(text)
    run(script, tmp_path / "whole", "fit")
    run(script, tmp_path / "parts", "fit", "--max-epochs", "2")
    assert "final.ckpt" in names(tmp_path / "parts")
    # Lightning's `last` is the newest file named after the subclass's CHECKPOINT_NAME_LAST
    resumed = run(script, tmp_path / "parts", "fit", "--ckpt-path", "last")
    assert f"Resuming from {tmp_path / 'parts' / 'checkpoints' / 'final.ckpt'}: epoch 2, batch 0." in resumed
    ends = [load(side / "checkpoints" / "final.ckpt") for side in (tmp_path / "whole", tmp_path / "parts")]
    assert ends[0]["global_step"] == ends[1]["global_step"] == 30
    assert all(torch.equal(ends[0]["state_dict"][k], ends[1]["state_dict"][k]) for k in ends[0]["state_dict"])
    best = Path(load(tmp_path / "whole" / "checkpoints" / "final.ckpt")["callbacks"]
                .popitem()[1]["best_model_path"])  # fmt: skip
    tested = run(script, tmp_path / "whole", "test", "--ckpt-path", "last")
    assert f"test: the weights of {tmp_path / 'whole' / 'checkpoints' / 'final.ckpt'}" in tested
    tested = run(script, tmp_path / "whole", "test", "--ckpt-path", "best")
    assert f"test: the weights of {best}" in tested


def test_a_file_not_completed_when_the_run_stopped_is_refused_with_the_reason(tmp_path: Path) -> None:
    """A file the subclass decided is on disk at once, as Lightning's, and completed with where the run resumes
    at the end of the batch or epoch that decided it: one the run stopped before completing says so."""
    script = tmp_path / "train.py"
    script.write_text(render(spec(WARM, max_epochs=2), tmp_path))
    run(script, tmp_path / "run")
    path = tmp_path / "run" / "checkpoints" / "epoch=1-last.ckpt"
    content = load(path)
    assert content["loopgen"]["epoch"] == 2 and "decided" not in content["loopgen"]  # completed
    content["loopgen"] = {"decided": True}  # as written when decided
    torch.save(content, path)
    result = subprocess.run(
        [sys.executable, str(script), "--ckpt-path", str(path)], cwd=tmp_path / "run", env=env_with_root(),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode != 0
    assert f"{path}: written when ModelCheckpoint decided it, and the run stopped before" in result.stderr


RETURNS_ONE = """
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint


class KeepAll(ModelCheckpoint):
    pass


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)] * 3

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def configure_callbacks(self):
        return [KeepAll(dirpath="mine", save_top_k=-1)]
"""


def test_a_subclass_configure_callbacks_returns_replaces_the_trainers_model_checkpoint(tmp_path: Path) -> None:
    """Lightning replaces the trainer's callbacks of a class the returned one subclasses: the subclass is the run's
    one checkpoint callback, saving every epoch in a run that never validates."""
    (tmp_path / "ccproj").mkdir()
    (tmp_path / "ccproj" / "__init__.py").write_text("")
    (tmp_path / "ccproj" / "models.py").write_text(RETURNS_ONE)
    trainer = {"max_epochs": 2, "logger": False, "enable_progress_bar": False}
    entry = {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "theirs"}}
    text = render({"model": "ccproj.models.Net", "trainer": {**trainer, "callbacks": [entry]}}, tmp_path)
    assert "= ModelCheckpoint(" not in text and 'callback = KeepAll(dirpath="mine", save_top_k=-1)' in text
    script = tmp_path / "train.py"
    script.write_text(text)
    run(script, tmp_path / "run")
    assert names(tmp_path / "run") == {"epoch=0-step=3.ckpt", "epoch=1-step=6.ckpt"}


def test_a_configuration_lightnings_class_refuses_raises_lightnings_error(tmp_path: Path) -> None:
    """The base's own checks raise Lightning's MisconfigurationException (code may catch it), before training."""
    entry = {"class_path": "tests.parity.callbacks.RecordsBest", "init_args": {"mode": "middle"}}
    script = tmp_path / "train.py"
    script.write_text(render(spec(entry), tmp_path))
    (tmp_path / "run").mkdir()
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path / "run", env=env_with_root(), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode != 0
    assert "MisconfigurationException: `mode` can be min, max but got middle" in result.stderr, result.stderr[-2000:]
