"""The plan stage: Lightning's rules between flags (refused at render time, with the key and YAML line), and
what the script is specialised to from the user's source (configure_optimizers' shape, what is read from the
trainer, whether anything reads what self.log records)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.plan import Plan, make_plan
from loopgen.source.reader import inspect_class
from loopgen.spec.load import load_spec
from loopgen.spec.support import lightning_callback

MODEL = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def val_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        self.log("loss", batch.sum())
        return self.layer(batch).sum()

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.layer(batch).sum())
"""


def plan_of(tmp_path: Path, configure_optimizers: str = "return torch.optim.SGD(self.parameters(), lr=0.1)",
            spec: str = "", extra: str = "", model: str = "Net") -> Plan:  # fmt: skip
    """The plan of a spec for `pkg.models.Net` (or another class of `extra`), whose configure_optimizers has the
    body given."""
    package = tmp_path / "pkg"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    body = textwrap.indent(textwrap.dedent(configure_optimizers).strip(), " " * 8)
    source = MODEL + f"\n    def configure_optimizers(self):\n{body}\n" + extra
    (package / "models.py").write_text(source)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(f"model: pkg.models.{model}\n" + textwrap.dedent(spec))
    loaded = load_spec(spec_path)
    roots = [tmp_path]
    model = inspect_class(loaded.model.class_path, roots, where="model.class_path")
    callbacks = tuple(
        (
            None
            if lightning_callback(ref.class_path)
            else inspect_class(ref.class_path, roots, where="trainer.callbacks", callback=True)
        )
        for ref in loaded.trainer.callbacks
    )
    return make_plan(loaded, model, None, callbacks)


def header_imports(plan: Plan) -> set[str]:
    """The import statements at the top of the plan's script (the renderer writes those its code uses)."""
    from loopgen.render.script import render

    return {
        ast.unparse(node) for node in ast.parse(render(plan)).body if isinstance(node, (ast.Import, ast.ImportFrom))
    }


def plan_problems(tmp_path: Path, **kwargs: str) -> list[str]:
    with pytest.raises(LoopgenError) as excinfo:
        plan_of(tmp_path, **kwargs)
    return [str(problem) for problem in excinfo.value.problems]


# --- rules between flags, with the key and its line


@pytest.mark.parametrize(
    "trainer, expected",
    [
        ("amp_level: O1", "trainer.amp_level (line 3): is only used with `amp_backend: apex`"),
        ("amp_backend: apex", "trainer.amp_backend (line 3): apex needs `precision: 16-mixed`, not 32"),
        (
            "accelerator: cuda\n  amp_backend: apex\n  precision: bf16-mixed",
            "trainer.amp_backend (line 4): apex needs `precision: 16-mixed`, not bf16-mixed",
        ),
        (
            "check_val_every_n_epoch: null\n  val_check_interval: 0.5",
            (
                "trainer.val_check_interval (line 4): must be an integer (a number of batches) when"
                " check_val_every_n_epoch is null"
            ),
        ),
    ],
)
def test_flag_rules_name_the_key_and_line(tmp_path: Path, trainer: str, expected: str) -> None:
    assert plan_problems(tmp_path, spec=f"trainer:\n  {trainer}\n") == [expected]


def test_flag_rules_accept_what_lightning_accepts(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, spec="trainer:\n  check_val_every_n_epoch: null\n  val_check_interval: 3\n")
    assert plan.validation.across_epochs and plan.validation.interval_batches == 3
    plan = plan_of(tmp_path, spec="trainer:\n  check_val_every_n_epoch: null\n")  # the default interval is no fraction
    assert plan.validation.across_epochs


@pytest.mark.parametrize(
    "trainer, dtype",
    [("precision: bf16-true", "bfloat16"), ("precision: 16-true", "float16"), ("precision: 64", "float64")],
)
def test_true_precisions_cast_the_model_and_keep_no_autocast(tmp_path: Path, trainer: str, dtype: str) -> None:
    precision = plan_of(tmp_path, spec=f"trainer:\n  {trainer}\n").precision
    assert precision.casts and precision.cast_dtype == dtype and precision.context
    assert precision.half == (dtype != "float64") and precision.double == (dtype == "float64")
    assert not precision.autocast and not precision.scaler


@pytest.mark.parametrize(
    "trainer, extra, expected",
    [
        (
            "precision: bf16-true\n  truncated_bptt_steps: 2",
            "",
            (
                "trainer.precision (line 3): bf16-true with truncated_bptt_steps, which only Lightning 1.9.5 has, is"
                " not supported (Lightning 1.9.5 has no true half precision: its values are 16, bf16, 32 and 64):"
                " use bf16-mixed, or drop it"
            ),
        ),
        (
            "precision: 16-true",
            "    def training_epoch_end(self, outputs):\n        pass\n",
            (
                "trainer.precision (line 3): 16-true with a `training_epoch_end` hook, which only Lightning 1.9.5"
                " has, is not supported (Lightning 1.9.5 has no true half precision: its values are 16, bf16, 32"
                " and 64): use 16-mixed, or drop it"
            ),
        ),
    ],
)
def test_true_half_precision_is_refused_with_what_only_1_9_5_has(
    tmp_path: Path, trainer: str, extra: str, expected: str
) -> None:
    assert expected in plan_problems(tmp_path, spec=f"trainer:\n  {trainer}\n", extra=extra)


