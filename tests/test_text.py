"""Text-level guarantees of rendered scripts, over many flag combinations:
they compile, are clean under ruff, and a flag that is off leaves no trace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import render, write_spec

RICH_MODEL = '''
import torch
from torch.utils.data import DataLoader, TensorDataset


class Rich(torch.nn.Module):
    """Defines every hook a script may call."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def _loader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(20, 4, generator=g), torch.randn(20, 1, generator=g)), batch_size=4)

    def train_dataloader(self):
        return self._loader()

    def val_dataloader(self):
        return self._loader()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        return {"optimizer": optimizer, "lr_scheduler": torch.optim.lr_scheduler.StepLR(optimizer, 1)}

''' + "".join(
    f"    def {hook}(self, *args):\n        self.trainer.calls.append({hook!r})\n\n"
    for hook in (
        "prepare_data", "setup", "on_fit_start", "on_train_start", "on_train_epoch_start", "on_train_batch_start",
        "training_step_end", "on_before_zero_grad", "on_before_backward", "on_after_backward",
        "on_before_optimizer_step", "on_train_batch_end", "training_epoch_end", "on_train_epoch_end",
        "on_validation_start", "on_validation_epoch_start", "on_validation_batch_start", "on_validation_batch_end",
        "validation_epoch_end", "on_validation_epoch_end", "on_validation_end", "on_train_end", "on_fit_end",
        "teardown",
    )
)

CALLBACK = '''
class Recorder:
    def on_train_start(self, trainer, pl_module):
        pass

    def on_validation_end(self, trainer, pl_module):
        pass

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pass
'''

BASE = {"seed_everything": 0, "model": "proj.models.Rich", "trainer": {"accelerator": "cpu", "logger": False,
        "enable_checkpointing": False, "enable_progress_bar": False, "max_epochs": 2}}

FLAG_SETS = {
    "defaults": {},
    "accumulate": {"accumulate_grad_batches": 3},
    "accumulate_schedule": {"accumulate_grad_batches": {0: 1, 1: 2}},
    "clip_norm": {"gradient_clip_val": 0.5},
    "clip_value": {"gradient_clip_val": 0.5, "gradient_clip_algorithm": "value"},
    "limits": {"limit_train_batches": 0.5, "limit_val_batches": 2},
    "overfit": {"overfit_batches": 2},
    "fast_dev_run": {"fast_dev_run": True},
    "no_sanity": {"num_sanity_val_steps": 0},
    "all_sanity": {"num_sanity_val_steps": -1},
    "val_fraction_every_2": {"val_check_interval": 0.25, "check_val_every_n_epoch": 2},
    "val_int_no_epoch": {"val_check_interval": 3, "check_val_every_n_epoch": None},
    "reload": {"reload_dataloaders_every_n_epochs": 1},
    "max_steps": {"max_steps": 5, "max_epochs": None},
    "min_epochs_steps": {"min_epochs": 2, "min_steps": 3},
    "deterministic": {"deterministic": True, "benchmark": False},
    "cuda": {"accelerator": "cuda"},
    "bf16": {"precision": "bf16-mixed"},
    "fp16_cuda": {"accelerator": "cuda", "precision": "16-mixed"},
    "fp16_auto": {"accelerator": "auto", "precision": "16-mixed"},
    "fp16_cpu": {"precision": "16-mixed"},
    "double": {"precision": "64"},
    "auto": {"accelerator": "auto"},
    "callback": {"callbacks": [{"class_path": "proj.callbacks.Recorder"}]},
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("text")
    (root / "proj").mkdir()
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "models.py").write_text(RICH_MODEL)
    (root / "proj" / "callbacks.py").write_text(CALLBACK)
    return root


def spec_with(project: Path, name: str, flags: dict) -> Path:
    spec = {**BASE, "trainer": {**BASE["trainer"], **flags}}
    return write_spec(project, spec, f"{name}.yaml")


@pytest.fixture(scope="module")
def rendered(project) -> dict[str, Path]:
    import os

    cwd = os.getcwd()
    os.chdir(project)
    try:
        scripts = {}
        for name, flags in FLAG_SETS.items():
            path = project / f"{name}.py"
            path.write_text(render(spec_with(project, name, flags)))
            scripts[name] = path
        return scripts
    finally:
        os.chdir(cwd)


def test_every_variant_is_clean_under_ruff(rendered, project):
    """Run from the project, as a user would: the user's package is first-party there."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", *map(str, rendered.values())],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


# flag set -> lines that must appear when it is on, and nowhere when it is off
TRACES = {
    "accumulate": ["ACCUMULATE_GRAD_BATCHES", "should_step"],
    "clip_norm": ["GRADIENT_CLIP_VAL", "clip_grad_norm_"],
    "clip_value": ["GRADIENT_CLIP_VAL", "clip_grad_value_"],
    "limits": ["LIMIT_TRAIN_BATCHES", "LIMIT_VAL_BATCHES", "def num_batches"],
    "overfit": ["with_sequential_sampler", "SequentialSampler"],
    "reload": ["RELOAD_DATALOADERS_EVERY_N_EPOCHS", "train_loaded_epoch"],
    "max_steps": ["trainer.global_step >= MAX_STEPS"],
    "min_epochs_steps": [],
    "deterministic": ["use_deterministic_algorithms", "CUBLAS_WORKSPACE_CONFIG", "cudnn.benchmark"],
    "cuda": ["def map_tensors", "t.to(device, non_blocking=True)", "model.to(device)", 'torch.device("cuda")'],
    "callback": ["callback.on_train_start(trainer, model)", "callback.on_validation_end(trainer, model)"],
    "val_int_no_epoch": ["total_batch_idx"],
    "bf16": ['torch.autocast("cpu", dtype=torch.bfloat16)'],
    "fp16_cpu": ['torch.autocast("cpu", dtype=torch.bfloat16)'],
    "fp16_cuda": ['torch.autocast("cuda", dtype=torch.float16', "GradScaler", "scaler.unscale_(optimizer)"],
    "fp16_auto": ["GradScaler", 'enabled=device.type == "cuda"', "scaler.step(optimizer)"],
    "double": ["model.double()", "default_dtype(torch.float64)", "t.double()"],
    "val_fraction_every_2": ["CHECK_VAL_EVERY_N_EPOCH == 0"],
}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_flag_off_leaves_no_trace(rendered, name):
    on = rendered[name].read_text()
    off = rendered["defaults"].read_text()
    for trace in TRACES[name]:
        assert trace in on, f"{name}: expected {trace!r} in the script"
        assert trace not in off, f"{name} off: {trace!r} must not be in the script"


def test_hooks_absent_from_the_model_are_not_called(project):
    import os

    (project / "proj" / "plain.py").write_text(
        "import torch\nclass P(torch.nn.Module):\n"
        "    def training_step(self, batch, batch_idx):\n        return batch.sum()\n"
        "    def configure_optimizers(self):\n        return torch.optim.SGD(self.parameters(), lr=0.1)\n"
        "    def train_dataloader(self):\n        return [torch.ones(1)]\n"
    )
    cwd = os.getcwd()
    os.chdir(project)
    try:
        text = render(write_spec(project, {**BASE, "model": "proj.plain.P"}, "plain.yaml"))
    finally:
        os.chdir(cwd)
    for hook in (".on_train_start(", ".on_train_epoch_start(", ".on_before_zero_grad(", "validate(", "val_dataloader",
                 "MetricLog", "step_schedulers", "callback.", "callback_0", "map_tensors"):
        assert hook not in text, hook
