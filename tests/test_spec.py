"""loopgen.spec (load, flags): the YAML spec becomes a validated, normalised Spec, or one error per problem;
loopgen.spec.schema: its JSON Schema."""

from __future__ import annotations

import hashlib
import inspect
import json
import textwrap
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
import yaml

from loopgen.errors import LoopgenError
from loopgen.spec.flags import FLAGS, FLAGS_BY_NAME, TRAINER_KEYS
from loopgen.spec.kinds import same
from loopgen.spec.load import load_spec
from loopgen.spec.model import ClassRef, LoopFlags, Spec, TrainerFlags
from loopgen.spec.schema import spec_schema

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent

# Generated with pytorch_lightning 2.6.6 (and jsonargparse 4.53):
#   LightningCLI(pl.LightningModule, subclass_mode_model=True) run as
#   fit --model tiny_model.TinyModel --model.hidden 16 --data tiny_model.TinyData --data.batch_size 4
#       --trainer.max_epochs 3 --trainer.logger false --trainer.callbacks+=tiny_model.PrintCallback
#       --trainer.callbacks.every 2 --trainer.gradient_clip_val 0.5 --optimizer torch.optim.Adam
#       --optimizer.lr 0.01 --lr_scheduler torch.optim.lr_scheduler.StepLR --lr_scheduler.step_size 2
#       --seed_everything 42 --print_config
PRINT_CONFIG = FIXTURES / "print_config.yaml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str) -> Spec:
    return load_spec(write(tmp_path, text))


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(LoopgenError) as excinfo:
        load(tmp_path, text)
    return [str(problem) for problem in excinfo.value.problems]


def problem(tmp_path: Path, text: str) -> str:
    (only,) = problems(tmp_path, text)
    return only


def trainer(tmp_path: Path, flags: str) -> TrainerFlags:
    return load(tmp_path, "model: pkg.models.Net\ntrainer:\n" + textwrap.indent(textwrap.dedent(flags), "  ")).trainer


def trainer_problem(tmp_path: Path, flags: str) -> str:
    return problem(tmp_path, "model: pkg.models.Net\ntrainer:\n" + textwrap.indent(textwrap.dedent(flags), "  "))


def notice_keys(spec: Spec) -> list[str]:
    return [notice.split(":")[0].split(" (line")[0] for notice in spec.notices]


# --- valid specs


def test_minimal_spec_gets_lightning_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "model: pkg.models.Net\n")
    spec = load_spec(path)
    assert spec.path == path
    assert spec.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert spec.model == ClassRef("pkg.models.Net", {}, line=1)
    assert spec.seed_everything is True  # LightningCLI's default
    assert (spec.data, spec.optimizer, spec.lr_scheduler, spec.ckpt_path) == (None, None, None, None)
    assert spec.loop == LoopFlags()
    assert spec.trainer == TrainerFlags()
    assert spec.trainer.precision == "32" and spec.trainer.devices == 1 and spec.trainer.max_epochs is None
    assert notice_keys(spec) == []
    assert spec.trainer.enable_progress_bar is True  # Lightning's default: a progress bar
    assert spec.trainer.enable_checkpointing is True and spec.trainer.logger is True  # Lightning's defaults


def test_contract_example_spec(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """
        seed_everything: 42
        model:
          class_path: examples.models.Classifier
          init_args: {hidden: 64, lr: 0.05}
        data:
          class_path: examples.data.RandomData
          init_args: {batch_size: 32}
        trainer:
          max_epochs: 5
          accumulate_grad_batches: 2
          gradient_clip_val: 0.5
          logger: false
          enable_checkpointing: false
          enable_progress_bar: false
        optimizer:
          class_path: torch.optim.SGD
          init_args: {lr: 0.1}
        lr_scheduler:
          class_path: torch.optim.lr_scheduler.StepLR
          init_args: {step_size: 1}
        loop:
          optimizer_frequencies: [5, 1]
        """,
    )
    assert spec.seed_everything == 42
    assert spec.model == ClassRef("examples.models.Classifier", {"hidden": 64, "lr": 0.05}, line=3)
    assert spec.model.module == "examples.models" and spec.model.name == "Classifier"
    assert spec.data == ClassRef("examples.data.RandomData", {"batch_size": 32}, line=6)
    assert spec.optimizer == ClassRef("torch.optim.SGD", {"lr": 0.1}, line=16)
    assert spec.lr_scheduler is not None and spec.lr_scheduler.init_args == {"step_size": 1}
    assert spec.loop.optimizer_frequencies == (5, 1)
    t = spec.trainer
    assert (t.max_epochs, t.accumulate_grad_batches, t.gradient_clip_val) == (5, 2, 0.5)
    assert (t.logger, t.enable_checkpointing, t.enable_progress_bar) == (False, False, False)
    assert spec.notices == ()  # explicit `false` silences the not-implemented-default notices


def test_lightning_cli_print_config_loads_unchanged() -> None:
    spec = load_spec(PRINT_CONFIG)
    assert spec.seed_everything == 42
    assert spec.model == ClassRef(
        "tiny_model.TinyModel", {"hidden": 16, "activation": "relu", "sizes": [4, 2]}, line=48
    )
    assert spec.data == ClassRef("tiny_model.TinyData", {"batch_size": 4, "num_samples": 8}, line=56)
    assert spec.optimizer is not None and spec.optimizer.class_path == "torch.optim.Adam"
    assert spec.optimizer.init_args["betas"] == [0.9, 0.999] and spec.optimizer.init_args["foreach"] is None
    assert spec.lr_scheduler == ClassRef(
        "torch.optim.lr_scheduler.StepLR", {"step_size": 2, "gamma": 0.1, "last_epoch": -1}, line=77
    )
    assert spec.ckpt_path is None
    t = spec.trainer
    assert t.callbacks == (ClassRef("tiny_model.PrintCallback", {"every": 2}, line=11),)
    assert (t.max_epochs, t.gradient_clip_val, t.logger) == (3, 0.5, False)
    # every other argument is null or Lightning's default, so the rest is as if absent
    assert t == TrainerFlags(max_epochs=3, gradient_clip_val=0.5, logger=False, callbacks=t.callbacks)
    assert notice_keys(spec) == []


def test_bare_class_paths_and_dict_kwargs(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """
        model:
          class_path: pkg.models.Net
          init_args: {hidden: 3}
          dict_kwargs: {extra: [1, {a: null}]}
        data: pkg.data.Data
        optimizer: torch.optim.Adam
        """,
    )
    assert spec.model.init_args == {"hidden": 3, "extra": [1, {"a": None}]}
    assert spec.data == ClassRef("pkg.data.Data", {}, line=6)
    assert spec.optimizer == ClassRef("torch.optim.Adam", {}, line=7)


def test_lr_scheduler_without_optimizer_is_ignored_as_lightning_cli_does(tmp_path: Path) -> None:
    spec = load(tmp_path, "model: pkg.Net\nlr_scheduler: torch.optim.lr_scheduler.StepLR\n")
    assert spec.lr_scheduler is None
    assert any(notice.startswith("lr_scheduler (line 2): ignored without `optimizer:`") for notice in spec.notices)


@pytest.mark.parametrize(("text", "seed"), [("42", 42), ("0", 0), ("false", False), ("true", True), ("null", True)])
def test_seed_everything(tmp_path: Path, text: str, seed: int | bool) -> None:
    value = load(tmp_path, f"model: pkg.Net\nseed_everything: {text}\n").seed_everything
    assert value == seed and type(value) is type(seed)


# --- the flag table