def test_every_problem_is_reported_together(tmp_path: Path) -> None:
    found = plan_problems(
        tmp_path,
        configure_optimizers="return torch.optim.LBFGS(self.parameters())",
        spec="trainer:\n  amp_level: O1\n  accelerator: cuda\n  precision: 16-mixed\n",
    )
    assert any("amp_level" in line for line in found)
    assert any("LBFGS optimizer are not compatible" in line for line in found)


# --- configure_optimizers, specialised to the shape its source returns


@pytest.mark.parametrize(
    "body, form, schedulers",
    [
        ("return torch.optim.SGD(self.parameters(), lr=0.1)", "optimizer", []),
        ("optimizer = torch.optim.Adam(self.parameters())\nreturn [optimizer]", "optimizers", []),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=1)]"
            ),
            "lists",
            [("scheduler", "epoch", 1, False, None)],
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "per_step = {'scheduler': torch.optim.lr_scheduler.ExponentialLR(opt, 0.9), 'interval': 'step',"
                " 'frequency': 2}\n"
                "return [opt], [per_step, torch.optim.lr_scheduler.StepLR(opt, 1)]"
            ),
            "lists",
            [("scheduler_0", "step", 2, False, None), ("scheduler_1", "epoch", 1, False, None)],
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\n"
                "return {'optimizer': opt, 'lr_scheduler': plateau, 'monitor': 'val_loss'}"
            ),
            "dict",
            [("scheduler", "epoch", 1, True, "val_loss")],
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "return {'optimizer': opt, 'lr_scheduler': {'scheduler': torch.optim.lr_scheduler.ReduceLROnPlateau(opt),"
                " 'monitor': 'val_loss', 'interval': 'step', 'strict': False, 'name': 'lr'}}"
            ),
            "dict",
            [("scheduler", "step", 1, True, "val_loss")],
        ),
        (
            # a name rebound to a dict around its own earlier value (Hugging Face-style modules)
            (
                "optimizer = torch.optim.AdamW(self.parameters(), lr=0.1)\n"
                "scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.9 ** step)\n"
                "scheduler = {'scheduler': scheduler, 'interval': 'step', 'frequency': 1}\n"
                "return [optimizer], [scheduler]"
            ),
            "lists",
            [("scheduler", "step", 1, False, None)],
        ),
        (
            # the optimizer rebound after the scheduler took the first one: the scheduler's is the first
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
                "opt: torch.optim.Optimizer = opt\n"
                "opt = opt\n"
                "return {'optimizer': opt, 'lr_scheduler': sched}"
            ),
            "dict",
            [("scheduler", "epoch", 1, False, None)],
        ),
        (
            # lists grown by append / extend / += (PyTorch-VAE-style), a scheduler on an item of one
            (
                "optims, scheds = [], []\n"
                "optims.append(torch.optim.SGD(self.parameters(), lr=0.1))\n"
                "scheds.extend([torch.optim.lr_scheduler.StepLR(optims[0], 1)])\n"
                "scheds += [{'scheduler': torch.optim.lr_scheduler.ExponentialLR(optims[-1], 0.9), 'interval': 'step'}]\n"
                "return optims, scheds"
            ),
            "lists",
            [("scheduler_0", "epoch", 1, False, None), ("scheduler_1", "step", 1, False, None)],
        ),
        (
            # a dict given its scheduler entry after it was built
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "config = {'optimizer': opt}\n"
                "config['lr_scheduler'] = {'scheduler': torch.optim.lr_scheduler.StepLR(opt, 1), 'interval': 'step'}\n"
                "return config"
            ),
            "dict",
            [("scheduler", "step", 1, False, None)],
        ),
    ],
    ids=[
        "optimizer",
        "list",
        "lists",
        "lists-of-dicts",
        "dict-plateau",
        "dict-with-scheduler-dict",
        "rebound-scheduler-dict",
        "rebound-optimizer",
        "appended-lists",
        "dict-entry-set",
    ],
)
def test_configure_optimizers_shape(tmp_path: Path, body: str, form: str, schedulers: list) -> None:
    plan = plan_of(tmp_path, configure_optimizers=body)
    assert not plan.optimizers.general and plan.optimizers.form == form
    assert [(s.var, s.interval, s.frequency, s.plateau, s.monitor) for s in plan.optimizers.schedulers] == schedulers
    assert not plan.optimizers.general_reason


@pytest.mark.parametrize(
    "body, reason",
    [
        ("return self.make()", "returns `self.make()`, not an optimizer built in it"),
        (
            (
                "if self.training:\n    return torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "return torch.optim.Adam(self.parameters())"
            ),
            "returns from more than one place",
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "return {'optimizer': opt, 'lr_scheduler': {'scheduler': torch.optim.lr_scheduler.StepLR(opt, 1),"
                " 'frequency': self.every}}"
            ),
            'sets "frequency" to `self.every`, known only at run time',
        ),
        (
            "optims = []\nalias = optims\nalias.append(torch.optim.SGD(self.parameters(), lr=0.1))\nreturn optims",
            "grows `alias` (line 26), a list not built in it alone",
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\nconfig = {'optimizer': opt}\n"
                "config.update(lr_scheduler=torch.optim.lr_scheduler.StepLR(opt, 1))\nreturn config"
            ),
            "returns `config`, not an optimizer built in it",
        ),
    ],
    ids=["from-a-helper", "two-returns", "run-time-frequency", "grown-alias", "dict-updated"],
)
def test_source_that_does_not_show_the_shape_gets_the_general_helper(tmp_path: Path, body: str, reason: str) -> None:
    plan = plan_of(tmp_path, configure_optimizers=body)
    assert plan.optimizers.general
    assert reason in plan.optimizers.general_reason
    from loopgen.render.script import render

    header = " ".join(render(plan).split('"""')[1].split())  # the header says where the script is general, and why
    assert f"General where the source does not say: {' '.join(plan.optimizers.general_reason.split())}" in header


