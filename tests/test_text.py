"""Text-level guarantees of rendered scripts, over many flag combinations:
they compile, are clean under ruff, and a flag that is off leaves no trace."""

from __future__ import annotations

import re
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
        self.example_input_array = torch.zeros(1, 4)

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
    f"    def {hook}(self, *args):\n        self.calls.append({hook!r})\n\n"
    for hook in (
        "prepare_data",
        "setup",
        "on_fit_start",
        "on_train_start",
        "on_train_epoch_start",
        "on_train_batch_start",
        "training_step_end",
        "on_before_zero_grad",
        "on_before_backward",
        "on_after_backward",
        "on_before_optimizer_step",
        "on_train_batch_end",
        "training_epoch_end",
        "on_train_epoch_end",
        "on_validation_start",
        "on_validation_epoch_start",
        "on_validation_batch_start",
        "on_validation_batch_end",
        "validation_epoch_end",
        "on_validation_epoch_end",
        "on_validation_end",
        "on_train_end",
        "on_fit_end",
        "teardown",
    )
)

RICH_MODEL += """

class RichExample(Rich):
    \"\"\"Gives an example input: the model summary runs it through the model.\"\"\"

    def __init__(self):
        super().__init__()
        self.example_input_array = torch.zeros(2, 4)
"""
RICH_MODEL += '''

class RichBar(Rich):
    """Logs to the progress bar."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss, prog_bar=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y), prog_bar=True)
'''
RICH_MODEL += '''

class Modern(torch.nn.Module):
    """Only what Lightning 2.x has (no *_epoch_end / training_step_end hook): for bf16-true and 16-true."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(20, 4, generator=g), torch.randn(20, 1, generator=g)), batch_size=4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Evaluating(Modern):
    """Modern, with validate, test and predict runs."""

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def val_dataloader(self):
        return self.train_dataloader()

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def test_dataloader(self):
        return self.train_dataloader()

    def predict_step(self, batch, batch_idx):
        return self.layer(batch[0])

    def predict_dataloader(self):
        return self.train_dataloader()


class EvaluatingEpochEnd(Evaluating):
    """Lightning 1.9.5's training_epoch_end: fit and the runs follow 1.9.5."""

    def training_epoch_end(self, outputs):
        pass


class EvaluatingOutputs(torch.nn.Module):
    """Lightning 1.9.5's output hooks, and no self.log (DataParallel's scripts refuse it)."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(20, 4, generator=g), torch.randn(20, 1, generator=g)), batch_size=4)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def training_epoch_end(self, outputs):
        pass

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def validation_step_end(self, output):
        return output.mean()

    def validation_epoch_end(self, outputs):
        pass

    def val_dataloader(self):
        return self.train_dataloader()

    def test_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def test_epoch_end(self, outputs):
        pass

    def test_dataloader(self):
        return self.train_dataloader()

    def predict_step(self, batch, batch_idx):
        return self.layer(batch[0])

    def predict_dataloader(self):
        return self.train_dataloader()
'''

SEED_MODEL = '''
import torch
from torch.utils.data import DataLoader, TensorDataset


class SeedRich(torch.nn.Module):
    """Two optimizers, truncated BPTT, LBFGS, and the seed's hooks."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(2, 4, batch_first=True)
        self.head = torch.nn.Linear(4, 1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 6, 2, generator=g), torch.randn(8, 6, 1, generator=g)), batch_size=4)

    def training_step(self, batch, batch_idx, optimizer_idx, hiddens):
        x, y = batch
        out, hiddens = self.rnn(x, hiddens)
        return {"loss": torch.nn.functional.mse_loss(self.head(out), y), "hiddens": hiddens}

    def configure_optimizers(self):
        return [torch.optim.LBFGS(self.rnn.parameters()), torch.optim.SGD(self.head.parameters(), lr=0.1)]

    def on_train_batch_end(self, outputs, batch, batch_idx):
        pass

    def training_epoch_end(self, outputs):
        pass

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx, optimizer_closure, on_tpu, using_lbfgs):
        optimizer.step(closure=optimizer_closure)


class SeedRichFrequencies(SeedRich):
    """The two optimizers in turn: 2 batches, then 1 (1.9.5's frequencies)."""

    def configure_optimizers(self):
        lbfgs, sgd = torch.optim.LBFGS(self.rnn.parameters()), torch.optim.SGD(self.head.parameters(), lr=0.1)
        return [{"optimizer": lbfgs, "frequency": 2}, {"optimizer": sgd, "frequency": 1}]


class SeedApex(torch.nn.Module):
    """Two plain optimizers: what apex AMP accepts."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx, optimizer_idx):
        return self.b(self.a(batch)).sum()

    def configure_optimizers(self):
        return [torch.optim.SGD(self.a.parameters(), lr=0.1), torch.optim.SGD(self.b.parameters(), lr=0.1)]
'''

SAVER_MODEL = '''
import pytorch_lightning
import torch
from torch.utils.data import DataLoader, TensorDataset


class Saver(pytorch_lightning.LightningModule):
    """Saves its hyperparameters for the loggers, and has an example input for TensorBoard's graph."""

    def __init__(self, width=3, sizes=(1, 2)):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)
        self.example_input_array = torch.zeros(1, 4)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(20, 4), torch.randn(20, 1)), batch_size=4)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
'''