def test_trainer_flags_has_one_field_per_flag_with_its_default() -> None:
    assert [field.name for field in fields(TrainerFlags)] == [flag.name for flag in FLAGS]
    for field in fields(TrainerFlags):
        flag = FLAGS_BY_NAME[field.name]
        default = field.default if field.default_factory is MISSING else field.default_factory()
        assert same(flag.default, default), field.name


def test_every_lightning_trainer_argument_is_a_flag() -> None:
    pl = pytest.importorskip("pytorch_lightning")
    arguments = set(inspect.signature(pl.Trainer.__init__).parameters) - {"self"}
    assert arguments <= set(FLAGS_BY_NAME)
    seed_era = {"amp_backend", "amp_level", "track_grad_norm", "truncated_bptt_steps", "terminate_on_nan"}
    assert set(FLAGS_BY_NAME) == arguments | seed_era


@pytest.mark.parametrize(
    ("flags", "field", "value"),
    [
        ("accelerator: gpu", "accelerator", "cuda"),
        ("strategy: single_device", "strategy", "single_device"),
        ("strategy: Auto", "strategy", "auto"),
        ("devices: auto", "devices", 1),
        ("devices: '1'", "devices", 1),
        ("devices: [0]", "devices", 1),
        ("precision: 32-true", "precision", "32"),
        ("precision: '32'", "precision", "32"),
        ("fast_dev_run: true", "fast_dev_run", 1),
        ("fast_dev_run: 7", "fast_dev_run", 7),
        ("fast_dev_run: false", "fast_dev_run", 0),
        ("limit_train_batches: 0.25", "limit_train_batches", 0.25),
        ("limit_train_batches: 10", "limit_train_batches", 10),
        ("limit_train_batches: 10.0", "limit_train_batches", 10),  # Lightning makes it an int
        ("limit_val_batches: 0", "limit_val_batches", 0),
        ("overfit_batches: 2", "overfit_batches", 2),
        ("val_check_interval: 0.5", "val_check_interval", 0.5),
        ("val_check_interval: 100", "val_check_interval", 100),
        ("check_val_every_n_epoch: null", "check_val_every_n_epoch", None),
        ("check_val_every_n_epoch: 3", "check_val_every_n_epoch", 3),
        ("num_sanity_val_steps: -1", "num_sanity_val_steps", -1),
        ("max_epochs: -1", "max_epochs", -1),
        ("max_steps: 100", "max_steps", 100),
        ("min_steps: 5", "min_steps", 5),
        ("min_epochs: 2", "min_epochs", 2),
        ("gradient_clip_val: 1", "gradient_clip_val", 1.0),
        ("gradient_clip_val: 0", "gradient_clip_val", None),  # Lightning does not clip at <= 0
        ("gradient_clip_algorithm: Value", "gradient_clip_algorithm", "value"),
        ("log_every_n_steps: 1", "log_every_n_steps", 1),
        ("reload_dataloaders_every_n_epochs: 2", "reload_dataloaders_every_n_epochs", 2),
        ("deterministic: true", "deterministic", True),
        ("benchmark: false", "benchmark", False),
        ("default_root_dir: runs", "default_root_dir", "runs"),
        ("track_grad_norm: -1", "track_grad_norm", -1.0),
        ("amp_backend: native", "amp_backend", "native"),
        ("terminate_on_nan: false", "terminate_on_nan", False),
        ("logger: false", "logger", False),
    ],
)
def test_flag_values_are_normalised(tmp_path: Path, flags: str, field: str, value: object) -> None:
    got = getattr(trainer(tmp_path, flags), field)
    assert got == value and type(got) is type(value)


def test_accumulate_grad_batches_schedule(tmp_path: Path) -> None:
    assert trainer(tmp_path, "accumulate_grad_batches: 4").accumulate_grad_batches == 4
    # as Lightning's GradientAccumulationScheduler: sorted, factor 1 until the first epoch given
    assert trainer(tmp_path, "accumulate_grad_batches: {5: 3, 2: 2}").accumulate_grad_batches == {0: 1, 2: 2, 5: 3}
    assert trainer(tmp_path, "accumulate_grad_batches: {0: 2}").accumulate_grad_batches == {0: 2}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            "accumulate_grad_batches: {0: 0}",
            "trainer.accumulate_grad_batches.0 (line 3): accumulation factors must be integers >= 1, got 0",
        ),
        (
            "accumulate_grad_batches: {0: 1.5}",
            "trainer.accumulate_grad_batches.0 (line 3): accumulation factors must be integers >= 1, got 1.5",
        ),
        (
            "accumulate_grad_batches: {-1: 2}",
            "trainer.accumulate_grad_batches.-1 (line 3): epoch keys must be integers >= 0, got -1",
        ),
        (
            "accumulate_grad_batches: {a: 2}",
            "trainer.accumulate_grad_batches.a (line 3): epoch keys must be integers >= 0, got a (a string)",
        ),
        (
            "accumulate_grad_batches: {}",
            "trainer.accumulate_grad_batches (line 3): the {epoch: factor} mapping is empty",
        ),
        (
            "accumulate_grad_batches: 0",
            "trainer.accumulate_grad_batches (line 3): expected an integer >= 1 or a mapping",
        ),
        (
            "accumulate_grad_batches: true",
            "trainer.accumulate_grad_batches (line 3): expected an integer >= 1 or a mapping",
        ),
    ],
)
def test_accumulate_grad_batches_is_validated(tmp_path: Path, flags: str, message: str) -> None:
    assert trainer_problem(tmp_path, flags).startswith(message)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("max_epochs: '5'", "expected an integer >= -1 (-1: no limit), got 5 (a string)"),
        ("max_epochs: true", "expected an integer >= -1 (-1: no limit), got true (a boolean)"),
        ("max_epochs: 2.0", "expected an integer >= -1 (-1: no limit), got 2.0 (a float)"),
        ("max_steps: -2", "expected an integer >= -1 (-1: no limit), got -2 (an integer)"),
        ("min_epochs: -1", "expected an integer >= 0, got -1"),
        ("num_sanity_val_steps: -2", "expected an integer >= -1 (-1: all batches), got -2"),
        ("check_val_every_n_epoch: 0", "expected an integer >= 1, got 0"),
        ("log_every_n_steps: false", "expected an integer >= 0, got false (a boolean)"),
        ("reload_dataloaders_every_n_epochs: -1", "expected an integer >= 0, got -1"),
        ("fast_dev_run: -1", "expected true, false or an integer >= 0, got -1"),
        ("fast_dev_run: 0.5", "expected true, false or an integer >= 0, got 0.5"),
        (
            "limit_train_batches: 1.5",
            "expected a float in [0.0, 1.0] (a fraction) or an integer >= 0 (a count), got 1.5",
        ),
        ("limit_val_batches: -1", "expected a float in [0.0, 1.0] (a fraction) or an integer >= 0 (a count), got -1"),
        ("limit_train_batches: true", "got true (a boolean)"),
        ("overfit_batches: 1.5", "expected a float in [0.0, 1.0]"),
        ("val_check_interval: 0", "expected a float in (0.0, 1.0] (a fraction) or an integer >= 1 (a count), got 0"),
        ("val_check_interval: 1.5", "got 1.5 (a float)"),
        ("gradient_clip_val: 'big'", "expected a number, got big (a string)"),
        ("gradient_clip_val: true", "expected a number, got true (a boolean)"),
        ("gradient_clip_algorithm: l2", "expected one of norm, value, got l2 (a string)"),
        ("accelerator: cpuu", "got cpuu (a string) (did you mean 'cpu'?)"),
        ("strategy: ddpp", "(did you mean 'ddp'"),
        ("precision: 8", "expected one of 32, 64, 16-mixed, bf16-mixed"),
        ("precision: 16.0", "got 16.0 (a float)"),
        ("devices: 0", 'expected "auto", an integer >= 1, -1 (all devices), or a list of device indices, got 0'),
        ("devices: true", "got true (a boolean)"),
        ("devices: [0, 0]", "got a list"),
        ("devices: many", "got many (a string)"),
        ("num_nodes: 0", "expected an integer >= 1, got 0"),
        ("deterministic: maybe", "expected one of warn, got maybe"),
        ("benchmark: 1", "expected true or false, got 1 (an integer)"),
        ("enable_checkpointing: 'no'", "expected true or false, got no (a string)"),
        ("track_grad_norm: 0", 'expected -1 (off), a number > 0 or "inf", got 0'),
        ("truncated_bptt_steps: 0", "expected an integer >= 1, got 0"),
        ("amp_backend: nvidia", "expected one of native, apex, got nvidia"),
        ("amp_level: O5", "expected one of O0, O1, O2, O3, got O5"),
        ("logger: 3", "expected true, false, or logger entries with a class_path, got 3 (an integer)"),
        ("logger: cvs", "cvs is not one of Lightning's loggers (CSVLogger, TensorBoardLogger, MLFlowLogger,"),
        ("logger: CSVLoger", "(did you mean 'CSVLogger'?)"),
        ("logger: CSVLogger", "CSVLogger needs `save_dir` (the directory of its logs)"),
        ("profiler: fancy", "expected one of simple, advanced, pytorch, xla, got fancy"),
        ("default_root_dir: 3", "expected a string, got 3 (an integer)"),
        ("callbacks: 3", "expected a class path or a mapping with class_path and init_args, got 3"),
    ],
)
def test_wrong_values_name_the_key_and_line(tmp_path: Path, flags: str, message: str) -> None:
    key = flags.split(":")[0]
    text = trainer_problem(tmp_path, flags)
    assert text.startswith(f"trainer.{key} (line 3): ") and message in text, text