@pytest.mark.parametrize(
    "body, spec, expected",
    [
        (
            "return [torch.optim.SGD(self.parameters(), lr=0.1), torch.optim.Adam(self.parameters())]",
            "",
            "configure_optimizers returns 2 optimizers; training with several optimizers is only supported",
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "return {'optimizer': opt, 'lr_scheduler': torch.optim.lr_scheduler.ReduceLROnPlateau(opt)}"
            ),
            "",
            "configure_optimizers returns a ReduceLROnPlateau scheduler without a `monitor` metric",
        ),
        (
            (
                "opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
                "return {'optimizer': opt, 'lr_scheduler': {'scheduler': torch.optim.lr_scheduler.StepLR(opt, 1),"
                " 'interval': 'batch'}}"
            ),
            "",
            'lr_scheduler "interval" must be "step" or "epoch", not \'batch\'',
        ),
        (
            "return torch.optim.SGD(self.parameters(), lr=0.1)",
            "loop:\n  optimizer_frequencies: [1, 1]\n",
            "loop.optimizer_frequencies: Net.training_step has no `optimizer_idx` parameter",
        ),
    ],
    ids=["two-optimizers-one-step", "plateau-without-monitor", "bad-interval", "frequencies-without-optimizer_idx"],
)
def test_what_the_source_contradicts_is_refused_at_render_time(tmp_path: Path, body: str, spec: str,
                                                              expected: str) -> None:  # fmt: skip
    found = plan_problems(tmp_path, configure_optimizers=body, spec=spec)
    assert any(expected in line for line in found), found


GAN_STEP = """
    def training_step(self, batch, batch_idx, optimizer_idx):
        return self.layer(batch).sum()
"""


def test_optimizer_idx_with_one_optimizer_runs_on_its_default_as_in_1_9_5(tmp_path: Path) -> None:
    """Lightning 1.9.5 passes optimizer_idx only with several optimizers: with one, training_step runs on its
    default (tests/test_lightning195.py trains it), and without a default Lightning's call raises."""
    body = "return torch.optim.SGD(self.parameters(), lr=0.1)"
    plan = plan_of(tmp_path, configure_optimizers=body, extra=GAN_STEP.replace("optimizer_idx)", "optimizer_idx=0)"))
    assert not plan.optimizers.several
    found = plan_problems(tmp_path, configure_optimizers=body, extra=GAN_STEP)
    assert any("give optimizer_idx a default (`optimizer_idx=0`)" in line for line in found), found


def test_frequencies_read_from_the_source(tmp_path: Path) -> None:
    body = (
        "g = torch.optim.SGD(self.parameters(), lr=0.1)\n"
        "d = torch.optim.SGD(self.parameters(), lr=0.1)\n"
        "return [{'optimizer': g, 'frequency': 2}, {'optimizer': d, 'frequency': 1}]"
    )
    plan = plan_of(tmp_path, configure_optimizers=body, extra=GAN_STEP)
    assert plan.optimization.frequencies == (2, 1) and plan.optimizers.form == "dicts"
    found = plan_problems(tmp_path, configure_optimizers=body, extra=GAN_STEP,
                          spec="loop:\n  optimizer_frequencies: [1, 1]\n")  # fmt: skip
    assert found == ["loop.optimizer_frequencies: [1, 1], but configure_optimizers returns the frequencies [2, 1]"]


# --- only what something reads


CALLBACK = """

class Reader:
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.seen = (trainer.global_step, trainer.callback_metrics.get("loss"))
        if trainer.global_step > 3:
            trainer.should_stop = True


class Passer:
    def on_train_end(self, trainer, pl_module):
        record(trainer)


class Unknown:
    def on_train_end(self, trainer, pl_module):
        print(trainer.fit_loop)
"""


def test_trainer_holds_what_is_read(tmp_path: Path) -> None:
    plain = plan_of(tmp_path, spec="trainer:\n  enable_checkpointing: false\n  logger: false\n")
    assert not plain.state.exists and not plain.metrics.collect and plain.metrics.discards
    reader = plan_of(
        tmp_path,
        extra=CALLBACK,
        spec="trainer:\n  enable_checkpointing: false\n  logger: false\n  callbacks: [pkg.models.Reader]\n",
    )
    # the loop counts on the trainer, so it holds both counters (names.j2 spells both as trainer attributes)
    assert reader.state.attributes == {"current_epoch", "global_step", "callback_metrics", "should_stop"}
    assert reader.state.counters and reader.metrics.collect and reader.bounds.stop_requests
    passer = plan_of(
        tmp_path, extra=CALLBACK, spec="trainer:\n  enable_checkpointing: false\n  callbacks: [pkg.models.Passer]\n"
    )
    assert passer.state.attributes >= {"current_epoch", "global_step", "num_training_batches", "is_global_zero"}