STREAM_MODEL = '''
import pytorch_lightning
import torch
from torch.utils.data import DataLoader, IterableDataset


class Rows(IterableDataset):
    def __iter__(self):
        for _ in range(12):
            yield torch.randn(4)


class Stream(pytorch_lightning.LightningModule):
    """Reads loaders without a length (IterableDataset)."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def train_dataloader(self):
        return DataLoader(Rows(), batch_size=4)

    def val_dataloader(self):
        return DataLoader(Rows(), batch_size=4)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def validation_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
'''

CALLBACK = """
class Recorder:
    def on_train_start(self, trainer, pl_module):
        pass

    def on_validation_end(self, trainer, pl_module):
        pass

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pass


class AttributeReader:
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        print(trainer.progress_bar_metrics, trainer.lr_scheduler_configs[0].interval)
"""

MANUAL_MODEL = """
import pytorch_lightning as pl
import torch


class ManualRich(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.g = torch.nn.Linear(4, 4)
        self.d = torch.nn.Linear(4, 1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(32, 4), batch_size=8)

    def val_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(16, 4), batch_size=8)

    def training_step(self, batch, batch_idx):
        opt_g, opt_d = self.optimizers()
        self.toggle_optimizer(opt_g)
        g_loss = self.d(self.g(batch)).mean()
        self.manual_backward(g_loss)
        self.clip_gradients(opt_g, gradient_clip_val=0.5, gradient_clip_algorithm="value")
        opt_g.step()
        opt_g.zero_grad()
        self.untoggle_optimizer(opt_g)
        d_loss = self.d(batch).mean()
        self.manual_backward(d_loss)
        opt_d.step()
        opt_d.zero_grad()
        self.log("d_loss", d_loss)
        return d_loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if self.trainer.state.stage == "train" and self.trainer.log_dir:
            self.logger.log_metrics({"batch": float(batch_idx)}, step=self.global_step)

    def on_before_optimizer_step(self, optimizer):
        pass

    def on_after_backward(self):
        pass

    def on_train_epoch_end(self):
        for scheduler in self.lr_schedulers():
            scheduler.step()

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.d(batch).mean())

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.g.parameters(), lr=0.01)
        opt_d = torch.optim.Adam(self.d.parameters(), lr=0.01)
        sched_g = torch.optim.lr_scheduler.StepLR(opt_g, 1)
        sched_d = torch.optim.lr_scheduler.StepLR(opt_d, 1)
        return [opt_g, opt_d], [sched_g, sched_d]

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        pass


class ClipHookRich(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(32, 4), batch_size=8)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).mean()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        total = self.trainer.estimated_stepping_batches
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.5, total_steps=total)
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        self.clip_gradients(optimizer, gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm)
"""