def test_logger_entries_are_read_as_lightningcli_writes_them(tmp_path: Path) -> None:
    flags = trainer(
        tmp_path,
        """
        logger:
          - {class_path: CSVLogger, init_args: {save_dir: logs}}
          - class_path: lightning.pytorch.loggers.csv_logs.CSVLogger
            init_args: {save_dir: runs, name: null, version: run-a, prefix: fit}
        """,
    )
    csv_logger = "pytorch_lightning.loggers.CSVLogger"
    defaults = {"name": "lightning_logs", "version": None, "prefix": "", "flush_logs_every_n_steps": 100}
    assert [(ref.class_path, ref.init_args) for ref in flags.logger] == [
        (csv_logger, {"save_dir": "logs", **defaults}),
        (csv_logger, {**defaults, "save_dir": "runs", "name": None, "version": "run-a", "prefix": "fit"}),
    ]
    assert trainer(tmp_path, "logger: []").logger is False  # no loggers, as in Lightning
    assert trainer(tmp_path, "logger: null").logger is True  # Lightning's default


def test_tensorboard_mlflow_and_wandb_entries_get_lightnings_defaults(tmp_path: Path) -> None:
    flags = trainer(
        tmp_path,
        """
        logger:
          - {class_path: lightning.pytorch.loggers.TensorBoardLogger, init_args: {save_dir: tb, log_graph: true}}
          - class_path: pytorch_lightning.loggers.mlflow.MLFlowLogger
            init_args: {tracking_uri: "file:./runs", run_name: fit, tags: {team: a, attempt: 2}}
          - {class_path: WandbLogger, init_args: {project: p, offline: true, log_model: false}}
        """,
    )
    tensorboard, mlflow, wandb = flags.logger
    assert [ref.class_path.rpartition(".")[2] for ref in flags.logger] == [
        "TensorBoardLogger",
        "MLFlowLogger",
        "WandbLogger",
    ]
    assert tensorboard.init_args == {"save_dir": "tb", "name": "lightning_logs", "version": None, "log_graph": True,
                                     "default_hp_metric": True, "prefix": "", "sub_dir": None}  # fmt: skip
    assert mlflow.init_args == {
        "experiment_name": "lightning_logs",
        "run_name": "fit",
        "tracking_uri": "file:./runs",
        "tags": {"team": "a", "attempt": 2},
        "save_dir": "./mlruns",
        "log_model": False,
        "prefix": "",
        "artifact_location": None,
        "run_id": None,
        "synchronous": None,
    }
    assert wandb.init_args["project"] == "p" and wandb.init_args["offline"] is True
    assert wandb.init_args["save_dir"] == "." and wandb.init_args["name"] is None and wandb.init_args["prefix"] == ""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("logger: [false]", "trainer.logger[0] (line 3): expected true, false, or logger entries with a class_path,"),
        (
            "logger: {class_path: CSVLogger, init_args: {save_dir: logs, flush_every: 3}}",
            (
                "trainer.logger.init_args.flush_every (line 3): unknown argument of CSVLogger"
                " (did you mean 'flush_logs_every_n_steps'?)"
            ),
        ),
        (
            "logger: {class_path: CSVLogger, init_args: {save_dir: logs, version: -1}}",
            "trainer.logger.init_args.version (line 3): expected an integer >= 0 or a string, got -1",
        ),
        (
            "logger: {class_path: my.loggers.Logger}",
            (
                "trainer.logger (line 3): Logger is not supported by loopgen (a logger class is called by Lightning's"
                " Trainer, which the script does not have: it writes the logs of Lightning's own loggers itself); use"
                " CSVLogger, TensorBoardLogger, MLFlowLogger or WandbLogger, or write your logs from a callback class"
                " of your own"
            ),
        ),
        ("logger: TensorBoardLogger", "trainer.logger (line 3): TensorBoardLogger needs `save_dir`"),
        (
            "logger: {class_path: TensorBoardLogger, init_args: {save_dir: logs, sub_dir: events}}",
            (
                "trainer.logger.init_args.sub_dir (line 3): TensorBoardLogger(sub_dir=events) is not supported by"
                " loopgen (the script writes the event files into version_N itself); leave it null"
            ),
        ),
        (
            "logger: {class_path: TensorBoardLogger, init_args: {save_dir: logs, flush_secs: 5}}",
            "trainer.logger.init_args.flush_secs (line 3): unknown argument of TensorBoardLogger",
        ),
        (
            "logger: {class_path: MLFlowLogger, init_args: {log_model: true}}",
            (
                "trainer.logger.init_args.log_model (line 3): MLFlowLogger(log_model=true) is not supported by"
                " loopgen (the script does not upload the checkpoints as MLflow artifacts after saving them); keep"
                " `log_model: false`"
            ),
        ),
        (
            "logger: {class_path: MLFlowLogger, init_args: {run_id: 0a1b}}",
            (
                "trainer.logger.init_args.run_id (line 3): MLFlowLogger(run_id=0a1b) is not supported by loopgen (the"
                " script starts a new MLflow run"
            ),
        ),
        (
            "logger: {class_path: MLFlowLogger, init_args: {tags: {team: [a]}}}",
            "trainer.logger.init_args.tags.team (line 3): expected a string, a number or a boolean, got a list",
        ),
        (
            "logger: {class_path: MLFlowLogger, init_args: {tags: [a]}}",
            "trainer.logger.init_args.tags (line 3): expected a mapping of tag names to values, got a list",
        ),
        (
            "logger: {class_path: WandbLogger, init_args: {log_model: all}}",
            (
                "trainer.logger.init_args.log_model (line 3): WandbLogger(log_model=all) is not supported by"
                " loopgen (the script does not upload the checkpoints as W&B artifacts after saving them)"
            ),
        ),
        (
            "logger: {class_path: WandbLogger, init_args: {version: abc123}}",
            (
                "trainer.logger.init_args.version (line 3): WandbLogger(version=abc123) is not supported by loopgen (the"
                " script starts a new W&B run"
            ),
        ),
        (
            "logger: {class_path: WandbLogger, init_args: {entity: me}}",
            "trainer.logger.init_args.entity (line 3): unknown argument of WandbLogger",
        ),
    ],
)
def test_wrong_logger_entries_are_refused(tmp_path: Path, flags: str, message: str) -> None:
    assert trainer_problem(tmp_path, flags).startswith(message)