def test_an_attribute_the_trainer_lacks_is_refused(tmp_path: Path) -> None:
    (found,) = plan_problems(tmp_path, extra=CALLBACK, spec="trainer:\n  callbacks: [pkg.models.Unknown]\n")
    assert "reads trainer.fit_loop, which the script's trainer does not provide" in found


# --- loggers

HPARAMS_MODEL = """

class Saver(pytorch_lightning.LightningModule):
    def __init__(self, width=3):
        super().__init__()
        self.save_hyperparameters(logger={logger})

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        self.log("loss", batch.sum())
        return batch.sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


def test_default_logger_is_a_csv_logger_with_a_notice(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, spec="trainer:\n  log_every_n_steps: 7\n")
    (logger,) = plan.logging.loggers
    assert (logger.kind, logger.save_dir, logger.args, logger.numbered) == ("csv", None, {}, True)
    assert plan.logging.default and plan.logging.values and plan.logging.steps and plan.logging.every_n_steps == 7
    assert plan.metrics.collect  # what the model logs goes to the loggers
    assert plan.checkpointing.versioned and plan.checkpointing.searches_versions  # checkpoints in version_N
    assert any("TensorBoardLogger" in notice for notice in plan.notices)


@pytest.mark.parametrize(
    "trainer, values, steps, val_steps",
    [
        ("logger: false", False, False, False),
        ("fast_dev_run: 2", False, False, False),  # Lightning logs nothing under fast_dev_run
        ("log_every_n_steps: 0", True, False, True),  # the epoch values only
        ("limit_val_batches: 0", True, True, False),
    ],
)
def test_what_reaches_the_loggers(tmp_path: Path, trainer: str, values: bool, steps: bool, val_steps: bool) -> None:
    logging = plan_of(tmp_path, spec=f"trainer:\n  {trainer}\n").logging
    assert (logging.values, logging.steps, logging.val_steps) == (values, steps, val_steps)


def test_a_logger_with_its_own_version_is_not_searched_for_checkpoints(tmp_path: Path) -> None:
    spec = "trainer:\n  logger: {class_path: CSVLogger, init_args: {save_dir: logs, version: 3}}\n"
    plan = plan_of(tmp_path, spec=spec)
    assert plan.logging.loggers[0].args == {"version": 3} and not plan.logging.auto_version
    assert plan.checkpointing.versioned and not plan.checkpointing.searches_versions


@pytest.mark.parametrize("logger, logged", [("True", True), ("False", False)])
def test_hyperparameters_go_to_the_loggers_as_save_hyperparameters_says(
    tmp_path: Path, logger: str, logged: bool
) -> None:
    extra = "\nimport pytorch_lightning\n" + HPARAMS_MODEL.replace("{logger}", logger)
    assert not plan_of(tmp_path, extra=extra).logging.hparams  # Net does not save them
    assert plan_of(tmp_path, extra=extra, model="Saver").logging.hparams_model is logged


def test_save_hyperparameters_with_a_computed_logger_argument_is_refused(tmp_path: Path) -> None:
    extra = "\nimport pytorch_lightning\n" + HPARAMS_MODEL.replace("{logger}", "width > 2")
    (found,) = plan_problems(tmp_path, extra=extra, model="Saver")
    assert "calls save_hyperparameters(logger=...) with a value loopgen cannot read" in found
    assert plan_of(tmp_path, extra=extra, model="Saver", spec="trainer:\n  logger: false\n").logging.loggers == ()


# --- LearningRateMonitor

PARAM_GROUPS = """
optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
warmup = torch.optim.lr_scheduler.LinearLR(optimizer)
return [optimizer], [{"scheduler": warmup, "interval": "step", "name": "warmup"}]
"""


@pytest.mark.parametrize(
    "init_args, at_batch_start, at_epoch_start",
    [
        ("{}", "step", "epoch"),  # each scheduler at its own interval
        ("{logging_interval: step}", "any", None),
        ("{logging_interval: epoch}", None, "any"),
    ],
)
def test_learning_rate_monitor_logs_at_lightnings_hooks(
    tmp_path: Path, init_args: str, at_batch_start: str | None, at_epoch_start: str | None
) -> None:
    spec = f"trainer:\n  callbacks: [{{class_path: LearningRateMonitor, init_args: {init_args}}}]\n"
    plan = plan_of(tmp_path, PARAM_GROUPS, spec=spec)
    monitor = plan.logging.lr_monitor
    assert (monitor.at_batch_start, monitor.at_epoch_start) == (at_batch_start, at_epoch_start)
    assert [(s.name, s.interval) for s in monitor.schedulers] == [("warmup", "step")]
    assert plan.logging.counts_steps and monitor.callback in plan.hooks.callbacks
    hooks = {"on_train_batch_start"} if at_batch_start else set()
    assert monitor.callback.hooks == hooks | ({"on_train_epoch_start"} if at_epoch_start else set())


def test_learning_rate_monitor_without_logging_steps_logs_at_epoch_starts_only(tmp_path: Path) -> None:
    spec = "trainer:\n  log_every_n_steps: 0\n  callbacks: [{class_path: LearningRateMonitor}]\n"
    monitor = plan_of(tmp_path, spec=spec).logging.lr_monitor
    assert (monitor.at_batch_start, monitor.at_epoch_start) == (None, "epoch")
    assert not plan_of(tmp_path, spec=spec).logging.every_n_steps_used


def test_learning_rate_monitor_sits_among_the_callbacks_in_the_specs_order(tmp_path: Path) -> None:
    spec = "trainer:\n  callbacks: [ModelCheckpoint, LearningRateMonitor, pkg.models.Reader]\n"
    callbacks = plan_of(tmp_path, extra=CALLBACK, spec=spec).hooks.callbacks
    assert [cb.kind for cb in callbacks] == ["lr_monitor", "user", "progress", "summary", "checkpoint"]


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "trainer:\n  logger: false\n  callbacks: [LearningRateMonitor]\n",
            "Cannot use `LearningRateMonitor` callback with `Trainer` that has no logger",
        ),
        (
            "trainer:\n  callbacks: [LearningRateMonitor, LearningRateMonitor]\n",
            (
                "more than one LearningRateMonitor callback is not supported by loopgen (the script logs one set of"
                " learning rates at each logging point); keep one"
            ),
        ),
    ],
)
def test_learning_rate_monitor_refusals(tmp_path: Path, spec: str, message: str) -> None:
    (found,) = plan_problems(tmp_path, spec=spec)
    assert message in found


def test_device_stats_monitor_sits_among_the_callbacks_with_its_hooks(tmp_path: Path) -> None:
    spec = "trainer:\n  callbacks: [pkg.models.Reader, DeviceStatsMonitor]\n"
    callbacks = plan_of(tmp_path, extra=CALLBACK, spec=spec).hooks.callbacks
    assert [cb.kind for cb in callbacks] == ["user", "device_stats", "progress", "summary", "checkpoint"]
    assert callbacks[1].hooks >= {"on_train_batch_start", "on_validation_batch_end", "on_test_batch_start"}
    # log_every_n_steps 0 (the loggers are never due), fast_dev_run (a dummy logger): nothing to write, no monitor
    for flag in ("log_every_n_steps: 0", "fast_dev_run: 2"):
        spec = f"trainer:\n  {flag}\n  callbacks: [DeviceStatsMonitor]\n"
        assert "device_stats" not in [cb.kind for cb in plan_of(tmp_path, spec=spec).hooks.callbacks]


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "trainer:\n  logger: false\n  callbacks: [DeviceStatsMonitor]\n",
            "Cannot use `DeviceStatsMonitor` callback with `Trainer(logger=False)` (Lightning)",
        ),
        (
            "trainer:\n  callbacks: [DeviceStatsMonitor, DeviceStatsMonitor]\n",
            (
                "more than one DeviceStatsMonitor callback is not supported by loopgen (each would write the same"
                " statistics under the same names at the same steps); keep one"
            ),
        ),
        (
            "trainer:\n  accelerator: tpu\n  callbacks: [DeviceStatsMonitor]\n",
            (
                "DeviceStatsMonitor with accelerator tpu is not supported by loopgen (the script reads the CPU's"
                " figures with psutil and a GPU's with torch.cuda.memory_stats, not torch_xla's memory figures)"
            ),
        ),
        (
            "trainer:\n  terminate_on_nan: true\n  callbacks: [DeviceStatsMonitor]\n",
            "DeviceStatsMonitor in a spec that follows Lightning 1.9.5 is not supported by loopgen",
        ),
    ],
)
def test_device_stats_monitor_refusals(tmp_path: Path, spec: str, message: str) -> None:
    found = plan_problems(tmp_path, spec=spec)
    assert any(message in problem for problem in found), found


def test_a_scheduler_name_the_source_does_not_show_is_refused_only_with_the_monitor(tmp_path: Path) -> None:
    body = PARAM_GROUPS.replace('"name": "warmup"', '"name": self.tag')
    assert plan_of(tmp_path, body).optimizers.schedulers  # read from the source all the same
    (found,) = plan_problems(tmp_path, configure_optimizers=body, spec="trainer:\n  callbacks: [LearningRateMonitor]\n")
    assert 'gives an lr_scheduler a "name" loopgen cannot read' in found


TWO_OPTIMIZERS = """