BASE = {
    "seed_everything": 0,
    "model": "proj.models.Rich",
    "trainer": {
        "accelerator": "cpu",
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "max_epochs": 2,
    },
}

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
    "bf16_true_logged": {"precision": "bf16-true", "logger": True},
    "fp16_true_auto": {"accelerator": "auto", "precision": "16-true", "enable_model_summary": True},
    "auto": {"accelerator": "auto"},
    "callback": {"callbacks": [{"class_path": "proj.callbacks.Recorder"}]},
    "checkpoint_default": {"enable_checkpointing": True},
    "checkpoint_default_logger": {"enable_checkpointing": True, "logger": None},
    "logger_csv": {"logger": {"class_path": "CSVLogger", "init_args": {"save_dir": "logs", "prefix": "fit"}}},
    "logger_every_0": {"logger": True, "log_every_n_steps": 0},
    "lr_monitor": {
        "logger": True,
        "callbacks": [
            {"class_path": "LearningRateMonitor", "init_args": {"log_momentum": True, "log_weight_decay": True}}
        ],
    },
    "logger_tensorboard_graph": {
        "logger": {"class_path": "TensorBoardLogger", "init_args": {"save_dir": "tb", "log_graph": True}}
    },
    "logger_mlflow_wandb_first": {
        "enable_checkpointing": True,
        "logger": [
            {"class_path": "MLFlowLogger", "init_args": {"run_name": "fit", "tags": {"team": "a"}}},
            {"class_path": "WandbLogger", "init_args": {"project": "p", "offline": True}},
        ],
    },
    "logger_every_kind_hparams": {
        "enable_checkpointing": True,
        "logger": [
            {"class_path": "WandbLogger", "init_args": {"prefix": "fit"}},
            {"class_path": "TensorBoardLogger", "init_args": {"save_dir": "tb", "log_graph": True}},
            {"class_path": "MLFlowLogger", "init_args": {"save_dir": "runs"}},
            {"class_path": "CSVLogger", "init_args": {"save_dir": "csv"}},
        ],
    },
    "checkpoint_monitor": {
        "enable_checkpointing": True,
        "callbacks": [
            {
                "class_path": "ModelCheckpoint",
                "init_args": {
                    "monitor": "val_loss",
                    "save_top_k": 2,
                    "save_last": "link",
                    "filename": "{epoch}-{val_loss:.3f}",
                    "every_n_train_steps": 3,
                    "verbose": True,
                },
            }
        ],
        "val_check_interval": 0.5,
    },
    "checkpoint_time": {
        "enable_checkpointing": True,
        "callbacks": [
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"train_time_interval": "00:00:01", "save_weights_only": True},
            }
        ],
    },
    "early_stopping": {
        "callbacks": [
            {
                "class_path": "EarlyStopping",
                "init_args": {"monitor": "val_loss", "patience": 2, "stopping_threshold": 0.01, "verbose": True},
            }
        ],
        "min_epochs": 1,
    },
    "model_summary": {"enable_model_summary": True},
    "model_summary_depth": {"callbacks": [{"class_path": "ModelSummary", "init_args": {"max_depth": 2}}]},
    "model_summary_example": {"enable_model_summary": True, "accelerator": "auto", "precision": "bf16-mixed"},
    "profiler_simple": {"profiler": "simple"},
    "profiler_advanced": {
        "profiler": {"class_path": "AdvancedProfiler", "init_args": {"dump_stats": True, "line_count_restriction": 5}}
    },
    "profiler_pytorch": {
        "profiler": {
            "class_path": "PyTorchProfiler",
            "init_args": {"dirpath": "prof", "filename": "p", "record_shapes": True, "group_by_input_shapes": True},
        }
    },
    "profiler_everything": {
        "profiler": {"class_path": "SimpleProfiler", "init_args": {"filename": "perf", "extended": False}},
        "enable_checkpointing": True,
        "logger": None,
        "callbacks": [{"class_path": "proj.callbacks.Recorder"}],
        "accelerator": "cuda",
        "precision": "16-mixed",
        "gradient_clip_val": 0.5,
        "accumulate_grad_batches": 2,
    },
    "progress_bar": {"enable_progress_bar": True, "logger": True},
    "progress_bar_metrics": {"enable_progress_bar": True},  # RichBar logs with prog_bar=True
    "progress_bar_max_steps": {"enable_progress_bar": True, "max_steps": 5, "max_epochs": None},
    "progress_bar_tqdm": {
        "enable_progress_bar": True,
        "callbacks": [{"class_path": "TQDMProgressBar", "init_args": {"refresh_rate": 5, "leave": True}}],
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": "logs", "version": "run"}},
    },
    "progress_bar_rich": {
        "enable_progress_bar": True,
        "callbacks": ["pytorch_lightning.callbacks.RichProgressBar"],
        "logger": True,
    },
    "manual": {"enable_checkpointing": True, "logger": True},
    "manual_fp16_cuda": {"accelerator": "cuda", "precision": "16-mixed"},
    "manual_ddp": {"strategy": "ddp_find_unused_parameters_true", "devices": 2, "logger": True},
    "manual_profiler": {"profiler": "simple", "val_check_interval": 0.5},
    "clip_hook_estimate": {"gradient_clip_val": 0.5, "accumulate_grad_batches": 2, "max_steps": 7},
    "trainer_metric_attributes": {"callbacks": [{"class_path": "proj.callbacks.AttributeReader"}]},
    "horovod": {"strategy": "horovod", "devices": 2},
    "horovod_accumulate": {"strategy": "horovod", "devices": 2, "accumulate_grad_batches": 2},
    "horovod_files": {
        "strategy": "horovod",
        "devices": 2,
        "enable_checkpointing": True,
        "enable_progress_bar": True,
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": "logs"}},
        "callbacks": [{"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss"}}],
    },
    "tpu": {"accelerator": "tpu", "devices": 2},
    "tpu_one_device": {"accelerator": "tpu", "accumulate_grad_batches": 2},
    "tpu_files": {
        "accelerator": "tpu",
        "devices": 2,
        "enable_checkpointing": True,
        "logger": True,
        "enable_progress_bar": True,
        "callbacks": [
            {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss"}},
            {"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "save_last": "link"}},
        ],
    },
    "tpu_one_device_files": {
        "accelerator": "tpu",
        "enable_checkpointing": True,
        "logger": True,
        "enable_progress_bar": True,
    },
    "ddp": {
        "strategy": "ddp",
        "devices": 2,
        "callbacks": [{"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss"}}],
    },
    # validate, test and predict with a profiler under DDP; under Lightning 1.9.5, with DDP and with a profiler
    "evaluation_ddp_profiler": {
        "strategy": "ddp",
        "devices": 2,
        "enable_checkpointing": True,
        "profiler": {"class_path": "AdvancedProfiler", "init_args": {"filename": "perf", "dump_stats": True}},
    },
    "evaluation_ddp_1_9_5": {"strategy": "ddp", "devices": 2, "enable_checkpointing": True, "logger": True},
    "evaluation_1_9_5_profiler": {"profiler": {"class_path": "PyTorchProfiler", "init_args": {"filename": "p"}}},
    # ... and under Horovod (Lightning 1.9.5's strategy)
    "evaluation_horovod": {"strategy": "horovod", "devices": 2, "enable_checkpointing": True, "logger": True},
    "evaluation_dp": {"strategy": "dp", "devices": 2, "accelerator": "cuda", "enable_checkpointing": True},
    "evaluation_tpu_1_9_5": {"accelerator": "tpu", "devices": 8, "enable_checkpointing": True},
    "ddp_entry_accumulate_auto": {
        "strategy": {
            "class_path": "pytorch_lightning.strategies.DDPStrategy",
            "init_args": {"find_unused_parameters": True, "timeout": 120, "gradient_as_bucket_view": True},
        },
        "accelerator": "auto",
        "devices": 2,
        "num_nodes": 2,
        "accumulate_grad_batches": 2,
        "enable_model_summary": True,
    },
    "ddp_logs_checkpoints_bar": {
        "strategy": "ddp",
        "devices": 2,
        "logger": [
            {"class_path": "CSVLogger", "init_args": {"save_dir": "logs"}},
            {"class_path": "TensorBoardLogger", "init_args": {"save_dir": "logs"}},
        ],
        "enable_checkpointing": True,
        "enable_progress_bar": True,
        "callbacks": [
            {"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "save_last": "link"}},
            "LearningRateMonitor",
        ],
    },
    "ddp_mlflow_wandb_profiler_time": {
        "strategy": "ddp",
        "devices": 2,
        "logger": [
            {"class_path": "MLFlowLogger", "init_args": {"tracking_uri": "file:./mlruns"}},
            {"class_path": "WandbLogger", "init_args": {"offline": True}},
        ],
        "profiler": {"class_path": "AdvancedProfiler", "init_args": {"filename": "p{1}", "dump_stats": True}},
        "enable_checkpointing": True,
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"train_time_interval": "0:00:30"}}],
    },
    "ddp_pytorch_profiler_printed": {
        "strategy": "ddp",
        "devices": 2,
        "profiler": {"class_path": "PyTorchProfiler", "init_args": {"export_to_chrome": True}},
    },
    # loaders without a length: the length, the prefetching fetcher, a mid-epoch resume, the bar's unknown total,
    # Lightning's errors for float fractions
    "iterable_loader": {
        "val_check_interval": 0.5,
        "limit_train_batches": 3,
        "accumulate_grad_batches": 2,
        "enable_checkpointing": True,
        "enable_progress_bar": True,
    },
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return write_project(tmp_path_factory.mktemp("text"))