def test_profiler_names_and_entries_are_read_as_lightningcli_writes_them(tmp_path: Path) -> None:
    simple = trainer(tmp_path, "profiler: Simple").profiler  # Lightning lower-cases the name
    assert simple.class_path == "pytorch_lightning.profilers.SimpleProfiler"
    assert simple.init_args == {"dirpath": None, "filename": None, "extended": True}
    advanced = trainer(
        tmp_path,
        """
        profiler:
          class_path: lightning.pytorch.profilers.advanced.AdvancedProfiler
          init_args: {filename: perf, line_count_restriction: 10}
        """,
    ).profiler
    assert advanced.class_path == "pytorch_lightning.profilers.AdvancedProfiler"
    assert advanced.init_args == {
        "dirpath": None,
        "filename": "perf",
        "line_count_restriction": 10,
        "dump_stats": False,
    }
    pytorch = trainer(
        tmp_path, "profiler: {class_path: PyTorchProfiler, dict_kwargs: {record_shapes: true}}"
    ).profiler  # LightningCLI puts torch.profiler's own arguments in dict_kwargs
    assert pytorch.init_args["record_shapes"] is True and pytorch.init_args["row_limit"] == 20
    assert trainer(tmp_path, "profiler: null").profiler is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ("profiler: 3", "trainer.profiler (line 3): expected a profiler name (simple, advanced, pytorch, xla) or a"),
        (
            "profiler: {class_path: XLAProfiler}",
            (
                "trainer.profiler (line 3): XLAProfiler is not supported by loopgen (it profiles XLA devices through"
                " torch_xla's profiler server, which the script does not start); use simple, advanced or pytorch"
            ),
        ),
        (
            "profiler: {class_path: my.profilers.Timer}",
            (
                "trainer.profiler (line 3): Timer is not supported by loopgen (a profiler class is called by Lightning's"
                " Trainer around each action"
            ),
        ),
        (
            "profiler: {class_path: SimpleProfiler, init_args: {extend: false}}",
            "trainer.profiler.init_args.extend (line 3): unknown argument of SimpleProfiler (did you mean 'extended'?)",
        ),
        (
            "profiler: {class_path: AdvancedProfiler, init_args: {line_count_restriction: 1.5}}",
            "trainer.profiler.init_args.line_count_restriction (line 3): expected an integer >= 0 (a count) or a",
        ),
        (
            "profiler: {class_path: PyTorchProfiler, init_args: {emit_nvtx: true}}",
            (
                "trainer.profiler.init_args.emit_nvtx (line 3): PyTorchProfiler(emit_nvtx=true) is not supported by"
                " loopgen (the script does not run under torch.autograd.profiler.emit_nvtx"
            ),
        ),
        (
            "profiler: {class_path: PyTorchProfiler, init_args: {sort_by_key: wall}}",
            "trainer.profiler.init_args.sort_by_key (line 3): expected one of cpu_time, cuda_time,",
        ),
        (
            "callbacks: [{class_path: ModelSummary, init_args: {max_depth: -2}}]",
            "trainer.callbacks[0].init_args.max_depth (line 3): expected an integer >= -1 (-1: every level, 0: no",
        ),
        (
            "callbacks: [{class_path: pytorch_lightning.callbacks.RichModelSummary, init_args: {depth: 2}}]",
            "trainer.callbacks[0].init_args.depth (line 3): unknown argument of RichModelSummary (did you mean",
        ),
    ],
)
def test_wrong_profiler_and_summary_entries_are_refused(tmp_path: Path, flags: str, message: str) -> None:
    assert trainer_problem(tmp_path, flags).startswith(message)


def test_check_val_every_n_epoch_null_is_kept(tmp_path: Path) -> None:
    # null is a value of its own (count batches across epochs); its rule with a fractional
    # val_check_interval is the plan stage's (tests/test_plan.py)
    flags = trainer(tmp_path, "check_val_every_n_epoch: null\nval_check_interval: 50")
    assert flags.check_val_every_n_epoch is None and flags.val_check_interval == 50


# --- what loopgen implements


def test_accelerator_tpu_is_implemented(tmp_path: Path) -> None:
    # the contract's last planned value; the plan refuses what TPU cannot serve (tests/test_xla.py)
    assert trainer(tmp_path, "accelerator: tpu").accelerator == "tpu"


@pytest.mark.parametrize(
    ("flags", "shown"),
    [
        ("accelerator: mps", "mps"),
        ("strategy: deepspeed_stage_2", "deepspeed_stage_2"),
        ("devices: -1", "-1"),
        ("devices: [1]", "[1]"),
        ("precision: transformer-engine", "transformer-engine"),
        ("profiler: xla", "xla"),
        ("deterministic: warn", "warn"),
        ("val_check_interval: '00:00:10:00'", "00:00:10:00"),
    ],
)
def test_lightning_values_outside_the_contract_are_refused(tmp_path: Path, flags: str, shown: str) -> None:
    key = flags.split(":")[0]
    assert trainer_problem(tmp_path, flags).startswith(f"trainer.{key} (line 3): {shown} is not supported by loopgen")


@pytest.mark.parametrize(
    ("flags", "shown", "instead"),
    [
        ("model_registry: hub", "hub", "leave it null"),
    ],
)
def test_lightning_arguments_outside_the_contract_only_at_their_default(
    tmp_path: Path, flags: str, shown: str, instead: str
) -> None:
    key = flags.split(":")[0]
    found = trainer_problem(tmp_path, flags)
    assert found.startswith(f"trainer.{key} (line 3): {shown} is not supported by loopgen ("), found
    assert f"); {instead}" in found, found


def test_lightning_arguments_outside_the_contract_accepted_at_default_or_null(tmp_path: Path) -> None:
    flags = """
        sync_batchnorm: false
        inference_mode: true
        limit_test_batches: 1.0
        enable_model_summary: null
        max_time: null
        plugins: null
        logger: false
        enable_checkpointing: false
        enable_progress_bar: false
    """
    spec = load(tmp_path, "model: pkg.Net\ntrainer:" + textwrap.indent(textwrap.dedent(flags), "  "))
    assert spec.trainer == TrainerFlags(logger=False, enable_checkpointing=False, enable_progress_bar=False)
    assert spec.notices == ()


# --- callbacks


def test_callbacks(tmp_path: Path) -> None:
    t = trainer(
        tmp_path,
        """
        callbacks:
          - pkg.callbacks.Printer
          - class_path: pkg.callbacks.EarlyStopping  # the user's own class of that name
            init_args: {patience: 2}
        """,
    )
    assert t.callbacks == (
        ClassRef("pkg.callbacks.Printer", {}, line=5),
        ClassRef("pkg.callbacks.EarlyStopping", {"patience": 2}, line=6),
    )
    single = trainer(tmp_path, "callbacks: {class_path: pkg.callbacks.Printer}")
    assert single.callbacks == (ClassRef("pkg.callbacks.Printer", {}, line=3),)


