"""A user's callback that subclasses one of Lightning's callbacks: Callback, BasePredictionWriter (whose write_on_*
the script calls as Lightning does), BaseFinetuning (whose own hooks the script calls on the subclass), EarlyStopping,
TQDMProgressBar, RichProgressBar, LearningRateMonitor and ModelCheckpoint (which run on the script's <class>Base) are
served (a ModelCheckpoint subclass's runs: tests/test_checkpoint_subclass.py); a
subclass of any other (Timer, ...) is refused at render time, at its entry, since the script would run only the subclass's own methods, never
the base's behaviour. A BaseFinetuning subclass trains as under Lightning (tests/parity/test_parity.py,
finetuning_*; tests/test_finetuning.py, resumed), an EarlyStopping subclass too (early_stop_subclass_*)."""

from __future__ import annotations

import ast
import re
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import render, write_spec

CALLBACKS = '''
import pytorch_lightning as pl
from lightning.pytorch.callbacks import Timer as Clock
from pytorch_lightning.callbacks import BaseFinetuning, BasePredictionWriter


class Freeze(BaseFinetuning):
    def freeze_before_training(self, pl_module):
        self.freeze(pl_module.layer)

    def finetune_function(self, pl_module, current_epoch, optimizer):
        if current_epoch == 1:
            self.unfreeze_and_add_param_group(pl_module.layer, optimizer)


class Timed(Clock):
    def on_train_epoch_end(self, trainer, pl_module):
        print("epoch", trainer.current_epoch)


class Project(Freeze):
    """A project's own base over Lightning's."""


class Plain(pl.Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        print("epoch", trainer.current_epoch)


class SetsUp(Freeze):
    def setup(self, trainer, pl_module, stage):
        super().setup(trainer, pl_module, stage)


class TakesIndex(BaseFinetuning):
    def freeze_before_training(self, pl_module):
        self.freeze(pl_module.layer)

    def finetune_function(self, pl_module, current_epoch, optimizer, opt_idx):
        pass


class Writer(BasePredictionWriter):
    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx):
        pass
'''