def write_project(root: Path) -> Path:
    """The package `proj` (the models and callbacks the flag sets name) under `root`; `root`."""
    (root / "proj").mkdir()
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "models.py").write_text(RICH_MODEL)
    (root / "proj" / "callbacks.py").write_text(CALLBACK)
    (root / "proj" / "seed.py").write_text(SEED_MODEL)
    (root / "proj" / "saver.py").write_text(SAVER_MODEL)
    (root / "proj" / "manual.py").write_text(MANUAL_MODEL)
    (root / "proj" / "stream.py").write_text(STREAM_MODEL)
    return root


SEED_FLAG_SETS = {
    "seed_defaults": {},
    "seed_tbptt": {"truncated_bptt_steps": 2},
    "seed_tbptt_frequencies": {"truncated_bptt_steps": 2, "loop": {"optimizer_frequencies": [2, 1]}},
    "seed_grad_norm": {"track_grad_norm": 2},
    "seed_grad_norm_inf": {"track_grad_norm": "inf"},
    "seed_nan": {"terminate_on_nan": True},
    "seed_accumulate_clip": {"accumulate_grad_batches": 2, "gradient_clip_val": 1.0},
    "seed_apex": {"accelerator": "cuda", "precision": "16-mixed", "amp_backend": "apex", "amp_level": "O1"},
    "seed_profiler": {"profiler": "advanced", "truncated_bptt_steps": 2},
}


def spec_with(project: Path, name: str, flags: dict) -> Path:
    flags = dict(flags)
    loop = flags.pop("loop", None)
    special = {
        "seed_apex": "proj.seed.SeedApex",
        "seed_tbptt_frequencies": "proj.seed.SeedRichFrequencies",
        "logger_every_kind_hparams": "proj.saver.Saver",
        "model_summary_example": "proj.models.RichExample",
        "progress_bar_metrics": "proj.models.RichBar",
        "progress_bar_rich": "proj.models.RichBar",
        "manual": "proj.manual.ManualRich",
        "manual_fp16_cuda": "proj.manual.ManualRich",
        "manual_ddp": "proj.manual.ManualRich",
        "manual_profiler": "proj.manual.ManualRich",
        "clip_hook_estimate": "proj.manual.ClipHookRich",
        "iterable_loader": "proj.stream.Stream",
        "bf16_true_logged": "proj.models.Modern",
        "evaluation_ddp_profiler": "proj.models.Evaluating",
        "evaluation_ddp_1_9_5": "proj.models.EvaluatingEpochEnd",
        "evaluation_1_9_5_profiler": "proj.models.EvaluatingEpochEnd",
        "evaluation_horovod": "proj.models.Evaluating",
        "evaluation_dp": "proj.models.EvaluatingOutputs",
        "evaluation_tpu_1_9_5": "proj.models.EvaluatingOutputs",
        "fp16_true_auto": "proj.models.Modern",
    }
    model = special.get(name, "proj.seed.SeedRich" if name.startswith("seed") else BASE["model"])
    spec = {**BASE, "model": model, "trainer": {**BASE["trainer"], **flags}}
    if loop:
        spec["loop"] = loop
    return write_spec(project, spec, f"{name}.yaml")