@pytest.mark.parametrize(
    "class_path",
    [
        "ModelCheckpoint",
        "EarlyStopping",
        "pytorch_lightning.callbacks.ModelCheckpoint",
        "lightning.pytorch.callbacks.EarlyStopping",
        "pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint",
        "lightning.pytorch.callbacks.early_stopping.EarlyStopping",
    ],
)
def test_lightning_callbacks_in_every_spelling(tmp_path: Path, class_path: str) -> None:
    name = class_path.rpartition(".")[2]
    flags = trainer(tmp_path, f"callbacks:\n  - class_path: {class_path}\n    init_args: {{monitor: val_loss}}")
    (ref,) = flags.callbacks
    assert ref.class_path == f"pytorch_lightning.callbacks.{name}"
    assert ref.init_args["monitor"] == "val_loss" and ref.init_args["mode"] == "min"  # every argument, defaulted


@pytest.mark.parametrize(
    "entry, expected",
    [
        (
            "{class_path: ModelCheckpoint, init_args: {monitr: val_loss}}",
            "trainer.callbacks[0].init_args.monitr (line 4): unknown argument of ModelCheckpoint (did you mean 'monitor'?)",
        ),
        (
            "{class_path: ModelCheckpoint, init_args: {save_top_k: -2}}",
            "trainer.callbacks[0].init_args.save_top_k (line 4): expected an integer >= -1 (-1: all, 0: none), got -2",
        ),
        (
            "{class_path: ModelCheckpoint, init_args: {save_last: always}}",
            'trainer.callbacks[0].init_args.save_last (line 4): expected true, false or "link", got always (a string)',
        ),
        (
            "{class_path: ModelCheckpoint, init_args: {train_time_interval: soon}}",
            "trainer.callbacks[0].init_args.train_time_interval (line 4): expected a number of seconds",
        ),
        (
            "{class_path: ModelCheckpoint, init_args: {save_on_exception: sometimes}}",
            "trainer.callbacks[0].init_args.save_on_exception (line 4): expected true or false, got sometimes",
        ),
        (
            "{class_path: LearningRateMonitor, init_args: {logging_interval: batch}}",
            "trainer.callbacks[0].init_args.logging_interval (line 4): expected one of step, epoch, got batch",
        ),
        (
            "{class_path: LearningRateMonitor, init_args: {log_momentm: true}}",
            "trainer.callbacks[0].init_args.log_momentm (line 4): unknown argument of LearningRateMonitor (did you",
        ),
        (
            "{class_path: EarlyStopping, init_args: {monitor: val_loss, mode: maximum}}",
            "trainer.callbacks[0].init_args.mode (line 4): expected one of min, max, got maximum (a string)",
        ),
    ],
)
def test_lightning_callback_arguments_are_checked(tmp_path: Path, entry: str, expected: str) -> None:
    assert trainer_problem(tmp_path, f"callbacks:\n  - {entry}").startswith(expected)


@pytest.mark.parametrize(
    "interval, seconds",
    [(90, 90.0), ("00:01:30", 90.0), ("1:00:00:00", 86400.0), ({"hours": 1, "minutes": 30}, 5400.0)],
)
def test_train_time_interval_forms(tmp_path: Path, interval, seconds: float) -> None:
    text = (
        f"callbacks:\n  - class_path: ModelCheckpoint\n    init_args: {{train_time_interval: {json.dumps(interval)}}}"
    )
    (ref,) = trainer(tmp_path, text).callbacks
    assert ref.init_args["train_time_interval"] == seconds


@pytest.mark.parametrize(
    "class_path",
    [
        "TQDMProgressBar",
        "pytorch_lightning.callbacks.TQDMProgressBar",
        "pytorch_lightning.callbacks.progress.TQDMProgressBar",
        "lightning.pytorch.callbacks.progress.tqdm_progress.TQDMProgressBar",
        "RichProgressBar",
        "lightning.pytorch.callbacks.progress.rich_progress.RichProgressBar",
    ],
)
def test_progress_bar_callbacks_in_every_spelling(tmp_path: Path, class_path: str) -> None:
    name = class_path.rpartition(".")[2]
    (ref,) = trainer(tmp_path, f"callbacks: [{class_path}]").callbacks
    assert ref.class_path == f"pytorch_lightning.callbacks.{name}"
    assert ref.init_args["refresh_rate"] == (1 if name == "TQDMProgressBar" else 100)  # Lightning's defaults
    assert ref.init_args["leave"] is False


@pytest.mark.parametrize(
    "entry, expected",
    [
        (
            "{class_path: TQDMProgressBar, init_args: {refresh_rate: -1}}",
            "trainer.callbacks[0].init_args.refresh_rate (line 4): expected an integer >= 0 (0: no bar), got -1",
        ),
        (
            "{class_path: TQDMProgressBar, init_args: {refresh: 5}}",
            "trainer.callbacks[0].init_args.refresh (line 4): unknown argument of TQDMProgressBar",
        ),
        (
            "{class_path: RichProgressBar, init_args: {theme: {class_path: RichProgressBarTheme}}}",
            "trainer.callbacks[0].init_args.theme (line 4): RichProgressBar(theme=",
        ),
    ],
)
def test_progress_bar_arguments_are_checked(tmp_path: Path, entry: str, expected: str) -> None:
    assert trainer_problem(tmp_path, f"callbacks:\n  - {entry}").startswith(expected)


def test_seed_progress_bar_refresh_rate_is_the_bars_refresh_rate(tmp_path: Path) -> None:
    spec = load(tmp_path, "model: pkg.Net\ntrainer:\n  progress_bar_refresh_rate: 20\n")
    assert spec.trainer.enable_progress_bar is True and spec.progress_bar_refresh_rate == 20
    (notice,) = spec.notices
    assert notice == (
        "trainer.progress_bar_refresh_rate (line 3): seed-era spelling, read as `enable_progress_bar: true`, the bar"
        " redrawn every 20 batches"
    )
    off = load(tmp_path, "model: pkg.Net\ntrainer:\n  progress_bar_refresh_rate: 0\n")
    assert off.trainer.enable_progress_bar is False and off.progress_bar_refresh_rate is None
    assert trainer_problem(tmp_path, "progress_bar_refresh_rate: 5\nenable_progress_bar: false") == (
        "trainer.progress_bar_refresh_rate (line 3): means enable_progress_bar: true, which conflicts with"
        " trainer.enable_progress_bar: false"
    )


@pytest.mark.parametrize(
    "spelled",
    [
        "LearningRateFinder",  # as LightningCLI takes it: not "needs its module"
        "pytorch_lightning.callbacks.LearningRateFinder",
        "lightning.pytorch.callbacks.lr_finder.LearningRateFinder",
    ],
)
def test_lightnings_other_callbacks_are_refused_with_their_reason(tmp_path: Path, spelled: str) -> None:
    text = trainer_problem(tmp_path, f"callbacks: [{spelled}]")
    assert text == (
        "trainer.callbacks[0] (line 3): LearningRateFinder is not supported by loopgen (its search trains the module"
        " for up to num_training_steps steps before fit, restores the weights, and sets the learning rate it picked;"
        " the script trains once, with the learning rate the spec gives); find the rate once with Lightning's"
        " `Tuner(trainer).lr_find(model)` and write it in model.init_args"
    )


def test_a_name_lightning_does_not_have_is_refused_with_what_is_served(tmp_path: Path) -> None:
    text = trainer_problem(tmp_path, "callbacks: [pytorch_lightning.callbacks.Swa]")
    assert text.startswith("trainer.callbacks[0] (line 3): Swa is not supported by loopgen (")
    assert text.endswith(
        "; use ModelCheckpoint, EarlyStopping, LearningRateMonitor, ModelSummary, RichModelSummary, Timer,"
        " BackboneFinetuning, WeightAveraging, EMAWeightAveraging, DeviceStatsMonitor, ThroughputMonitor, ModelPruning,"
        " SpikeDetection, StochasticWeightAveraging, OnExceptionCheckpoint, TQDMProgressBar, RichProgressBar, or a"
        " callback class of your own with the same hooks"
    )