STOPPING = '''
from pytorch_lightning.callbacks import (
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
    RichProgressBar,
    TQDMProgressBar,
)


class Bar(TQDMProgressBar):
    def on_train_start(self, trainer, pl_module):
        super().on_train_start(trainer, pl_module)
        print("bar", trainer.progress_bar_callback is self, self.refresh_rate)


class Rates(LearningRateMonitor):
    def on_train_start(self, trainer, *args, **kwargs):
        super().on_train_start(trainer, *args, **kwargs)
        print("rates", sorted(self.lrs), isinstance(self, LearningRateMonitor))


class Rich(RichProgressBar):
    def on_train_start(self, trainer, pl_module):
        super().on_train_start(trainer, pl_module)
        print("rich", trainer.progress_bar_callback is self, self.refresh_rate, self.is_enabled)


class Keeps(ModelCheckpoint):
    def on_train_end(self, trainer, pl_module):
        super().on_train_end(trainer, pl_module)
        print("keeps", trainer.checkpoint_callback is self, isinstance(self, ModelCheckpoint), self.last_model_path)


class Patient(EarlyStopping):
    """Reports, when training ends, what Lightning's trainer and base class give it."""

    def __init__(self, extra_patience=1, **kwargs):
        super().__init__(**kwargs)
        self.patience += extra_patience

    def on_train_end(self, trainer, pl_module):
        print("found", trainer.early_stopping_callback is self, isinstance(self, EarlyStopping))
        print("state", self.state_key, self.stopping_reason.name, self.stopped_epoch, trainer.current_epoch)
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
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss, on_step=False, on_epoch=True)
        return loss

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


@pytest.mark.parametrize(("callback", "base"), [("Timed", "Timer")])
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


@pytest.mark.parametrize("callback", ["Freeze", "Project"])
def test_a_finetuning_subclass_gets_its_bases_hooks_where_lightning_calls_them(tmp_path: Path, callback: str) -> None:
    text = render(spec(tmp_path, f"cbproj.callbacks.{callback}"), tmp_path)
    main = text[text.index("def main") : text.index("def set_up")]
    # setup (in build()): freeze_before_training, before configure_optimizers; then on_fit_start and each
    # epoch's start
    build = text[text.index("def build") :]
    assert "callback.freeze_before_training(model)" in build[: build.index("\ndef ")]
    order = [
        "= build(",
        "model.configure_optimizers()",
        "callback.on_fit_start(trainer, model)",
        "callback.on_train_epoch_start(trainer, model)",
    ]
    assert all(line in main for line in order)
    assert sorted(order, key=main.index) == order
    assert "optimizers=[]," in text and "trainer.optimizers = [optimizer]" in text  # what the base's hooks read


def stopping_spec(tmp_path: Path, **trainer) -> dict:
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    (tmp_path / "cbproj" / "stopping.py").write_text(STOPPING)
    entry = {
        "class_path": "cbproj.stopping.Patient",
        "init_args": {"monitor": "loss", "patience": 0, "min_delta": 0.05},
    }
    return {**base, "trainer": {**base["trainer"], "max_epochs": 20, "callbacks": [entry], **trainer}}


def test_an_early_stopping_subclass_runs_on_the_scripts_base(tmp_path: Path) -> None:
    text = render(stopping_spec(tmp_path), tmp_path)
    assert "from cbproj.stopping import Patient" in text
    assert 'LightningEarlyStopping = lightning_class(Patient, "EarlyStopping")' in text
    assert "\nclass Patient(Patient, EarlyStoppingBase):\n" in text
    # Lightning calls an EarlyStopping's on_train_epoch_end after the module's
    main = text[text.index("def main") :]
    assert "callback.on_train_epoch_end(trainer, model)" in main
    script = tmp_path / "train.py"
    script.write_text(text)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith(("found", "state"))]
    # patience 0 + 1 from the subclass: it stops at the first epoch whose loss does not improve on the best
    assert lines[0] == "found True True"
    assert lines[1].startswith("state Patient{'monitor': 'loss', 'mode': 'min'} PATIENCE_EXHAUSTED ")
    stopped, epoch = map(int, lines[1].split()[-2:])
    assert 0 < stopped < 19 and epoch == stopped + 1


@pytest.mark.parametrize(("entry", "base", "lightning"), [
    ("Patient", "EarlyStoppingBase", ["EarlyStopping"]),
    ("Bar", "TQDMProgressBarBase", ["TQDMProgressBar", "ProgressBar"]),
    ("Rich", "RichProgressBarBase", ["RichProgressBar", "ProgressBar"]),
    ("Rates", "LearningRateMonitorBase", ["LearningRateMonitor"]),
    ("Keeps", "ModelCheckpointBase", ["ModelCheckpoint", "Checkpoint"]),
])  # fmt: skip
def test_the_scripts_base_has_every_method_of_lightnings(
    tmp_path: Path, entry: str, base: str, lightning: list[str]
) -> None:
    """None of Lightning's code runs under a subclass: the base defines every name Lightning's class (and its
    bases short of Callback, whose hooks do nothing) defines."""
    case = stopping_spec(tmp_path, logger=True)
    case["trainer"]["callbacks"] = [{"class_path": f"cbproj.stopping.{entry}", "init_args": {}}]
    if entry == "Patient":
        case["trainer"]["callbacks"][0]["init_args"] = {"monitor": "loss"}
    if entry == "Keeps":
        case["trainer"]["enable_checkpointing"] = True
    text = render(case, tmp_path)
    node = next(node for node in ast.parse(text).body if isinstance(node, ast.ClassDef) and node.name == base)
    defined = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
    defined |= {target.id for item in node.body if isinstance(item, ast.Assign) for target in item.targets}
    callbacks = pytest.importorskip("pytorch_lightning.callbacks")
    names = {
        name
        for cls in lightning
        for name in vars(getattr(callbacks, cls))
        if not name.startswith("__") or name in ("__init__", "__getstate__")
    }
    assert names - {"_abc_impl"} <= defined


def test_a_learning_rate_monitor_subclass_names_and_logs_on_the_scripts_base(tmp_path: Path) -> None:
    case = stopping_spec(tmp_path, logger=True, max_epochs=2)
    case["trainer"]["callbacks"] = ["cbproj.stopping.Rates"]
    text = render(case, tmp_path)
    assert "\nclass Rates(Rates, LearningRateMonitorBase):\n" in text
    assert "callback.log_step = log_step" in text and "callback.logs_due = (log_step + 1) % LOG_EVERY_N_STEPS" in text
    script = tmp_path / "train.py"
    script.write_text(text)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "rates ['lr-SGD'] True\n" in run.stdout
    (metrics,) = tmp_path.glob("lightning_logs/version_0/metrics.csv")
    rows = metrics.read_text().splitlines()
    assert "lr-SGD" in rows[0].split(",")
    assert sum(row.startswith("0.1,") or ",0.1," in row for row in rows[1:]) == 2  # at each epoch's start


def test_an_early_stopping_subclass_in_a_1_9_5_spec_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        LoopgenError, match=re.escape("(a subclass of EarlyStopping) in a spec that follows Lightning 1.9.5")
    ):
        render(stopping_spec(tmp_path, track_grad_norm=2), tmp_path)


@pytest.mark.parametrize(
    ("entry", "base", "printed", "drawn"),
    [
        ("Bar", "TQDMProgressBarBase", "bar True 3\n", "Epoch 0: 100%|"),
        ("Rich", "RichProgressBarBase", "rich True 3 True\n", "Epoch 0/0"),
    ],
)
def test_a_bar_subclass_is_the_trainers_bar(tmp_path: Path, entry: str, base: str, printed: str, drawn: str) -> None:
    case = stopping_spec(tmp_path, max_epochs=1)
    case["trainer"]["callbacks"] = [{"class_path": f"cbproj.stopping.{entry}", "init_args": {"refresh_rate": 3}}]
    text = render(case, tmp_path)
    assert f"\nclass {entry}({entry}, {base}):\n" in text
    # the script draws no bar of its own
    assert "class TQDMProgressBar:" not in text and "class RichProgressBar:" not in text
    assert "class ProgressBar:" not in text
    script = tmp_path / "train.py"
    script.write_text(text)
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert printed in run.stdout
    assert drawn in run.stdout


ON = {"enable_checkpointing": True}


@pytest.mark.parametrize(
    ("callbacks", "trainer", "message"),
    [
        (["cbproj.stopping.Bar", "TQDMProgressBar"], {}, "TQDMProgressBar: a second progress bar"),
        (["cbproj.stopping.Bar"], {"enable_progress_bar": False}, "is false, but the callbacks have a Bar"),
        (["cbproj.stopping.Bar"], {"track_grad_norm": 2}, "(a subclass of TQDMProgressBar) in a spec that follows"),
        (["cbproj.stopping.Rich", "cbproj.stopping.Bar"], {}, "Bar: a second progress bar"),
        (["RichProgressBar", "cbproj.stopping.Rich"], {}, "Rich: a second progress bar"),
        (["cbproj.stopping.Rich"], {"track_grad_norm": 2}, "(a subclass of RichProgressBar) in a spec that follows"),
        (
            ["cbproj.stopping.Rates"],
            {"logger": False},
            "cbproj.stopping.Rates (a LearningRateMonitor) without a logger",
        ),
        (["cbproj.stopping.Rates"], {"logger": True, "fast_dev_run": True}, "fast_dev_run's dummy logger is none"),
        (["LearningRateMonitor", "cbproj.stopping.Rates"], {"logger": True}, "a second LearningRateMonitor"),
        (
            ["cbproj.stopping.Rates", "StochasticWeightAveraging"],
            {"logger": True},
            "StochasticWeightAveraging with cbproj.stopping.Rates (a LearningRateMonitor) is not supported",
        ),
        (["cbproj.stopping.Rates"], {"logger": True, "track_grad_norm": 2}, "(a subclass of LearningRateMonitor) in"),
        (
            ["cbproj.stopping.Keeps", "ModelCheckpoint"],
            ON,
            "(cbproj.stopping.Keeps) beside another checkpoint callback",
        ),
        (["cbproj.stopping.Keeps", "cbproj.stopping.Keeps"], ON, "Keeps) beside another checkpoint callback (Keeps)"),
        (
            ["cbproj.stopping.Keeps", {"class_path": "OnExceptionCheckpoint", "init_args": {"dirpath": "x"}}],
            ON,
            "beside another checkpoint callback (pytorch_lightning.callbacks.OnExceptionCheckpoint)",
        ),
        (
            ["cbproj.stopping.Keeps"],
            {**ON, "strategy": "ddp", "devices": 2},
            "(cbproj.stopping.Keeps) with the ddp engine is",
        ),
        (
            ["cbproj.stopping.Keeps"],
            {**ON, "logger": [{"class_path": "MLFlowLogger", "init_args": {"tracking_uri": "file:./mlruns"}}]},
            "(cbproj.stopping.Keeps) without dirpath, with MLFlowLogger the first logger is not supported",
        ),
        (
            [{"class_path": "cbproj.stopping.Keeps", "init_args": {"train_time_interval": "00:00:01:00"}}],
            ON,
            "cbproj.stopping.Keeps(train_time_interval=...) given in the spec is not supported",
        ),
        (["cbproj.stopping.Keeps"], {**ON, "fast_dev_run": True}, "(cbproj.stopping.Keeps) with fast_dev_run is not"),
        (
            ["cbproj.stopping.Keeps"],
            {"enable_checkpointing": False},
            "is false, but the callbacks have a ModelCheckpoint",
        ),
        (
            ["cbproj.stopping.Keeps"],
            {**ON, "track_grad_norm": 2},
            "(a subclass of ModelCheckpoint) in a spec that follows",
        ),
    ],
)
def test_what_a_subclass_on_a_written_base_cannot_serve_is_refused(
    tmp_path: Path, callbacks: list[str], trainer: dict, message: str
) -> None:
    case = stopping_spec(tmp_path, **trainer)
    case["trainer"]["callbacks"] = callbacks
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)


@pytest.mark.parametrize(
    ("callback", "trainer", "message"),
    [
        ("SetsUp", {}, "overriding BaseFinetuning.setup is not supported by loopgen (Lightning's setup reads"),
        ("TakesIndex", {}, "TakesIndex.finetune_function with 4 parameters is not supported by loopgen"),
        (
            "Freeze",
            {"track_grad_norm": 2},
            "(a BaseFinetuning) in a spec that follows Lightning 1.9.5 is not supported",
        ),
    ],
)
def test_what_a_finetuning_subclass_cannot_serve_is_refused(
    tmp_path: Path, callback: str, trainer: dict, message: str
) -> None:
    base = spec(tmp_path, f"cbproj.callbacks.{callback}")
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render({**base, "trainer": {**base["trainer"], **trainer}}, tmp_path)


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


# --- Lightning's BackboneFinetuning: the script's own class, served as a BaseFinetuning subclass is (its training
# and resume are compared with Lightning 2.6.6's in tests/parity/test_parity.py, backbone_finetuning_*, and
# tests/test_finetuning.py)

BACKBONE = {"class_path": "BackboneFinetuning", "init_args": {"unfreeze_backbone_at_epoch": 1}}


def backbone_spec(tmp_path: Path, **trainer) -> dict:
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    model = MODEL.replace("self.layer = torch.nn.Linear(2, 1)", "self.backbone = self.layer = torch.nn.Linear(2, 1)")
    (tmp_path / "cbproj" / "model.py").write_text(textwrap.dedent(model))
    return {**base, "trainer": {**base["trainer"], "callbacks": [BACKBONE], **trainer}}


def test_backbone_finetuning_is_the_scripts_class_with_a_finetuning_subclass_hooks(tmp_path: Path) -> None:
    text = render(backbone_spec(tmp_path), tmp_path)
    assert "class BackboneFinetuning:" in text and "import BackboneFinetuning" not in text
    assert "lambda_func" not in text  # Lightning's default factor is in the class
    build = text[text.index("def build") :]
    build = build[: build.index("\ndef ")]
    assert "callback = BackboneFinetuning(" in build and "unfreeze_backbone_at_epoch=1," in build
    assert "callback.freeze_before_training(model)" in build
    main = text[text.index("def main") : text.index("def set_up")]
    order = ["model.configure_optimizers()", "callback.on_fit_start(trainer, model)", "callback.on_train_epoch_start("]
    assert sorted(order, key=main.index) == order


def test_without_backbone_finetuning_the_script_has_no_such_class(tmp_path: Path) -> None:
    assert "BackboneFinetuning" not in render(spec(tmp_path, "cbproj.callbacks.Plain"), tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no backbone", "whose source sets no `self.backbone` is not supported by loopgen"),
        ("lambda_func", "BackboneFinetuning(lambda_func=cbproj.model.factor) is not supported by loopgen"),
        ("1.9.5", "(a BaseFinetuning) in a spec that follows Lightning 1.9.5 is not supported"),
    ],
)
def test_what_backbone_finetuning_cannot_serve_is_refused(tmp_path: Path, change: str, message: str) -> None:
    case = backbone_spec(tmp_path)
    if change == "no backbone":
        (tmp_path / "cbproj" / "model.py").write_text(textwrap.dedent(MODEL))
    elif change == "lambda_func":
        entry = {**BACKBONE, "init_args": {**BACKBONE["init_args"], "lambda_func": "cbproj.model.factor"}}
        case["trainer"]["callbacks"] = [entry]
    else:
        case["trainer"]["track_grad_norm"] = 2
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)


# --- Lightning's WeightAveraging and EMAWeightAveraging: the script's own class (their training, checkpoints and
# resume are compared with Lightning 2.6.6's in tests/parity/test_parity.py, *weight_averaging*, and
# tests/test_weight_averaging.py)


@pytest.mark.parametrize("name", ["WeightAveraging", "EMAWeightAveraging"])
def test_weight_averaging_is_the_scripts_class_called_at_its_hooks(tmp_path: Path, name: str) -> None:
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    text = render({**base, "trainer": {**base["trainer"], "callbacks": [name]}}, tmp_path)
    assert f"class {name}:" in text and f"import {name}" not in text
    assert ("get_ema_avg_fn" in text) == (name == "EMAWeightAveraging")
    main = text[text.index("def main") : text.index("def set_up")]
    order = ["callback.on_fit_start(trainer, model)", "callback.on_train_batch_end("]
    assert sorted(order, key=main.index) == order
    # WeightAveraging never updates by epoch: its class has no such hook, and the script does not call it
    assert ("callback.on_train_epoch_end(" in main) == (name == "EMAWeightAveraging")
    assert "callback.on_train_end(trainer, model)" in main


@pytest.mark.parametrize(
    ("callbacks", "trainer", "message"),
    [
        (
            ["EMAWeightAveraging", "WeightAveraging"],
            {},
            "a second weight-averaging callback (pytorch_lightning.callbacks.WeightAveraging) is",
        ),
        (["EMAWeightAveraging"], {"track_grad_norm": 2}, "EMAWeightAveraging in a spec that follows Lightning 1.9.5"),
        (
            [{"class_path": "WeightAveraging", "init_args": {"avg_fn": "torch.optim.swa_utils.get_ema_avg_fn"}}],
            {},
            "unknown argument of WeightAveraging",
        ),
    ],
)
def test_what_weight_averaging_cannot_serve_is_refused(
    tmp_path: Path, callbacks: list, trainer: dict, message: str
) -> None:
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render({**base, "trainer": {**base["trainer"], "callbacks": callbacks, **trainer}}, tmp_path)


def test_the_averaged_copy_follows_the_module_to_its_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lightning makes the copy on the device the module trains on (its setup sees that device); the script moves
    the module after setup, so its class moves the copy at fit's start: here to the meta device, standing for a
    GPU. A `device` given keeps the copy there."""
    torch = pytest.importorskip("torch")
    base = spec(tmp_path, "cbproj.callbacks.Plain")
    text = render({**base, "trainer": {**base["trainer"], "callbacks": ["EMAWeightAveraging"]}}, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "train.py").write_text(text)
    namespace = runpy.run_path(str(tmp_path / "train.py"), run_name="rendered")  # its classes, main() not run
    for device, expected in ((None, "meta"), ("cpu", "cpu")):
        module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
        callback = namespace["EMAWeightAveraging"](device=device)
        callback.setup(None, module, stage="fit")
        module.to("meta")
        callback.on_fit_start(None, module)
        devices = {t.device.type for t in [*callback.average_model.parameters(), *callback.average_model.buffers()]}
        assert devices == {expected}


def test_on_exception_is_called_for_a_callback_and_never_for_the_module(tmp_path: Path) -> None:
    """Lightning calls a callback's on_exception when fit raises, and has no such hook on a LightningModule: the
    script calls the first in its failure path (tests/test_exception_path.py runs it) and not the second, without a
    notice for either."""
    base = spec(tmp_path, "cbproj.callbacks.Failing")
    callbacks = (
        CALLBACKS
        + "\n\nclass Failing(pl.Callback):\n    def on_exception(self, trainer, pl_module, exc):\n        pass\n"
    )
    (tmp_path / "cbproj" / "callbacks.py").write_text(callbacks)
    model = MODEL + "\n    def on_exception(self, exception):\n        pass\n"
    (tmp_path / "cbproj" / "model.py").write_text(textwrap.dedent(model))
    assert not [n for n in render_notices(base, tmp_path) if "on_exception" in n]
    text = render(write_spec(tmp_path, base))
    assert re.findall(r"\w+\.on_exception\(.*\)", text) == ["callback.on_exception(trainer, model, exception)"]


def render_notices(case: dict, tmp_path: Path) -> tuple[str, ...]:
    from loopgen.pipeline import render_spec

    return render_spec(write_spec(tmp_path, case), "train.py")[1]