class TwoNets(Net):
    def training_step(self, batch, batch_idx, optimizer_idx):
        self.log(f"loss_{optimizer_idx}", batch.sum())
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return [torch.optim.SGD(self.parameters(), lr=0.1), torch.optim.SGD(self.parameters(), lr=0.1)]
"""


@pytest.mark.parametrize(
    "trainer, resets",
    [
        ("track_grad_norm: 2", True),  # the norms, logged between the optimizers' training steps
        ("track_grad_norm: -1", False),
    ],
)
def test_lightning_1_9_5s_first_batch_reset_only_where_it_changes_what_is_logged(
    tmp_path: Path, trainer: str, resets: bool
) -> None:
    plan = plan_of(tmp_path, extra=TWO_OPTIMIZERS, model="TwoNets", spec=f"trainer:\n  {trainer}\n")
    assert plan.metrics.first_batch_resets is resets
    in_turn = TWO_OPTIMIZERS.replace(
        "return [torch.optim.SGD(self.parameters(), lr=0.1), torch.optim.SGD(self.parameters(), lr=0.1)]",
        "sgd = torch.optim.SGD(self.parameters(), lr=0.1)\n"
        '        return [{"optimizer": sgd, "frequency": 1}, {"optimizer": sgd, "frequency": 1}]',
    )
    plan = plan_of(tmp_path, extra=in_turn, model="TwoNets", spec=f"trainer:\n  {trainer}\n")
    assert not plan.metrics.first_batch_resets  # one optimizer a batch: nothing logs between training steps


TENSORBOARD = "{class_path: TensorBoardLogger, init_args: {save_dir: tb, name: null, prefix: fit}}"
MLFLOW = "{class_path: MLFlowLogger, init_args: {tracking_uri: 'file:./runs', run_name: fit, tags: {team: a}}}"
WANDB = "{class_path: WandbLogger, init_args: {project: p, offline: true}}"


def test_each_logger_is_built_with_the_arguments_that_differ_from_its_defaults(tmp_path: Path) -> None:
    spec = f"trainer:\n  enable_checkpointing: true\n  logger: [{TENSORBOARD}, {MLFLOW}, {WANDB}]\n"
    plan = plan_of(tmp_path, spec=spec)
    tensorboard, mlflow, wandb = plan.logging.loggers
    assert (tensorboard.kind, tensorboard.cls, tensorboard.save_dir) == ("tensorboard", "TensorBoardLogger", "tb")
    assert tensorboard.args == {"name": "", "prefix": "fit"} and tensorboard.numbered
    assert (mlflow.kind, mlflow.save_dir, mlflow.numbered) == ("mlflow", None, False)
    assert mlflow.args == {"run_name": "fit", "tracking_uri": "file:./runs", "tags": {"team": "a"}}
    assert (wandb.kind, wandb.args, wandb.numbered) == ("wandb", {"offline": True, "project": "p"}, False)
    assert plan.logging.kinds == {"tensorboard", "mlflow", "wandb"} and plan.logging.prefixed
    assert plan.logging.finishes and not plan.logging.hparams and not plan.logging.starts
    # the first logger's directory holds the default checkpoints: TensorBoard's is known when it is built
    assert plan.checkpointing.default_dir_at_build and not plan.checkpointing.default_dir_in_run
    assert plan.checkpointing.searches_versions  # earlier runs are tb/version_N
    imports = header_imports(plan)
    assert {"from torch.utils.tensorboard import SummaryWriter", "import mlflow", "import wandb"} <= imports
    assert "import csv" not in imports
    assert "from mlflow.entities import Metric" in imports  # no Param, nor TensorBoard's hparams: no hyperparameters
    assert not any("hparams" in line for line in imports)


@pytest.mark.parametrize("first", [MLFLOW, WANDB])
def test_a_run_id_logger_first_puts_the_default_checkpoints_in_its_run(tmp_path: Path, first: str) -> None:
    plan = plan_of(tmp_path, spec=f"trainer:\n  enable_checkpointing: true\n  logger: [{first}, {TENSORBOARD}]\n")
    checkpointing = plan.checkpointing
    assert checkpointing.versioned and checkpointing.default_dir_in_run and not checkpointing.default_dir_at_build
    assert not checkpointing.searches_versions  # a new run id each run, as in Lightning
    assert plan.constants.root_dir  # save_dir may be None (MLflow with a remote store): default_root_dir then


def test_only_the_named_loggers_packages_are_imported(tmp_path: Path) -> None:
    packages = {"tensorboard": "from torch.utils.tensorboard import SummaryWriter", "mlflow": "import mlflow",
                "wandb": "import wandb"}  # fmt: skip
    for logger, named in ((TENSORBOARD, "tensorboard"), (MLFLOW, "mlflow"), (WANDB, "wandb")):
        imports = header_imports(plan_of(tmp_path, spec=f"trainer:\n  logger: {logger}\n"))
        assert [kind for kind, line in packages.items() if line in imports] == [named]
    imports = header_imports(plan_of(tmp_path, spec="trainer:\n  logger: true\n"))
    assert not imports & set(packages.values())


@pytest.mark.parametrize(
    "init_args, hp_metric, args",
    [
        ("{save_dir: tb}", True, {}),
        ("{save_dir: tb, default_hp_metric: false}", False, {}),  # nothing to log then: the argument is dropped
    ],
)
def test_tensorboard_logs_hp_metric_with_the_hyperparameters(
    tmp_path: Path, init_args: str, hp_metric: bool, args: dict
) -> None:
    extra = "\nimport pytorch_lightning\n" + HPARAMS_MODEL.replace("{logger}", "True")
    spec = f"trainer:\n  logger: {{class_path: TensorBoardLogger, init_args: {init_args}}}\n"
    logging = plan_of(tmp_path, extra=extra, model="Saver", spec=spec).logging
    assert logging.hparams_model and logging.hp_metric is hp_metric and logging.flattens is hp_metric
    assert logging.loggers[0].args == args and logging.writes_yaml
    # default_hp_metric stays when another TensorBoardLogger logs hp_metric: each keeps its own
    both = f"trainer:\n  logger: [{{class_path: TensorBoardLogger, init_args: {init_args}}}, {TENSORBOARD}]\n"
    logging = plan_of(tmp_path, extra=extra, model="Saver", spec=both).logging
    assert logging.hp_metric and logging.loggers[0].args == ({} if hp_metric else {"default_hp_metric": False})


GRAPH = "trainer:\n  logger: {class_path: TensorBoardLogger, init_args: {save_dir: tb, log_graph: true}}\n"


def test_log_graph_needs_an_example_input_array(tmp_path: Path) -> None:
    (found,) = plan_problems(tmp_path, spec=GRAPH)
    assert (
        "model.class_path (line 1): TensorBoardLogger(log_graph=True) traces the model's example_input_array" in found
    )
    set_in_init = "\nclass Traced(Net):\n    def __init__(self):\n        super().__init__()\n"
    set_in_init += "        self.example_input_array = torch.ones(1, 2)\n"
    class_attribute = "\nclass Traced(Net):\n    example_input_array = torch.ones(1, 2)\n"
    for extra in (set_in_init, class_attribute):
        logging = plan_of(tmp_path, extra=extra, model="Traced", spec=GRAPH).logging
        assert logging.graphs and logging.starts and not logging.traces_lightning_module


# --- model summary and profilers


@pytest.mark.parametrize(
    "trainer, kinds",
    [
        # the default one after the spec's (and after the default bar, as Lightning appends them)
        ("callbacks: [pkg.models.Passer]", ["user", "progress", "summary", "checkpoint"]),
        (
            "callbacks: [pkg.models.Passer, {class_path: ModelSummary, init_args: {max_depth: 2}}, pkg.models.Reader]",
            ["user", "summary", "user", "progress", "checkpoint"],
        ),
        ("enable_model_summary: false\n  callbacks: [pkg.models.Passer]", ["user", "progress", "checkpoint"]),
        ("enable_model_summary: false\n  callbacks: [ModelSummary]", ["summary", "progress", "checkpoint"]),
    ],
)
def test_model_summary_prints_among_the_callbacks_in_lightnings_order(tmp_path: Path, trainer: str, kinds) -> None:
    plan = plan_of(tmp_path, extra=CALLBACK, spec=f"trainer:\n  {trainer}\n")
    assert [cb.kind for cb in plan.hooks.callbacks] == kinds
    assert [cb.kind for cb in plan.hooks.callbacks_with("on_fit_start")] == ["summary"] * ("summary" in kinds)
    assert plan.summary.enabled == ("summary" in kinds)
    assert all(cb.kind != "summary" for cb in plan.build.callbacks)  # a function prints it: nothing to build


def test_model_summary_max_depth_0_prints_nothing(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, spec="trainer:\n  callbacks: [{class_path: ModelSummary, init_args: {max_depth: 0}}]\n")
    assert not plan.summary.enabled and not plan.hooks.callbacks_with("on_fit_start")


@pytest.mark.parametrize(
    "trainer, bits, warned",
    [
        ("precision: 64", 64, None),
        ("precision: bf16-mixed", 32, "bf16-mixed"),
        ("precision: 16", 32, "bf16-mixed"),
        ("precision: bf16-true", 16, None),
        ("precision: 16-true", 16, None),
    ],
)
def test_model_summary_size_follows_lightnings_precision_table(tmp_path: Path, trainer: str, bits, warned) -> None:
    summary = plan_of(tmp_path, spec=f"trainer:\n  accelerator: cpu\n  {trainer}\n").summary
    assert (summary.precision_bits, summary.unsupported_precision) == (bits, warned)


@pytest.mark.parametrize(
    "trainer, directory, report_filename",
    [
        ("profiler: simple", "logger", None),  # printed
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: 'a/b:c'}}", "logger", "a_b_c"),
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: p}}\n  logger: false", "root", "p"),
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: p, dirpath: out}}", "spec", "p"),
        # fast_dev_run: Lightning's dummy logger has no directory, so the report is printed
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: p}}\n  fast_dev_run: true", None, None),
        (
            "profiler: {class_path: SimpleProfiler, init_args: {filename: p}}\n  fast_dev_run: true\n  logger: false",
            "root",
            "p",
        ),
    ],
)
def test_profiler_reports_where_lightning_writes_them(tmp_path: Path, trainer: str, directory, report_filename) -> None:
    profiling = plan_of(tmp_path, spec=f"trainer:\n  {trainer}\n").profiling
    assert (profiling.directory, profiling.report_filename) == (directory, report_filename)


def test_pytorch_profiler_trace_name_and_arguments(tmp_path: Path) -> None:
    spec = "trainer:\n  profiler: {class_path: PyTorchProfiler, init_args: {filename: p, profile_memory: true}}\n"
    profiling = plan_of(tmp_path, spec=spec).profiling
    assert profiling.trace and profiling.training_step == "[Strategy]SingleDeviceStrategy.training_step"
    assert (profiling.filename, profiling.safe_filename, profiling.ranked) == ("p", "p", False)
    assert profiling.profile_args == {"profile_memory": True}
    assert not plan_of(tmp_path, spec="trainer:\n  logger: false\n").profiling.enabled


# --- the progress bar


def test_default_progress_bar_is_the_scripts_own_with_a_notice(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, spec="trainer:\n  enable_checkpointing: true\n")
    progress = plan.progress
    assert (progress.kind, progress.refresh_rate, progress.line_every) == ("own", 1, 50)
    assert progress.version and not progress.metrics  # Net logs nothing with prog_bar=True
    assert progress.validation and progress.sanity and not progress.steps_total
    assert any("RichProgressBar when rich is installed" in notice for notice in plan.notices)
    # called among the callbacks, where Lightning appends its default bar: before the ModelCheckpoint
    assert [cb.kind for cb in plan.hooks.callbacks] == ["progress", "summary", "checkpoint"]
    plan = plan_of(tmp_path, spec="trainer:\n  enable_checkpointing: false\n")
    assert plan.hooks.validation_callbacks and not plan.hooks.validation_trainer  # the bar takes no `trainer`


@pytest.mark.parametrize(
    "log, shows",
    [
        ('self.log("loss", loss, prog_bar=True)', True),
        ('self.log("loss", loss, True)', True),  # prog_bar is log's third parameter
        ('self.log_dict({"loss": loss}, prog_bar=flag)', True),  # not a literal: it may be true
        ('self.log("loss", loss, **options)', True),
        ('self.log("loss", loss, prog_bar=False)', False),
        ('self.log("loss", loss, logger=True)', False),
        ('return {"loss": loss, "progress_bar": {"loss": loss}}', True),  # the seed's dict
    ],
)
def test_the_bar_shows_values_only_when_something_logs_to_it(tmp_path: Path, log: str, shows: bool) -> None:
    extra = f"""