def test_every_callback_lightning_exports_is_served_or_refused_by_name() -> None:
    callbacks = pytest.importorskip("pytorch_lightning.callbacks")
    from loopgen.spec.support import LIGHTNING_CALLBACKS, OTHER_LIGHTNING_CALLBACKS

    served = {*LIGHTNING_CALLBACKS, "GradientAccumulationScheduler"}
    assert set(callbacks.__all__) <= served | set(OTHER_LIGHTNING_CALLBACKS)
    assert not served & set(OTHER_LIGHTNING_CALLBACKS)
    # the names Lightning 1.9.5 exports and 2.x does not
    only_1_9_5 = {"QuantizationAwareTraining", "ProgressBarBase"}
    assert set(OTHER_LIGHTNING_CALLBACKS) - set(callbacks.__all__) == only_1_9_5


# --- seed-era spellings


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("'00:01:00:00'", 3600.0),
        ("' 2:00:00:30 '", 172830.0),  # Lightning strips the string
        ("{hours: 1, minutes: 30}", 5400.0),
        ("{days: 1, milliseconds: 500}", 86400.5),
    ],
)
def test_max_time_and_timer_durations_are_lightnings(tmp_path: Path, given: str, seconds: float) -> None:
    spec = load(tmp_path, f"model: pkg.Net\ntrainer:\n  max_time: {given}\n")
    assert spec.trainer.max_time == seconds
    entry = f"model: pkg.Net\ntrainer:\n  callbacks:\n  - class_path: Timer\n    init_args: {{duration: {given}}}\n"
    assert load(tmp_path, entry).trainer.callbacks[0].init_args["duration"] == seconds


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("'01:00:00'", 'expected "DD:HH:MM:SS"'),  # Lightning's pattern has four fields
        ("'1:0:0:0'", 'expected "DD:HH:MM:SS"'),  # ... two digits each but the days
        ("3600", 'expected "DD:HH:MM:SS"'),
        ("{hour: 1}", "unknown timedelta argument (did you mean 'hours'?)"),
        ("{hours: -1}", "expected a number >= 0"),
    ],
)
def test_durations_lightning_would_not_take_are_errors(tmp_path: Path, given: str, problem: str) -> None:
    assert problem in trainer_problem(tmp_path, f"max_time: {given}")


def test_seed_era_spellings_become_modern_flags_with_a_notice(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """
        model: pkg.Net
        trainer:
          gpus: 1
          row_log_interval: 10
          reload_dataloaders_every_epoch: true
          progress_bar_refresh_rate: 0
          early_stop_callback: false
          distributed_backend: null
        """,
    )
    t = spec.trainer
    assert (t.accelerator, t.devices, t.log_every_n_steps) == ("cuda", 1, 10)
    assert (t.reload_dataloaders_every_n_epochs, t.enable_progress_bar, t.callbacks) == (1, False, ())
    assert [notice for notice in spec.notices if not notice.startswith(("trainer.logger", "trainer.enable_"))] == [
        "trainer.gpus (line 4): seed-era spelling, read as `accelerator: cuda`, `devices: 1`",
        "trainer.row_log_interval (line 5): seed-era spelling, read as `log_every_n_steps: 10`",
        (
            "trainer.reload_dataloaders_every_epoch (line 6): seed-era spelling, read as "
            "`reload_dataloaders_every_n_epochs: 1`"
        ),
        "trainer.progress_bar_refresh_rate (line 7): seed-era spelling, read as `enable_progress_bar: false`",
        "trainer.early_stop_callback (line 8): seed-era flag with no effect here; remove it",
    ]


def test_gpus_zero_means_cpu(tmp_path: Path) -> None:
    assert trainer(tmp_path, "gpus: 0").accelerator == "cpu"


def test_seed_era_spellings_of_devices_and_strategies(tmp_path: Path) -> None:
    assert trainer(tmp_path, "distributed_backend: dp").strategy == "dp"  # the plan checks dp (tests/test_dp.py)
    gpus = trainer(tmp_path, "gpus: 2")  # the plan refuses 2 devices without strategy ddp (tests/test_ddp.py)
    assert (gpus.accelerator, gpus.devices) == ("cuda", 2)
    assert trainer(tmp_path, "distributed_backend: ddp").strategy == "ddp"
    (early_stopping,) = trainer(tmp_path, "early_stop_callback: true").callbacks  # the seed's default monitor
    assert early_stopping.name == "EarlyStopping" and early_stopping.init_args["monitor"] == "val_loss"


def test_seed_era_precision_16(tmp_path: Path) -> None:
    spec = load(tmp_path, "model: pkg.Net\ntrainer:\n  precision: 16\n")
    assert spec.trainer.precision == "16-mixed"
    assert any(notice.startswith("trainer.precision") for notice in spec.notices)
    spec = load(tmp_path, "model: pkg.Net\ntrainer:\n  precision: 32\n")
    assert not any(notice.startswith("trainer.precision") for notice in spec.notices)


def test_seed_era_precision_notice() -> None:
    precision = FLAGS_BY_NAME["precision"]
    assert precision.parse(16) == "16-mixed" and precision.parse("bf16") == "bf16-mixed"
    assert precision.notice is not None
    assert precision.notice(16) == "16 is a seed-era spelling, read as `precision: 16-mixed`"
    assert precision.notice("bf16") == "bf16 is a seed-era spelling, read as `precision: bf16-mixed`"
    assert precision.notice("32-true") is None and precision.notice(64) is None


def test_true_half_precisions_are_implemented(tmp_path: Path) -> None:
    assert trainer(tmp_path, "precision: bf16-true").precision == "bf16-true"
    assert trainer(tmp_path, "precision: 16-true").precision == "16-true"


@pytest.mark.parametrize(
    ("value", "instead"),
    [
        ("transformer-engine", "use bf16-mixed, or bf16-true"),
        ("transformer-engine-float16", "use 16-mixed, or 16-true"),
    ],
)
def test_transformer_engine_is_refused_saying_what_to_use(tmp_path: Path, value: str, instead: str) -> None:
    message = trainer_problem(tmp_path, f"precision: {value}")
    assert message.startswith(f"trainer.precision (line 3): {value} is not supported by loopgen (NVIDIA's Transformer")
    assert "FP8" in message and instead in message


def test_seed_era_spelling_conflicting_with_the_modern_flag(tmp_path: Path) -> None:
    assert trainer_problem(tmp_path, "accelerator: cpu\ngpus: 1") == (
        "trainer.gpus (line 4): means accelerator: cuda, which conflicts with trainer.accelerator: cpu"
    )
    assert trainer(tmp_path, "log_every_n_steps: 10\nrow_log_interval: 10").log_every_n_steps == 10


def test_seed_era_spellings_are_validated(tmp_path: Path) -> None:
    assert trainer_problem(tmp_path, "reload_dataloaders_every_epoch: 2").startswith(
        "trainer.reload_dataloaders_every_epoch (line 3): expected true or false, got 2"
    )
    assert trainer_problem(tmp_path, "gpus: true").startswith("trainer.gpus (line 3): expected a number of GPUs")
    assert trainer_problem(tmp_path, "row_log_interval: -5").startswith(
        "trainer.row_log_interval (line 3): expected an integer >= 0, got -5"
    )