@pytest.fixture(scope="module")
def rendered(project) -> dict[str, Path]:
    import os

    cwd = os.getcwd()
    os.chdir(project)
    try:
        scripts = {}
        for name, flags in {**FLAG_SETS, **SEED_FLAG_SETS}.items():
            path = project / f"{name}.py"
            path.write_text(render(spec_with(project, name, flags)))
            scripts[name] = path
        return scripts
    finally:
        os.chdir(cwd)


def test_every_variant_is_clean_under_ruff(rendered, project):
    """Run from the project, as a user would: the user's package is first-party there."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--isolated",
            "--select",
            "E,F,W,B,ARG",
            *map(str, rendered.values()),
        ],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


# flag set -> lines that must appear when it is on, and nowhere when it is off
TRACES = {
    "iterable_loader": [
        "def loader_length(loader):",
        "class Fetcher:",
        "train_iter = Fetcher(train_loader, num_training_batches)",
        "val_iter = Fetcher(val_loader, num_batches)",
        "while not train_iter.done:",
        "is_last_batch = train_iter.done",
        "resuming in the middle of an epoch of a train loader without",
        "must be time based, `1.0` or an int",
        "`Trainer(limit_{name}_batches)` must be `1.0` or an int",
        'self.total = None if total == float("inf") else total',
    ],
    "accumulate": ["ACCUMULATE_GRAD_BATCHES", "should_step"],
    "clip_norm": ["GRADIENT_CLIP_VAL", "clip_grad_norm_"],
    "clip_value": ["GRADIENT_CLIP_VAL", "clip_grad_value_"],
    "limits": ["LIMIT_TRAIN_BATCHES", "LIMIT_VAL_BATCHES", "def num_batches"],
    "overfit": ["with_sequential_sampler", "SequentialSampler"],
    "reload": ["RELOAD_DATALOADERS_EVERY_N_EPOCHS", "train_loaded_epoch"],
    "max_steps": ["global_step >= MAX_STEPS", "MAX_STEPS = options.max_steps", '"--max-steps"'],
    "min_epochs_steps": [],
    "deterministic": ["use_deterministic_algorithms", "CUBLAS_WORKSPACE_CONFIG", "cudnn.benchmark"],
    "tpu": [
        "import torch_xla.core.xla_model as xm",
        "import torch_xla.distributed.xla_multiprocessing as xmp",
        "global_rank, world_size = xr.global_ordinal(), xr.world_size()",
        "device = xm.xla_device()",
        "wrapped = pl.MpDeviceLoader(loader, device)",
        "train_loader = device_loader(train_loader, device)",
        "val_loader = device_loader(val_loader, device)",
        "xm.reduce_gradients(optimizer)",
        "xm.mark_step()",
        'xm.rendezvous("end-process")',
        "xmp.spawn(run_process)",
    ],
    "evaluation_dp": ['output = dp_model("validation_step", *args)', 'output = dp_model("predict_step", *args)'],
    "tpu_files": [
        "content = xm._maybe_convert_to_cpu(content, convert=True)",
        'xm.rendezvous("Trainer.save_checkpoint")',
        'xm.rendezvous("")',
        "xm.collective_broadcast(data, root_ordinal=0)",
        "exists = any_process(xr.global_ordinal() == 0 and os.path.exists(path))",
        "should_stop = any_process(should_stop)",
        "or every_process(",
        "class SilentBar:",
        "if not logged or xr.global_ordinal() != 0:",
    ],
    "tpu_one_device_files": [
        "write_atomically(xm._maybe_convert_to_cpu(content, convert=True), path)",
    ],
    "tpu_one_device": [
        "import torch_xla.core.xla_model as xm",
        "device = xm.xla_device()",
        "xm.reduce_gradients(optimizer)",
        "xm.mark_step()",
        "PJRT_DEVICE=TPU python",
    ],
    "horovod": [
        "import horovod.torch as hvd",
        "hvd.init()",
        "hvd.broadcast_parameters(model.state_dict(), root_rank=0)",
        "hvd.broadcast_optimizer_state(optimizer, root_rank=0)",
        "optimizer = hvd.DistributedOptimizer(",
        "optimizer.synchronize()",
        "with optimizer.skip_synchronize():",
        'group["lr"] *= world_size',
        "sampler = SamplerShards(loader.sampler, **kwargs)",
    ],
    "horovod_files": [
        "return hvd.broadcast_object(value, 0)",
        "writes = hvd.rank() == 0",
        "if not logged or hvd.rank() != 0:",
        "return bool(hvd.allreduce(torch.tensor(int(decision)), op=hvd.Sum) > 0)",
        "else SilentBar(",
    ],
    "horovod_accumulate": [
        "backward_passes_per_step=2,",
        "# Horovod (1.9.5): the epoch's last batch ends no window itself",
        "should_step = window_end",
        "# optimizer step on every batch, as 1.9.5's Horovod: the gradients",
    ],
    "cuda": ["def map_tensors", "t.to(device, non_blocking=True)", "model.to(device)", 'torch.device("cuda")'],
    "callback": ["callback.on_train_start(trainer, model)", "callback.on_validation_end(trainer, model)"],
    "val_int_no_epoch": ["total_batch_idx"],
    "bf16": ['torch.autocast("cpu", dtype=torch.bfloat16)'],
    "fp16_cpu": ['torch.autocast("cpu", dtype=torch.bfloat16)'],
    "fp16_cuda": ['torch.autocast("cuda", dtype=torch.float16', "GradScaler", "scaler.unscale_("],
    "fp16_auto": ["GradScaler", 'enabled=device.type == "cuda"', "scaler.step(optimizer)"],
    "double": ["model.double()", "default_dtype(torch.float64)", "t.double()"],
    "bf16_true_logged": [
        "model.to(dtype=torch.bfloat16)",
        "with default_dtype(torch.bfloat16):",
        "t.to(torch.bfloat16)",
        "value = torch.tensor(value, dtype=torch.float32)",
    ],
    "fp16_true_auto": [
        "model.to(dtype=torch.float16)",
        "with default_dtype(torch.float16):",
        "t.to(torch.float16)",
        "size = total * (16 / 8.0 * 1e-6)",
    ],
    "val_fraction_every_2": ["CHECK_VAL_EVERY_N_EPOCH == 0"],
    "checkpoint_default": [
        "class ModelCheckpoint",
        "files.write(checkpoint",
        "--ckpt-path",
        '"--weights-only"',
        "WEIGHTS_ONLY = True",
        "import pickle",
        "def stop_on_signals",
        'os.path.join(default_root_dir, "checkpoints")',
    ],
    "checkpoint_default_logger": ["def next_version", '"lightning_logs"', "loggers[0].log_dir"],
    "logger_csv": [
        "import csv",
        "class CSVLogger",
        "def log_metrics",
        "LOG_EVERY_N_STEPS = 50",
        "log_step += 1",
        'f"{self.prefix}-{name}"',
        'print(f"Logs: {logger.log_dir}")',
    ],
    "logger_every_0": ["log_metrics(loggers, logged, log_step - 1, current_epoch)"],
    "lr_monitor": [
        "def log_learning_rates",
        "lr_schedulers = [",
        "You have set log_momentum=True",
        'stats[f"{key}-momentum"]',
        'stats[f"{key}-weight_decay"]',
    ],
    "logger_tensorboard_graph": [
        "from torch.utils.tensorboard import SummaryWriter",
        "class TensorBoardLogger",
        "SummaryWriter(log_dir=self.log_dir)",
        "def example_input",
        "logger.writer.add_graph(model, example)",
        "def finish",
    ],
    "logger_mlflow_wandb_first": [
        "import mlflow",
        "import wandb",
        "class MLFlowLogger",
        "class WandbLogger",
        "logger.open()",
        "logger.finish()",
        'self.run.define_metric("trainer/global_step")',
        "logger.experiment_id,",
        "model_checkpoint.dirpath = checkpoint_dir",
    ],
    "logger_every_kind_hparams": [
        "from torch.utils.tensorboard.summary import hparams as hparams_summaries",
        "from mlflow.entities import Metric, Param",
        "def flat_hparams",
        "def tensorboard_hparams",
        "def wandb_config",
        "logger.log_hyperparams(hparams)",
        "model._jit_is_scripting = True",
        "logger.project,",
    ],
    "checkpoint_monitor": ["def update_best_and_save", "def link_atomically", "self.defer_until_validation = True"],
    "checkpoint_time": ["time.monotonic()", "timedelta(seconds=seconds)"],
    "early_stopping": ["class EarlyStopping", "early_stopping.on_train_epoch_end(trainer)"],
    "model_summary": ["def print_model_summary", "print_model_summary(model", "def readable_count"],
    "model_summary_depth": ["print_model_summary(model, 2)"],
    "model_summary_example": [
        "from torch.utils.flop_counter import FlopCounterMode",
        "print_model_summary(model, 1, device)",
        "def batch_shape",
        "Precision bf16-mixed is not supported by the model summary.",
    ],
    "profiler_simple": [
        "profiler = SimpleProfiler()",
        "class SimpleProfiler",
        'with profiler.profile("[Strategy]SingleDeviceStrategy.training_step"):',
        'with profiler.profile("[LightningModule]Rich.on_train_epoch_start"):',
        'with profiler.profile("[_EvaluationLoop].val_next"):',
        "profiler.describe()",
        "import time",
        "import math",
    ],
    "profiler_advanced": ["import cProfile", "import pstats", "class AdvancedProfiler", "dump_stats", "print_stats(5)"],
    "profiler_pytorch": [
        "class PyTorchProfiler",
        'PyTorchProfiler("prof")',
        'os.path.join(self.directory, "fit-p.txt")',
        "profiler.start(model, num_training_batches)",
        "tensorboard_trace_handler",
        "record_shapes=True",
        "group_by_input_shapes=True",
        "[pl][module]",
    ],
    "profiler_everything": [
        "SimpleProfiler(loggers[0].log_dir)",
        'os.path.join(self.directory, "fit-perf.txt")',
        'with self.profiler.profile("save_checkpoint"):',
        'with profiler.profile("[Callback]Recorder.on_train_start"):',
        'with profiler.profile(f"[Callback]{model_checkpoint.state_key}.setup"):',
        'with profiler.profile("[Strategy]SingleDeviceStrategy.batch_to_device"):',
        '"[LightningModule]Rich.configure_gradient_clipping"',
    ],
    "progress_bar": [
        "class ProgressBar",
        "PROGRESS_BAR_REFRESH_RATE = 1",
        "PROGRESS_BAR_LINE_EVERY = 50",
        "import shutil",
        "progress_bar = ProgressBar(loggers[0].version)",
        "progress_bar.on_train_epoch_start(current_epoch, num_training_batches)",
        "progress_bar.on_train_batch_end(batch_idx)",
        "progress_bar.on_validation_end()",
        "sys.stdout.isatty()",
        "def format_number",
    ],
    "progress_bar_metrics": [
        "progress_bar = ProgressBar(metrics)",
        "def progress_bar(self)",
        "prog_bar: bool = False",
        "bar[forked] = value",
        "metrics.progress_bar_metrics.clear()",
    ],
    "progress_bar_max_steps": ["min(num_training_batches, MAX_STEPS - global_step)"],
    "progress_bar_tqdm": [
        "from tqdm import tqdm",
        "class Tqdm(tqdm)",
        "class TQDMProgressBar",
        "PROGRESS_BAR_REFRESH_RATE = 5",
        "PROGRESS_BAR_PROCESS_POSITION = 0",
        "TQDM_MINITERS",
        "version[-4:]",
    ],
    "progress_bar_rich": [
        "from rich.progress import",
        "class RichProgressBar",
        "PROGRESS_BAR_REFRESH_RATE = 100",
        'f"Epoch {epoch}/{MAX_EPOCHS - 1}"',
        "already tracks a metric with the name(s) 'v_num'",
    ],
    "manual": [
        "class StepCountingOptimizer",
        "def manual_backward(loss, *args, **kwargs):",
        "model.optimizers = module_optimizers",
        "model.lr_schedulers = module_lr_schedulers",
        "model.clip_gradients = clip_gradients",
        "model.on_validation_model_zero_grad()",
        "def manual_outputs(output):",
        "logger=loggers[0],",
        "log_dir=loggers[0].log_dir,",
        'state=SimpleNamespace(fn="fit", status="running", stage="train"),',
        'trainer.state.stage = "validate"',
    ],
    "manual_fp16_cuda": ["loss = scaler.scale(loss)", "output = scaler.step(optimizer, **kwargs)"],
    "manual_ddp": [
        "def prepare_all_reduce(ddp_model, loss):",
        "prepare_all_reduce(ddp_model, loss)",
        "ddp_model.reducer.prepare_for_backward([loss])",
        "ddp_model.module.register_forward_hook(step_returned)",
        "ddp_model.register_forward_pre_hook(next_call)",
    ],
    "manual_profiler": ['with profiler.profile("optimizer_step"):'],
    "trainer_metric_attributes": [
        "class Trainer(SimpleNamespace):",
        "trainer = Trainer(",
        "metric_log=metrics,",
        "class LRSchedulerConfig:",
        "lr_scheduler_configs=[],",
        "trainer.lr_scheduler_configs = [",
        "LRSchedulerConfig(scheduler),",
    ],
    "clip_hook_estimate": [
        "model.configure_gradient_clipping(",
        "return min(batches * max(self.max_epochs, 1), self.max_steps)",
        "gradient_clip_val = GRADIENT_CLIP_VAL",
    ],
    "ddp": [
        "import torch.distributed as dist",
        "dist.init_process_group(backend, rank=global_rank, world_size=world_size)",
        "ddp_model = DistributedDataParallel(",
        'ddp_model("training_step", batch, batch_idx)',
        "def with_distributed_sampler",
        "train_loader.sampler.set_epoch(trainer.current_epoch)",
        "dist.destroy_process_group()",
        "should_stop = any_process(should_stop)",
        "def any_process(decision):",
    ],
    "ddp_entry_accumulate_auto": [
        "find_unused_parameters=True,",
        "gradient_as_bucket_view=True,",
        "timeout=timedelta(seconds=TIMEOUT)",
        "with nullcontext() if should_step else ddp_model.no_sync():",
        'backend = "nccl" if device.type == "cuda" else "gloo"',
        "local_rank = int(",
        "if is_global_zero:",
    ],
    "ddp_logs_checkpoints_bar": [
        "for logger in loggers if is_global_zero else []:",
        "if not logged or dist.get_rank() != 0:",
        "if stats and dist.get_rank() == 0:",
        "return from_rank_zero(max(versions) + 1 if versions else 0)",
        "self.dirpath = from_rank_zero(self.dirpath)",
        "exists = from_rank_zero(os.path.exists(path))",
        "write_atomically(content, path)",
        "dist.barrier()",
        "elif writes and os.path.lexists(path):",
        "else SilentBar(",
        "class SilentBar:",
    ],
    "ddp_mlflow_wandb_profiler_time": [
        "checkpoint_dir = None",
        "skip_time = from_rank_zero(skip_time)",
        'f"fit-p{{1}}-{self.rank}.txt"',
        'f"fit-p{{1}}-{self.rank}-" + action',
        'lines += [f"Profile stats for: {action} rank: {self.rank}", text.getvalue()]',
        'with profiler.profile("[Strategy]DDPStrategy.training_step"):',
    ],
    "ddp_pytorch_profiler_printed": [
        "if self.rank == 0:",
        'f"fit-{self.rank}-[Strategy]DDPStrategy.training_step"',
        'f"Profile stats for: records rank: {self.rank}"',
    ],
}


SEED_TRACES = {
    "seed_tbptt": ["TRUNCATED_BPTT_STEPS", "def split_batch", "carried_hiddens", "hiddens = None"],
    "seed_tbptt_frequencies": ["OPTIMIZER_FREQUENCIES", "def active_optimizer", "from itertools import accumulate"],
    "seed_grad_norm": ["TRACK_GRAD_NORM = 2.0", "def grad_norms", "if optimizer_idx == 0:"],
    "seed_grad_norm_inf": ['TRACK_GRAD_NORM = float("inf")'],
    "seed_nan": ["torch.isfinite(loss)", "Detected nan and/or inf values"],
    "seed_accumulate_clip": [
        "ACCUMULATE_GRAD_BATCHES",
        "clip_grad_norm_",
        "LightningOptimizer(optimizer, before_optimizer_step)",
    ],
    "seed_profiler": [
        'with profiler.profile("[LightningModule]SeedRich.optimizer_step"):',
        'with profiler.profile("[LightningModule]SeedRich.training_epoch_end"):',
    ],
    "seed_apex": [
        "from apex import amp",
        "amp.initialize(model, optimizers, opt_level=AMP_LEVEL)",
        "amp.scale_loss(loss, optimizer)",
        'AMP_LEVEL = "O1"',
    ],
}


@pytest.mark.parametrize("name", sorted(TRACES) + sorted(SEED_TRACES))
def test_flag_off_leaves_no_trace(rendered, name):
    on = rendered[name].read_text()
    off = rendered["seed_defaults" if name.startswith("seed") else "defaults"].read_text()
    TRACES.update(SEED_TRACES)
    for trace in TRACES[name]:
        assert trace in on, f"{name}: expected {trace!r} in the script"
        assert trace not in off, f"{name} off: {trace!r} must not be in the script"


def test_seed_branches_are_specialised(rendered):
    """Two optimizers: the toggle and the per-optimizer loop; LBFGS: the closure; the override's arguments."""
    text = "".join(rendered["seed_defaults"].read_text().split())  # black may wrap the calls
    for code in (
        "for optimizer_idx, optimizer in enumerate(optimizers):",
        "requires_grad = train_only(optimizers, optimizer_idx)",
        "model.optimizer_step(current_epoch, batch_idx, optimizer, optimizer_idx, closure,",
        "model.training_epoch_end(epoch_outputs_for(epoch_outputs, len(optimizers)))",
    ):
        assert "".join(code.split()) in text, code


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
    for hook in (
        ".on_train_start(",
        ".on_train_epoch_start(",
        ".on_before_zero_grad(",
        "validate(",
        "val_dataloader",
        "MetricLog",
        "step_schedulers",
        "callback.",
        "callback_0",
        "map_tensors",
    ):
        assert hook not in text, hook