class Shown(Net):
    def training_step(self, batch, batch_idx):
        loss, flag, options = batch.sum(), True, {{}}
        {log}
"""
    plan = plan_of(tmp_path, extra=extra, model="Shown", spec="trainer:\n  logger: false\n")
    assert plan.progress.metrics is shows and not plan.progress.version  # no logger: no v_num
    assert plan.metrics.collect is shows  # the collector only for the bar


@pytest.mark.parametrize(
    "trainer, kind, refresh_rate, line_every",
    [
        ("enable_progress_bar: false", None, 1, 50),
        ("progress_bar_refresh_rate: 20", "own", 20, 20),  # the seed's flag: Lightning 1.5's refresh rate
        ("progress_bar_refresh_rate: 0", None, 1, 50),
        (
            "callbacks: [{class_path: TQDMProgressBar, init_args: {refresh_rate: 5, process_position: 1}}]",
            "tqdm",
            5,
            50,
        ),
        ("callbacks: [{class_path: TQDMProgressBar, init_args: {refresh_rate: 0}}]", None, 0, 50),
        ("callbacks: [RichProgressBar]", "rich", 100, 50),
    ],
)
def test_which_bar(tmp_path: Path, trainer: str, kind: str | None, refresh_rate: int, line_every: int) -> None:
    plan = plan_of(tmp_path, spec=f"trainer:\n  enable_checkpointing: false\n  {trainer}\n")
    progress = plan.progress
    assert (progress.kind, progress.refresh_rate, progress.line_every) == (kind, refresh_rate, line_every)
    assert progress.enabled is (kind is not None)
    assert any(cb.kind == "progress" for cb in plan.hooks.callbacks) is progress.enabled
    imports = header_imports(plan)
    assert ("from tqdm import tqdm" in imports) is (kind == "tqdm")
    assert any(line.startswith("from rich") for line in imports) is (kind == "rich")
    assert ("import shutil" in imports) is (kind == "own")
    assert not plan.state.exists  # a bar needs no `trainer` object


def test_a_named_bar_keeps_its_place_among_the_callbacks(tmp_path: Path) -> None:
    extra = "\n\nclass Printer:\n    def on_train_start(self, trainer, pl_module):\n        pass\n"
    spec = "trainer:\n  enable_checkpointing: false\n  callbacks: [TQDMProgressBar, pkg.models.Printer]\n"
    kinds = [cb.kind for cb in plan_of(tmp_path, extra=extra, spec=spec).hooks.callbacks]
    assert kinds == ["progress", "user", "summary"]
    spec = "trainer:\n  enable_checkpointing: false\n  callbacks: [pkg.models.Printer]\n"
    kinds = [cb.kind for cb in plan_of(tmp_path, extra=extra, spec=spec).hooks.callbacks]
    assert kinds == ["user", "progress", "summary"]


def test_an_epochs_total_is_at_most_the_steps_left_without_max_epochs(tmp_path: Path) -> None:
    assert plan_of(tmp_path, spec="trainer:\n  max_steps: 5\n").progress.steps_total  # Lightning's rule
    assert not plan_of(tmp_path, spec="trainer:\n  max_steps: 5\n  max_epochs: 3\n").progress.steps_total


@pytest.mark.parametrize(
    "trainer, expected",
    [
        (
            "enable_progress_bar: false\n  callbacks: [TQDMProgressBar]",
            (
                "trainer.enable_progress_bar (line 3): is false, but the callbacks have a TQDMProgressBar"
                " (Lightning refuses this too)"
            ),
        ),
        (
            "callbacks: [TQDMProgressBar, RichProgressBar]",
            "trainer.callbacks (line 3): RichProgressBar: a second progress bar (Lightning supports one)",
        ),
        (
            "progress_bar_refresh_rate: 5\n  callbacks: [RichProgressBar]",
            (
                "trainer.progress_bar_refresh_rate (line 3): and a RichProgressBar in the callbacks: give the"
                " refresh rate to the RichProgressBar"
            ),
        ),
    ],
)
def test_progress_bars_lightning_refuses(tmp_path: Path, trainer: str, expected: str) -> None:
    assert plan_problems(tmp_path, spec=f"trainer:\n  {trainer}\n") == [expected]