# --- unknown keys, did you mean


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "model: pkg.Net\ntrainr: {}\n",
            "trainr (line 2): unknown key: not a LightningCLI `fit` key nor `loop` (did you mean 'trainer'?)",
        ),
        (
            "model: pkg.Net\ntrainer:\n  max_epoch: 3\n",
            "trainer.max_epoch (line 3): unknown key: not a Lightning 2.x Trainer argument (did you mean 'max_epochs'",
        ),
        (
            "model: pkg.Net\ntrainer:\n  resume_from_checkpoint: x.ckpt\n",
            "trainer.resume_from_checkpoint (line 3): unknown key: not a Lightning 2.x Trainer argument",
        ),
        (
            "model:\n  class_path: pkg.Net\n  init_arg: {}\n",
            "model.init_arg (line 3): unknown key: a class entry has class_path, init_args and dict_kwargs (did you mean 'init_args'",
        ),
        (
            "model: pkg.Net\nloop:\n  optimizer_frequency: [1]\n",
            "loop.optimizer_frequency (line 3): unknown key: not a loopgen loop setting (did you mean 'optimizer_frequencies'?)",
        ),
        (
            "fit:\n  model: pkg.Net\nmodel: pkg.Net\n",
            "fit (line 1): unknown key: this is a LightningCLI main config; use the contents of its `fit:` section as the spec",
        ),
    ],
)
def test_unknown_keys(tmp_path: Path, text: str, message: str) -> None:
    assert problem(tmp_path, text).startswith(message)


# --- other problems with the spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("trainer: {}\n", "model: required: the model's class path"),
        ("model: null\n", "model (line 1): required: the model's class path"),
        (
            "model: 3\n",
            "model (line 1): expected a class path or a mapping with class_path and init_args, got 3 (an integer)",
        ),
        ("model: Net\n", "model (line 1): 'Net' needs its module: write module.Net"),
        (
            "model: pkg.my-models.Net\n",
            "model (line 1): 'pkg.my-models.Net' is not a dotted Python path (module.Class)",
        ),
        (
            "model: {init_args: {a: 1}}\n",
            "model (line 1): missing class_path (LightningCLI configs must come from subclass mode",
        ),
        ("model: {class_path: [pkg.Net]}\n", "model.class_path (line 1): expected a dotted class path, got a list"),
        (
            "model: {class_path: pkg.Net, init_args: [1]}\n",
            "model.init_args (line 1): expected a mapping of argument names to values, got a list",
        ),
        (
            "model:\n  class_path: pkg.Net\n  init_args:\n    day: !!binary aGVsbG8=\n",
            "model.init_args.day (line 4): only plain YAML data",
        ),
        (
            "model:\n  class_path: pkg.Net\n  init_args:\n    class: 1\n",
            "model.init_args.class (line 4): argument names must be Python identifiers",
        ),
        (
            "model:\n  class_path: pkg.Net\n  init_args: {a: 1}\n  dict_kwargs: {a: 2}\n",
            "model.dict_kwargs.a (line 4): also given in init_args",
        ),
        ("model: pkg.Net\nseed_everything: '42'\n", "seed_everything (line 2): expected an integer in [0, 4294967295]"),
        ("model: pkg.Net\nseed_everything: -1\n", "seed_everything (line 2): expected an integer in [0, 4294967295]"),
        ("model: pkg.Net\ntrainer: [1]\n", "trainer (line 2): expected a mapping, got a list"),
        ("model: pkg.Net\nckpt_path: 3\n", "ckpt_path (line 2): expected a checkpoint path or null, got 3"),
        ("model: pkg.Net\nweights_only: 'yes'\n", "weights_only (line 2): expected true, false or null, got yes"),
        (
            "model: pkg.Net\nloop:\n  optimizer_frequencies: []\n",
            "loop.optimizer_frequencies (line 3): expected a non-empty list of positive integers",
        ),
        (
            "model: pkg.Net\nloop:\n  optimizer_frequencies: [1, 0]\n",
            "loop.optimizer_frequencies[1] (line 3): expected a positive integer, got 0",
        ),
    ],
)
def test_spec_problems(tmp_path: Path, text: str, message: str) -> None:
    assert problem(tmp_path, text).startswith(message)


def test_all_problems_in_one_error_in_line_order(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """
        model: Net
        trainer:
          max_epochs: x
          callbacks:
            - class_path: pkg.cb.A
              init_args:
                when: !!binary aGVsbG8=
          model_registry: hub
        optimizer: {init_args: {}}
        """,
    )
    assert [p.split(":")[0] for p in found] == [
        "model (line 2)",
        "trainer.max_epochs (line 4)",
        "trainer.callbacks[0].init_args.when (line 8)",
        "trainer.model_registry (line 9)",
        "optimizer (line 10)",
    ]


def test_ckpt_path_and_weights_only(tmp_path: Path) -> None:
    spec = load(tmp_path, "model: pkg.Net\nckpt_path: runs/last.ckpt\nweights_only: true\n")
    assert (spec.ckpt_path, spec.weights_only) == ("runs/last.ckpt", True)
    assert load(tmp_path, "model: pkg.Net\nweights_only: false\n").weights_only is False
    assert load(tmp_path, "model: pkg.Net\nweights_only: null\n").weights_only is None


# --- the file and its YAML


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LoopgenError) as excinfo:
        load_spec(tmp_path / "nope.yaml")
    assert str(excinfo.value) == f"{tmp_path / 'nope.yaml'}: no such file"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the spec is empty"),
        ("# only a comment\n", "the spec is empty"),
        ("- model\n", "expected a mapping of top-level keys (model, trainer, ...), got a list"),
        ("model pkg.Net\n", "expected a mapping of top-level keys (model, trainer, ...), got model pkg.Net (a string)"),
    ],
)
def test_empty_or_not_a_mapping(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    assert problem(tmp_path, text) == f"{path}: {message}"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("model: pkg.Net\ntrainer:\n  max_epochs: [1\n", 4),
        ("model: pkg.Net\ntrainer:\n\tmax_epochs: 1\n", 3),
        ("model: pkg.Net\n  x: 1\n", 2),
        ("model: pkg.Net\n---\nmodel: pkg.Other\n", 2),
        ("model: !!python/name:os.system\n", 1),
    ],
)
def test_yaml_errors_have_a_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path, text)
    assert problem(tmp_path, text).startswith(f"{path} (line {line}): invalid YAML: ")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(b"model: pkg.\xff\n")
    with pytest.raises(LoopgenError, match="not UTF-8 text"):
        load_spec(path)


def test_duplicate_keys(tmp_path: Path) -> None:
    assert problem(tmp_path, "model: pkg.Net\ntrainer:\n  max_epochs: 1\n  max_epochs: 2\n") == (
        "trainer.max_epochs (line 4): duplicate key (first on line 3)"
    )


def test_anchors_and_merge_keys(tmp_path: Path) -> None:
    spec = load(
        tmp_path,
        """
        model: pkg.Net
        trainer:
          <<: &base {max_epochs: 2, min_epochs: 1}
          max_epochs: 3
        optimizer:
          class_path: torch.optim.SGD
          init_args: &lr {lr: 0.1}
        lr_scheduler:
          class_path: torch.optim.lr_scheduler.StepLR
          init_args: {step_size: 1}
        """,
    )
    assert (spec.trainer.max_epochs, spec.trainer.min_epochs) == (3, 1)
    assert spec.optimizer is not None and spec.optimizer.init_args == {"lr": 0.1}
    text = problem(tmp_path, "model: pkg.Net\ntrainer:\n  <<: {max_epochs: x}\n")
    assert text.startswith("trainer.max_epochs (line 3): expected an integer")


