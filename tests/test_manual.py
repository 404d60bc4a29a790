"""Manual optimization at render time: what loopgen reads (`self.automatic_optimization = False` and what the
module calls), Lightning's refusals of flags that need the automatic loop (with its reasons), and the code a
manually optimizing module gets (and does not get)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.source.reader import inspect_class
from tests.helpers import render as render_file
from tests.test_plan import plan_of

GAN = """
import pytorch_lightning as pl
import torch


class Gan(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.g = torch.nn.Linear(2, 2)
        self.d = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        opt_g, opt_d = self.optimizers()
        self.toggle_optimizer(opt_g)
        loss = self.d(self.g(batch)).sum()
        self.manual_backward(loss)
        self.clip_gradients(opt_g, gradient_clip_val=0.5)
        opt_g.step()
        opt_g.zero_grad()
        self.untoggle_optimizer(opt_g)

    def configure_optimizers(self):
        return [torch.optim.SGD(self.g.parameters(), lr=0.1), torch.optim.SGD(self.d.parameters(), lr=0.1)], []
"""

AUTOMATIC_TWO = GAN.replace("        self.automatic_optimization = False\n", "")


def write(tmp_path: Path, source: str, spec: str = "") -> Path:
    package = tmp_path / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(source)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text("model: pkg.models.Gan\n" + (textwrap.dedent(spec) or "trainer: {max_epochs: 1}\n"))
    return spec_path


def render(tmp_path: Path, source: str = GAN, spec: str = "") -> str:
    return render_file(write(tmp_path, source, spec))


def refusal(tmp_path: Path, source: str = GAN, spec: str = "") -> str:
    with pytest.raises(LoopgenError) as caught:
        render(tmp_path, source, spec)
    return str(caught.value)


@pytest.mark.parametrize(
    "body, manual",
    [
        ("    def __init__(self):\n        super().__init__()\n        self.automatic_optimization = False\n", True),
        ("    automatic_optimization = False\n", True),
        ("    @property\n    def automatic_optimization(self):\n        return False\n", True),
        ("    def __init__(self):\n        super().__init__()\n        self.automatic_optimization = True\n", False),
        ("    def __init__(self, manual):\n        super().__init__()\n        self.automatic_optimization = manual\n",
         None),
    ],
)  # fmt: skip
def test_automatic_optimization_is_read_from_the_source(tmp_path: Path, body: str, manual: bool | None) -> None:
    (tmp_path / "m.py").write_text("import pytorch_lightning as pl\n\n\nclass M(pl.LightningModule):\n" + body)
    assert inspect_class("m.M", [tmp_path], where="model").manual_optimization is manual


def test_a_value_loopgen_cannot_read_is_refused(tmp_path: Path) -> None:
    source = GAN.replace("self.automatic_optimization = False", "self.automatic_optimization = not True")
    assert "assign a literal True or False" in refusal(tmp_path, source)


@pytest.mark.parametrize(
    "spec, key, reason",
    [
        ("  gradient_clip_val: 0.5\n", "trainer.gradient_clip_val", "Automatic gradient clipping is not supported"),
        ("  accumulate_grad_batches: 2\n", "trainer.accumulate_grad_batches",
         "Automatic gradient accumulation is not supported"),
    ],
)  # fmt: skip
def test_lightning_refuses_these_flags_with_manual_optimization(tmp_path: Path, spec: str, key: str, reason: str):
    message = refusal(tmp_path, spec="trainer:\n  max_epochs: 1\n" + spec)
    assert key in message and reason in message


def test_optimizer_idx_gets_the_2x_advice(tmp_path: Path) -> None:
    source = GAN.replace(
        "def training_step(self, batch, batch_idx):", "def training_step(self, batch, batch_idx, optimizer_idx):"
    )
    assert "Remove the `optimizer_idx` argument" in refusal(tmp_path, source)


def test_several_optimizers_without_manual_optimization_get_the_2x_advice(tmp_path: Path) -> None:
    message = refusal(tmp_path, AUTOMATIC_TWO)
    assert "configure_optimizers returns 2 optimizers" in message
    assert "self.automatic_optimization = False" in message and "self.optimizers()" in message
    assert "optimizer_idx" not in message


def test_a_manual_module_gets_the_methods_it_calls_and_no_automatic_step(tmp_path: Path) -> None:
    script = render(tmp_path)
    for bound in ("model.optimizers = ", "model.manual_backward = ", "model.clip_gradients = "):
        assert bound in script
    assert "trainer.optimizers = list(optimizers)" in script  # toggle_optimizer reads it
    assert "model.lr_schedulers" not in script  # not called
    assert "optimizer.zero_grad()" not in script and "loss.backward()" not in script.replace("(*args, **kwargs)", "")
    assert "trainer.global_step += 1" in script


def test_a_manual_module_that_calls_less_gets_less(tmp_path: Path) -> None:
    source = GAN.replace("        self.clip_gradients(opt_g, gradient_clip_val=0.5)\n", "")
    script = render(tmp_path, source)
    assert "clip_gradients" not in script and "clip_grad" not in script


def test_manual_plan_turns_off_automatic_scheduler_steps(tmp_path: Path) -> None:
    plan = plan_of(
        tmp_path,
        "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
        "return [opt], [{'scheduler': torch.optim.lr_scheduler.StepLR(opt, 1), 'interval': 'step'}]",
        extra="\n\nimport pytorch_lightning as pl\n\n\nclass Manual(Net, pl.LightningModule):\n"
        "    automatic_optimization = False\n",
        model="Manual",
    )
    assert plan.manual.enabled
    assert not plan.optimizers.after_step and not plan.optimizers.at_epoch_end
    assert not plan.optimization.schedulers_after_batch


READER = """
import pytorch_lightning as pl
import torch


class Gan(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def on_train_start(self):
        print(self.trainer.fit_loop)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


def test_an_attribute_the_script_cannot_serve_is_refused_with_its_line(tmp_path: Path) -> None:
    source = READER
    message = refusal(tmp_path, source)
    line = source.splitlines().index("        print(self.trainer.fit_loop)") + 1
    assert f"models.py:{line}: reads trainer.fit_loop" in message
    assert "read the trainer's counters: `current_epoch`, `global_step`" in message  # what to read instead


def test_a_hook_lightning_calls_in_fit_and_the_script_does_not_is_refused_with_its_line(tmp_path: Path) -> None:
    source = AUTOMATIC_TWO + "\n    def on_validation_model_zero_grad(self):\n        pass\n"
    message = refusal(tmp_path, source)
    line = source.splitlines().index("    def on_validation_model_zero_grad(self):") + 1
    assert f"models.py:{line}: pkg.models.Gan overrides on_validation_model_zero_grad" in message


def test_configure_model_with_manual_optimization_builds_before_the_optimizers(tmp_path: Path) -> None:
    source = GAN + "\n    def configure_model(self):\n        self.built = True\n"
    text = render(tmp_path, source)
    main = text[text.index("def main(") : text.index("\ndef ", text.index("def main("))]
    build = text[text.index("def build(") : text.index("\ndef ", text.index("def build("))]
    if "model.configure_model()" in build:  # main() builds before it configures the optimizers
        assert main.index("= build(") < main.index("configure_optimizers()")
    else:
        assert main.index("model.configure_model()") < main.index("configure_optimizers()")


def test_manual_backward_without_manual_optimization_is_refused(tmp_path: Path) -> None:
    source = AUTOMATIC_TWO.replace("opt_g, opt_d = self.optimizers()", "opt_g = self.optimizers()").replace(
        "[torch.optim.SGD(self.g.parameters(), lr=0.1), torch.optim.SGD(self.d.parameters(), lr=0.1)], []",
        "torch.optim.SGD(self.parameters(), lr=0.1)",
    )
    assert "calls self.manual_backward, which needs manual optimization" in refusal(tmp_path, source)


def test_static_trainer_attributes_are_served(tmp_path: Path) -> None:
    source = GAN.replace(
        "    def configure_optimizers(self):",
        "    def on_train_start(self):\n"
        "        print(self.trainer.world_size, self.trainer.global_rank, self.trainer.precision,\n"
        "              self.trainer.datamodule, self.trainer.lightning_module, self.trainer.default_root_dir)\n\n"
        "    def configure_optimizers(self):",
    )
    script = render(tmp_path, source, "trainer:\n  max_epochs: 1\n  precision: bf16-mixed\n")
    for served in ("world_size=1,", "global_rank=0,", 'precision="bf16-mixed",', "datamodule=None,",
                   "lightning_module=model,", "default_root_dir=default_root_dir,"):  # fmt: skip
        assert served in script


def test_manual_optimization_under_float16_amp_scales_unscales_and_steps_through_the_scaler(tmp_path, monkeypatch):
    """On a stand-in CUDA (tests/standins): manual_backward scales, the wrapped step unscales before the hooks and
    steps through the GradScaler, as Lightning's MixedPrecision plugin does in manual optimization."""
    from tests.test_standins import BASE, run_with_stand_ins

    monkeypatch.setitem(BASE, "model", "tests.standins.manual_models.ManualProbe")
    calls = run_with_stand_ins(tmp_path, monkeypatch, {"accelerator": "cuda", "precision": "16-mixed"})
    first = calls.index(("training_step",))
    batch = calls[first : calls.index(("global_step", 1)) + 1]
    assert batch == [
        ("training_step",),
        ("optimizer.zero_grad",),
        ("scaler.scale",),  # manual_backward
        ("backward",),
        ("clip_grad_norm_", 1.0),  # clip_gradients: the scaled gradients, as in Lightning
        ("scaler.unscale_",),  # the wrapped step
        ("on_before_optimizer_step",),
        ("scaler.step",),
        ("optimizer.step",),
        ("scaler.update",),
        ("global_step", 1),
    ]


def test_loggers_log_dir_and_state_are_served(tmp_path: Path) -> None:
    source = GAN.replace(
        "    def configure_optimizers(self):",
        "    def on_train_start(self):\n"
        "        print(self.logger, self.loggers, self.trainer.log_dir, self.trainer.state.stage)\n\n"
        "    def configure_optimizers(self):",
    )
    script = render(tmp_path, source, "trainer:\n  max_epochs: 1\n  logger: false\n")
    for served in ("logger=None,", "loggers=[],", "log_dir=default_root_dir,", "default_root_dir = ", 'stage="train"'):
        assert served in script
    script = render(
        tmp_path,
        source,
        "trainer:\n  max_epochs: 1\n  logger: {class_path: TensorBoardLogger, init_args: {save_dir: logs}}\n",
    )
    for served in ("logger=loggers[0],", "log_dir=loggers[0].log_dir,", "def experiment(self):"):
        assert served in script


def test_a_logger_read_under_fast_dev_run_is_lightnings_dummy_logger(tmp_path: Path) -> None:
    """Lightning swaps the loggers for its DummyLogger under fast_dev_run: the script has one where something
    reads them, and none where nothing does."""
    source = GAN.replace(
        "    def configure_optimizers(self):",
        "    def on_train_start(self):\n        print(self.trainer.log_dir)\n\n    def configure_optimizers(self):",
    )
    script = render(tmp_path, source, "trainer:\n  fast_dev_run: true\n")
    assert "log_dir=None," in script and "class DummyLogger:" not in script
    source = source.replace("print(self.trainer.log_dir)", "self.logger.experiment.add_text('a', 'b')")
    script = render(tmp_path, source, "trainer:\n  fast_dev_run: true\n")
    assert "logger=dummy_logger," in script and "class DummyLogger:" in script
    assert "class DummyLogger:" not in render(tmp_path, source, "trainer:\n  fast_dev_run: true\n  logger: false\n")


def test_toggle_optimizer_alone_attaches_the_trainer(tmp_path: Path) -> None:
    """Lightning's toggle_optimizer reads self.trainer.optimizers: a module reading nothing else from its
    trainer gets it attached all the same."""
    assert "model._trainer = trainer" in render(tmp_path)


def test_every_n_steps_with_a_modules_saved_models_is_refused(tmp_path: Path) -> None:
    """Lightning's ModelCheckpoint, saving every n steps of manual optimization, loads `self.saved_models`'
    newest entry into `self.layer` for the file: the script does not."""
    source = GAN.replace(
        "        opt_g.step()\n", "        self.saved_models = {batch_idx: {}}\n        opt_g.step()\n"
    )
    spec = (
        "trainer:\n  max_epochs: 1\n  callbacks: [{class_path: ModelCheckpoint, init_args: {every_n_train_steps: 2}}]\n"
    )
    assert "keeps `self.saved_models` is not supported by loopgen" in refusal(tmp_path, source, spec)
    assert "def main" in render(tmp_path, source, "trainer: {max_epochs: 1}\n")  # saving by epoch is served


def test_a_time_interval_saves_in_no_batch_of_manual_optimization(tmp_path: Path) -> None:
    """Lightning 2.6.6's ModelCheckpoint.on_train_batch_end counts steps only under manual optimization: a
    train_time_interval never saves there, so the script's ModelCheckpoint has no batch hook at all."""
    spec = "trainer:\n  max_epochs: 1\n  callbacks: [{class_path: ModelCheckpoint, init_args: {train_time_interval: '0:00:01'}}]\n"
    text = render(tmp_path, GAN, spec)
    assert "model_checkpoint.on_train_batch_end" not in text
    automatic = render(tmp_path, AUTOMATIC_ONE, spec)
    assert "model_checkpoint.on_train_batch_end" in automatic


AUTOMATIC_ONE = """
import pytorch_lightning as pl
import torch


class Gan(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.g = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        return self.g(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""
