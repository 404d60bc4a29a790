"""The plan stage: Lightning's rules between flags (refused at render time, with the key and YAML line), and
what the script is specialised to from the user's source (configure_optimizers' shape, what is read from the
trainer, whether anything reads what self.log records)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.flags import lightning_callback
from loopgen.inspect import inspect_class
from loopgen.plan import Plan, make_plan
from loopgen.spec import load_spec

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
        None if lightning_callback(ref.class_path) else inspect_class(ref.class_path, roots, where="", callback=True)
        for ref in loaded.trainer.callbacks
    )
    return make_plan(loaded, model, None, callbacks)


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
    ],
    ids=["optimizer", "list", "lists", "lists-of-dicts", "dict-plateau", "dict-with-scheduler-dict"],
)
def test_configure_optimizers_shape(tmp_path: Path, body: str, form: str, schedulers: list) -> None:
    plan = plan_of(tmp_path, configure_optimizers=body)
    assert not plan.optimizers.general and plan.optimizers.form == form
    assert [(s.var, s.interval, s.frequency, s.plateau, s.monitor) for s in plan.optimizers.schedulers] == schedulers
    assert not plan.header.notes


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
    ],
    ids=["from-a-helper", "two-returns", "run-time-frequency"],
)
def test_source_that_does_not_show_the_shape_gets_the_general_helper(tmp_path: Path, body: str, reason: str) -> None:
    plan = plan_of(tmp_path, configure_optimizers=body)
    assert plan.optimizers.general
    (note,) = plan.header.notes
    assert reason in note and "unpacks any of the forms Lightning accepts" in note


@pytest.mark.parametrize(
    "body, spec, expected",
    [
        (
            "return [torch.optim.SGD(self.parameters(), lr=0.1), torch.optim.Adam(self.parameters())]",
            "",
            "configure_optimizers returns 2 optimizers; for several, give training_step an `optimizer_idx` parameter",
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
        print(trainer.estimated_stepping_batches)
"""


def test_trainer_holds_what_is_read(tmp_path: Path) -> None:
    plain = plan_of(tmp_path, spec="trainer:\n  enable_checkpointing: false\n  logger: false\n")
    assert not plain.state.exists and not plain.metrics.collect and plain.metrics.discards
    reader = plan_of(
        tmp_path,
        extra=CALLBACK,
        spec="trainer:\n  enable_checkpointing: false\n  logger: false\n  callbacks: [pkg.models.Reader]\n",
    )
    assert reader.state.attributes == {"global_step", "callback_metrics", "should_stop"}
    assert reader.state.counters and reader.metrics.collect and reader.bounds.stop_requests
    passer = plan_of(
        tmp_path, extra=CALLBACK, spec="trainer:\n  enable_checkpointing: false\n  callbacks: [pkg.models.Passer]\n"
    )
    assert passer.state.attributes >= {"current_epoch", "global_step", "num_training_batches", "is_global_zero"}


def test_an_attribute_the_trainer_lacks_is_refused(tmp_path: Path) -> None:
    (found,) = plan_problems(tmp_path, extra=CALLBACK, spec="trainer:\n  callbacks: [pkg.models.Unknown]\n")
    assert "reads trainer.estimated_stepping_batches, which the script's trainer does not provide" in found


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
    assert (logger.kind, logger.save_dir, logger.name, logger.version) == ("csv", None, "lightning_logs", None)
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
    assert plan.logging.loggers[0].version == 3 and not plan.logging.auto_version
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


# --- model summary and profilers


@pytest.mark.parametrize(
    "trainer, kinds",
    [
        ("callbacks: [pkg.models.Passer]", ["user", "summary", "checkpoint"]),  # the default one, after the spec's
        (
            "callbacks: [pkg.models.Passer, {class_path: ModelSummary, init_args: {max_depth: 2}}, pkg.models.Reader]",
            ["user", "summary", "user", "checkpoint"],
        ),
        ("enable_model_summary: false\n  callbacks: [pkg.models.Passer]", ["user", "checkpoint"]),
        ("enable_model_summary: false\n  callbacks: [ModelSummary]", ["summary", "checkpoint"]),
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
    [("precision: 64", 64, None), ("precision: bf16-mixed", 32, "bf16-mixed"), ("precision: 16", 32, "bf16-mixed")],
)
def test_model_summary_size_follows_lightnings_precision_table(tmp_path: Path, trainer: str, bits, warned) -> None:
    summary = plan_of(tmp_path, spec=f"trainer:\n  accelerator: cpu\n  {trainer}\n").summary
    assert (summary.precision_bits, summary.unsupported_precision) == (bits, warned)


@pytest.mark.parametrize(
    "trainer, directory, report_file",
    [
        ("profiler: simple", "logger", None),  # printed
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: 'a/b:c'}}", "logger", "fit-a_b_c.txt"),
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: p}}\n  logger: false", "root", "fit-p.txt"),
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: p, dirpath: out}}", "spec", "fit-p.txt"),
        # fast_dev_run: Lightning's dummy logger has no directory, so the report is printed
        ("profiler: {class_path: SimpleProfiler, init_args: {filename: p}}\n  fast_dev_run: true", None, None),
        (
            "profiler: {class_path: SimpleProfiler, init_args: {filename: p}}\n  fast_dev_run: true\n  logger: false",
            "root",
            "fit-p.txt",
        ),
    ],
)
def test_profiler_reports_where_lightning_writes_them(tmp_path: Path, trainer: str, directory, report_file) -> None:
    profiling = plan_of(tmp_path, spec=f"trainer:\n  {trainer}\n").profiling
    assert (profiling.directory, profiling.report_file) == (directory, report_file)


def test_pytorch_profiler_trace_name_and_arguments(tmp_path: Path) -> None:
    spec = "trainer:\n  profiler: {class_path: PyTorchProfiler, init_args: {filename: p, profile_memory: true}}\n"
    profiling = plan_of(tmp_path, spec=spec).profiling
    assert profiling.trace and profiling.trace_name == "fit-p-[Strategy]SingleDeviceStrategy.training_step"
    assert profiling.profile_args == {"profile_memory": True}
    assert not plan_of(tmp_path, spec="trainer:\n  logger: false\n").profiling.enabled