def unused_definitions(text: str) -> set[str]:
    """Module-level functions, classes and constants that nothing in the script uses."""
    import ast

    tree = ast.parse(text)
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return defined - used - {"main"}


def test_no_unused_helper_or_constant(rendered):
    unused = {name: unused_definitions(path.read_text()) for name, path in rendered.items()}
    assert not {name: found for name, found in unused.items() if found}


def test_unused_definitions_are_found():
    assert unused_definitions("X = 1\ndef f():\n    pass\ndef main():\n    return X\n") == {"f"}


WRAPPED_COMMENT = re.compile(r"^[ \t]*\)[^#\n]*:[ \t]+#", re.MULTILINE)


def test_no_comment_trails_a_wrapped_condition(rendered):
    """A trailing comment that makes black split a statement ends up after its closing parenthesis, where it
    explains nothing: templates put such comments on the line above."""
    found = {name: WRAPPED_COMMENT.findall(path.read_text()) for name, path in rendered.items()}
    assert not {name: lines for name, lines in found.items() if lines}
    assert WRAPPED_COMMENT.search("if (\n    x\n):  # why\n")


def test_fstring_writes_plain_texts_around_names():
    from loopgen.errors import LoopgenError
    from loopgen.render.values import fstring

    # a profiler's file name: the user's braces are text, the rank is the value
    assert fstring(["fit-run{1}x-", ".txt"], "local_rank") == "f'fit-run{{1}}x-{local_rank}.txt'"
    assert fstring(["fit-", "-"], "self.rank") == "f'fit-{self.rank}-'"
    with pytest.raises(LoopgenError):
        fstring(["fit-", ".txt"], "rank()")
    with pytest.raises(LoopgenError):
        fstring(["fit-"], "local_rank")