def test_loading_imports_neither_torch_nor_lightning() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from loopgen.spec.schema import spec_schema; from loopgen.spec.load import load_spec; "
        f"load_spec(Path({str(PRINT_CONFIG)!r})); spec_schema(); "
        "print([m for m in ('torch', 'pytorch_lightning', 'lightning', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- JSON Schema


def _example_specs() -> list[Path]:
    return sorted({*REPO.glob("examples/**/*.yaml"), *REPO.glob("examples/**/*.yml"), PRINT_CONFIG})


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = spec_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["properties"]["trainer"]["properties"]) == set(TRAINER_KEYS)
    for flag in FLAGS:
        assert schema["properties"]["trainer"]["properties"][flag.name]["description"] == flag.doc


@pytest.mark.parametrize("path", _example_specs(), ids=lambda path: str(path.relative_to(REPO)))
def test_schema_accepts_example_specs(path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(yaml.safe_load(path.read_text()), spec_schema(), cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize(
    "document",
    [
        {"trainer": {}},
        {"model": "pkg.Net", "trainr": {}},
        {"model": "pkg.Net", "trainer": {"max_epoch": 3}},
        {"model": "pkg.Net", "trainer": {"max_epochs": "3"}},
        {"model": "pkg.Net", "trainer": {"model_registry": "hub"}},
        {"model": {"class_path": "pkg.Net", "init_arg": {}}},
        {"model": "pkg.Net", "loop": {"optimizer_frequencies": [0]}},
    ],
)
def test_schema_rejects_bad_specs(document: dict[str, object]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(spec_schema())
    assert not validator.is_valid(document)


def test_schema_structure_without_a_validator() -> None:
    schema = json.loads(json.dumps(spec_schema()))  # plain JSON, as `loopgen schema` prints it
    refs = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            refs.extend([node["$ref"]] if "$ref" in node else [])
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(schema)
    assert refs and all(ref.removeprefix("#/$defs/") in schema["$defs"] for ref in refs)
    assert schema["required"] == ["model"] and schema["additionalProperties"] is False
    trainer_schema = schema["properties"]["trainer"]
    assert trainer_schema["additionalProperties"] is False
    for name, flag_schema in trainer_schema["properties"].items():
        assert {"type": "null"} in flag_schema["anyOf"], name  # null: Lightning's default, everywhere
    assert trainer_schema["properties"]["gpus"]["deprecated"] is True
    assert all(kind.get("type") == "null" for kind in trainer_schema["properties"]["model_registry"]["anyOf"])


def test_loop_lr_schedulers(tmp_path: Path) -> None:
    spec = load(tmp_path, "model: pkg.Net\nloop:\n  lr_schedulers: true\n")
    assert spec.loop.lr_schedulers is True
    with pytest.raises(LoopgenError) as excinfo:
        load(tmp_path, "model: pkg.Net\nloop:\n  lr_schedulers: maybe\n")
    assert "loop.lr_schedulers" in str(excinfo.value)


BAREBONES_CONFLICTS = [("enable_checkpointing", True), ("logger", True), ("enable_progress_bar", True),
                       ("log_every_n_steps", 5), ("enable_model_summary", True), ("num_sanity_val_steps", 2),
                       ("fast_dev_run", 2), ("detect_anomaly", True), ("profiler", "simple")]  # fmt: skip


@pytest.mark.parametrize(("flag", "value"), BAREBONES_CONFLICTS)
def test_barebones_refuses_what_lightning_refuses_with_its_message(tmp_path: Path, flag: str, value) -> None:
    pl = pytest.importorskip("pytorch_lightning")
    with pytest.raises(ValueError) as lightning:
        pl.Trainer(barebones=True, **{flag: value})
    found = problem(tmp_path, f"model: pkg.models.Net\ntrainer:\n  barebones: true\n  {flag}: {json.dumps(value)}\n")
    assert found == f"trainer.{flag} (line 4): {lightning.value}"


def test_barebones_turns_off_what_lightning_turns_off(tmp_path: Path) -> None:
    flags = trainer(tmp_path, "barebones: true\nenable_checkpointing: false\nlog_every_n_steps: 0\n")
    off = {name: getattr(flags, name) for name, _ in BAREBONES_CONFLICTS}
    assert off == {"enable_checkpointing": False, "logger": False, "enable_progress_bar": False,
                   "log_every_n_steps": 0, "enable_model_summary": False, "num_sanity_val_steps": 0,
                   "fast_dev_run": 0, "detect_anomaly": False, "profiler": None}  # fmt: skip


def test_plugins_are_read_as_lightnings_connector_reads_them(tmp_path: Path) -> None:
    flags = trainer(tmp_path, "accelerator: cpu\nplugins: [TorchSyncBatchNorm, {class_path: "
                              "lightning.pytorch.plugins.HalfPrecision, init_args: {precision: bf16-true}}]\n")  # fmt: skip
    assert flags.precision == "bf16-true" and flags.sync_batchnorm is True
    assert flags.plugins == ({"class_path": "TorchSyncBatchNorm", "init_args": {}},
                             {"class_path": "HalfPrecision", "init_args": {"precision": "bf16-true"}})  # fmt: skip
    assert trainer(tmp_path, "plugins: DoublePrecisionPlugin\n").precision == "64"  # Lightning 1.9.5's name


def test_two_plugins_of_a_kind_and_a_precision_beside_a_plugin_are_lightnings_errors(tmp_path: Path) -> None:
    pl = pytest.importorskip("pytorch_lightning")
    from lightning_fabric.utilities.exceptions import MisconfigurationException

    with pytest.raises(MisconfigurationException) as lightning:
        pl.Trainer(plugins=[pl.plugins.Precision(), pl.plugins.DoublePrecision()])
    found = problem(tmp_path, "model: pkg.models.Net\ntrainer:\n  plugins: [Precision, DoublePrecision]\n")
    assert found == f"trainer.plugins (line 3): {lightning.value}"
    with pytest.raises(ValueError, match="Received both `precision=64-true` and `plugins="):
        pl.Trainer(precision="64", plugins=[pl.plugins.DoublePrecision()])
    found = problem(tmp_path, "model: pkg.models.Net\ntrainer:\n  precision: 64\n  plugins: [DoublePrecision]\n")
    assert "Received both `precision=64` and `plugins=DoublePrecision(...)`. Choose one." in found


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ("[my.pkg.Plugin]", "Plugin: a plugin of the project's own replaces a part of Lightning's Trainer"),
        ("[{class_path: AsyncCheckpointIO, init_args: {checkpoint_io: my.IO}}]", "around a checkpoint IO of its own"),
        ("[BitsandbytesPrecision]", "bitsandbytes replaces the model's Linear layers"),
        ("[{class_path: SLURMEnvironment, init_args: {requeue_signal: SIGHUP}}]", "with a requeue_signal"),
        ("[{class_path: MixedPrecision, init_args: {precision: 16-mixed, device: cpu}}]",
         "float16 autocast on the CPU with a GradScaler"),
        ("[{class_path: MixedPrecision, init_args: {precision: bf16-mixed, device: cuda}}]",
         "autocast on another device than the model's casts nothing"),
    ],
)  # fmt: skip
def test_plugins_loopgen_does_not_serve_are_refused(tmp_path: Path, plugins: str, expected: str) -> None:
    found = problem(tmp_path, f"model: pkg.models.Net\ntrainer:\n  accelerator: cpu\n  plugins: {plugins}\n")
    assert found.startswith("trainer.plugins (line 4): ") and expected in found, found


def test_lightning_1_9_5s_replace_sampler_ddp_is_use_distributed_sampler(tmp_path: Path) -> None:
    assert trainer(tmp_path, "replace_sampler_ddp: false\n").use_distributed_sampler is False
