"""The loggers (CSV, TensorBoard, MLflow, W&B) and LearningRateMonitor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from loopgen.errors import LoopgenError, Problem
from loopgen.plan.common import NUMBERED_LOGGERS, follows_1_9_5
from loopgen.plan.objects import Callback, Construct, Name, is_lightning
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers, Scheduler
from loopgen.plan.validation import Validation
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal, same
from loopgen.spec.model import ClassRef, Spec


@dataclass(frozen=True)
class LoggerPlan:
    """One of the run's loggers, as the script builds it: the script's class of that name, and its arguments."""

    kind: str  # "csv", "tensorboard", "mlflow" or "wandb"
    cls: str  # the script's class (Lightning's name)
    save_dir: str | None  # csv, tensorboard: the directory of the logs (None: default_root_dir); else None
    args: Mapping[str, Any]  # its other arguments, those not at the script's class's defaults
    numbered: bool  # its runs are directories version_N, the next free N (csv, tensorboard without a version)

    @property
    def in_root_dir(self) -> bool:
        """Its logs go to default_root_dir (a CSV or TensorBoard logger without a save_dir)."""
        return self.kind in ("csv", "tensorboard") and self.save_dir is None


@dataclass(frozen=True)
class LrMonitor:
    """Lightning's LearningRateMonitor: which learning rates it logs at which hook (interval "step", "epoch" or
    "any": the schedulers of that interval, or all; always every optimizer without a scheduler)."""

    callback: Callback
    at_batch_start: str | None  # on_train_batch_start, when the loggers are due (None: never)
    at_epoch_start: str | None  # on_train_epoch_start
    momentum: bool
    weight_decay: bool
    schedulers: tuple[Scheduler, ...]  # the known schedulers, in configure_optimizers' order


@dataclass(frozen=True)
class ThroughputPlan:
    """Lightning's ThroughputMonitor in fit: each training and validation batch counted with the spec's
    batch_size_fn (and length_fn), the totals and rates written to the loggers when they are due."""

    callback: Callback
    imports: tuple[tuple[str, str, str], ...]  # (module, function, the script's name for it)
    writes: bool  # something is written: a logger, and log_every_n_steps > 0 (else the functions still run)


@dataclass(frozen=True)
class DeviceStats:
    """Lightning's DeviceStatsMonitor: the device's statistics written to the loggers at each training, validation
    and test batch's start and end, when the loggers are due."""

    callback: Callback
    cpu_stats: bool | None  # None: the CPU's figures on a CPU only; True: also beside a GPU's; False: never
    psutil: bool  # the script imports psutil (the CPU's figures may be read)


@dataclass(frozen=True)
class Logging:
    """The loggers, and what Lightning's logger connector writes to them, when."""

    loggers: tuple[LoggerPlan, ...]
    default: bool  # `logger: true`: Lightning's default logger (a CSVLogger in default_root_dir)
    steps: bool  # the step values are written every LOG_EVERY_N_STEPS batches (log_every_n_steps > 0)
    every_n_steps: int
    values: bool  # the model logs values (self.log) that reach the loggers
    val_steps: bool  # ... in validation, whose step values go to the loggers (validation's own step count)
    hparams_model: bool  # the model's save_hyperparameters go to the loggers
    hparams_data: bool  # ... the datamodule's
    kinds: frozenset[str]  # the kinds of logger the script defines
    prefixed: bool  # some logger puts a prefix before the names
    lr_monitor: LrMonitor | None  # the spec's LearningRateMonitor
    # ... or a user's subclass of it, on the script's LearningRateMonitorBase (templates/subclassed.j2), which
    # logs at the loggers' step when they are due (the script tells it both before its hooks)
    rates_subclassed: bool
    device_stats: DeviceStats | None  # the spec's DeviceStatsMonitor
    throughput: ThroughputPlan | None  # the spec's ThroughputMonitor
    counts_steps: bool  # the script keeps the loggers' step (log_step): values or learning rates are logged
    every_n_steps_used: bool  # ... and something reads LOG_EVERY_N_STEPS
    hp_metric: bool  # a TensorBoardLogger logs hp_metric -1 with the hyperparameters (default_hp_metric)
    graphs: bool  # a TensorBoardLogger adds the model's graph (log_graph)
    traces_lightning_module: bool  # ... of a LightningModule (traced with its trainer checks off, as Lightning does)
    finishes: bool  # some logger has a run to end (TensorBoard's writer, MLflow's run, W&B's run)
    # Lightning's trainer.log_dir: "logger" (a CSV or TensorBoard logger's log_dir), "logger_save_dir" (another
    # logger's save_dir), "root" (no logger: default_root_dir), "none" (fast_dev_run's DummyLogger: None)
    log_dir: str
    # fast_dev_run with a logger: Lightning swaps the loggers for its DummyLogger, which logs nothing and whose
    # methods and experiment take any call
    dummy: bool = False
    csv_experiment: bool = False  # a CSVLogger's experiment is read: the script's logger has one

    @property
    def enabled(self) -> bool:
        return bool(self.loggers)

    @property
    def hparams(self) -> bool:
        return self.hparams_model or self.hparams_data

    @property
    def merges_hparams(self) -> bool:
        """The model's and the datamodule's hyperparameters both go to the loggers: merged, and a key they give
        different values refused, as Lightning merges them."""
        return self.hparams_model and self.hparams_data

    @property
    def kinds_in_order(self) -> tuple[str, ...]:
        """The kinds, each once, in the order the script defines their classes (LOGGER_KINDS'): each has its
        template file, templates/loggers/<kind>.j2."""
        return tuple(kind for kind in LOGGER_KINDS.values() if kind in self.kinds)

    @property
    def starts(self) -> bool:
        """The loggers get the hyperparameters, or the model's graph, when the run starts."""
        return self.hparams or self.graphs

    @property
    def flattens(self) -> bool:
        """The hyperparameters go to a logger that takes them flattened ("a/b" keys: TensorBoard's hparams,
        MLflow's params)."""
        return self.hp_metric or (self.hparams and "mlflow" in self.kinds)

    @property
    def warns(self) -> bool:
        """Some logger may warn as Lightning's does: CSV (a used directory), MLflow (a renamed metric), W&B (a run
        in progress), TensorBoard's graph (no example input to trace)."""
        return bool(self.kinds & {"csv", "mlflow", "wandb"}) or self.graphs

    @property
    def versions(self) -> bool:
        """A logger writes into save_dir/name/version_N (CSV, TensorBoard)."""
        return bool(self.kinds & {"csv", "tensorboard"})

    @property
    def writes_yaml(self) -> bool:
        """A logger writes the hyperparameters into hparams.yaml (CSV, TensorBoard)."""
        return self.hparams and self.versions

    @property
    def saves(self) -> str | None:
        """Lightning saves a CSV logger after each write of values (its rows reach metrics.csv): "every" logger is a
        CSV logger, "some" are, or None."""
        return self._every_or_some("csv")

    @property
    def fails(self) -> str | None:
        """The run raised: an MLflow logger's run ends FAILED (Lightning's finalize("failed")). "every" logger is an
        MLflow logger, "some" are, or None. The others lose nothing: the script's CSV and TensorBoard loggers write
        each row through, and W&B's own exit hook marks its run failed."""
        return self._every_or_some("mlflow")

    def _every_or_some(self, kind: str) -> str | None:
        if kind not in self.kinds:
            return None
        return "every" if self.kinds == {kind} else "some"

    @property
    def auto_version(self) -> bool:
        """The first logger numbers its directory (version_N): earlier runs' directories sit beside it."""
        return bool(self.loggers) and self.loggers[0].numbered


def check_logger_experiments(model: ClassFacts, callbacks: tuple[ClassFacts, ...], logging: Logging) -> None:
    """A logger's `experiment` (read as `logger.experiment` / `loggers[i].experiment`): TensorBoard's SummaryWriter,
    MLflow's MlflowClient and the CSVLogger's writer are the script's loggers' own; a WandbLogger's is refused."""
    readers = [facts for facts in (model, *callbacks) if facts.experiment_read_at]
    unserved = {
        "wandb": "WandbLogger, whose experiment (the W&B run, which Lightning starts when first read) the script"
        " does not provide",
    }
    kinds = [kind for kind in ("wandb",) if kind in logging.kinds]
    if readers and kinds:
        message = (
            f"reads a logger's `experiment`, but the spec has a {unserved[kinds[0]]}: log with self.log, or use"
            " TensorBoardLogger or MLFlowLogger"
        )
        raise LoopgenError([Problem(facts.experiment_read_at, message) for facts in readers])


LOGGER_KINDS = {"CSVLogger": "csv", "TensorBoardLogger": "tensorboard", "MLFlowLogger": "mlflow",
                "WandbLogger": "wandb"}  # fmt: skip


# The arguments of the script's logger classes, and their defaults (the spec's other arguments are refused
# unless at Lightning's default: loopgen/spec/flags.py, LOGGER_ARGS)
SCRIPT_LOGGER_ARGS = {
    "CSVLogger": {"name": "lightning_logs", "version": None, "prefix": "", "flush_logs_every_n_steps": 100},
    "TensorBoardLogger": {"name": "lightning_logs", "version": None, "prefix": "", "default_hp_metric": True,
                          "log_graph": False},
    "MLFlowLogger": {"experiment_name": "lightning_logs", "run_name": None, "tracking_uri": None, "tags": None,
                     "save_dir": "./mlruns", "prefix": ""},
    "WandbLogger": {"name": None, "save_dir": ".", "offline": False, "project": None, "prefix": ""},
}  # fmt: skip


def resolve_logging(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts, ...],
    validation: Validation,
    optimizers: Optimizers,
    optimization: Optimization,
    problems: list[Problem],
    notices: list[str],
) -> Logging:
    """`logger`: Lightning's default (a CSVLogger in default_root_dir, where Lightning would pick TensorBoard when
    it is installed: the script must not depend on what is installed), none, or the spec's loggers. fast_dev_run
    logs nothing (Lightning swaps the loggers for a dummy)."""
    t = spec.trainer
    default = t.logger is True
    dummy = bool(t.fast_dev_run) and t.logger is not False  # Lightning's loggers are its DummyLogger then
    if t.fast_dev_run or t.logger is False:
        refs: tuple[ClassRef, ...] = ()
    elif default:
        refs = (ClassRef("pytorch_lightning.loggers.CSVLogger", {"save_dir": None, "name": "lightning_logs",
                                                                 "version": None, "prefix": ""}),)  # fmt: skip
        notices.append(
            "logger: Lightning's default logger is TensorBoard when it is installed, else CSV; the script logs to"
            " CSV (lightning_logs/version_N/metrics.csv). For TensorBoard, name it: `logger: {class_path:"
            " TensorBoardLogger, init_args: {save_dir: .}}`"
        )
    else:
        refs = t.logger
    loggers = tuple(_logger_plan(ref) for ref in refs)
    model_logs = model.uses_log or any(facts.module_reads & {"log", "log_dict"} for facts in callbacks)
    values = bool(loggers) and (model_logs or model.returns_log_dicts or optimization.track_grad_norm is not None)
    # Trainer(enable_autolog_hparams=False): Lightning's _log_hyperparams is skipped, the graph with it
    autolog = bool(loggers) and t.enable_autolog_hparams is not False
    hparams_model = autolog and model.is_lightning_module and model.saves_hyperparameters
    hparams_data = autolog and data is not None and data.saves_hyperparameters
    for facts, used, where in ((model, hparams_model, "model"), (data, hparams_data, "data")):
        if used and facts is not None and facts.hyperparameters_to_loggers is None:
            problems.append(
                Problem(
                    f"{where}.class_path",
                    f"{facts.class_path} calls save_hyperparameters(logger=...) with a value loopgen cannot read:"
                    " write logger=True or logger=False",
                    spec.model.line if where == "model" else spec.data.line if spec.data else None,
                )
            )
    lr_monitor = _lr_monitor(spec, model, optimizers, bool(loggers), problems)
    rates_subclassed = _lr_monitor_subclasses(spec, callbacks, lr_monitor, bool(loggers), problems)
    device_stats = _device_stats(spec, model, bool(loggers), problems)
    throughput = _throughput(spec, model, bool(loggers), problems)
    writes_throughput = throughput is not None and throughput.writes
    hparams_model = hparams_model and model.hyperparameters_to_loggers is not False
    hparams_data = hparams_data and data is not None and data.hyperparameters_to_loggers is not False
    graphs = autolog and any(ref.init_args.get("log_graph") for ref in refs)
    if graphs and "example_input_array" not in model.attributes_read | model.class_attributes | set(model.methods):
        problems.append(
            Problem(
                "model.class_path",
                f"TensorBoardLogger(log_graph=True) traces the model's example_input_array, which"
                f" {spec.model.class_path} never sets (Lightning would log no graph, with a warning): set"
                " self.example_input_array, or log_graph: false",
                spec.model.line,
            )
        )
    hp_metric = (hparams_model or hparams_data) and any(ref.init_args.get("default_hp_metric") for ref in refs)
    # arguments that make no difference then: the script's class does without them
    unused = {"default_hp_metric"} if not hp_metric else set()
    unused |= {"log_graph"} if not graphs else set()
    if unused:
        loggers = tuple(replace(p, args={k: v for k, v in p.args.items() if k not in unused}) for p in loggers)
    first = loggers[0].kind if loggers else None
    return Logging(
        loggers=loggers,
        log_dir=(
            "none"
            if dummy
            else "root" if first is None else "logger" if first in ("csv", "tensorboard") else "logger_save_dir"
        ),
        dummy=dummy,
        csv_experiment=any(logger.kind == "csv" for logger in loggers)
        and any(facts.experiment_read_at for facts in (model, *callbacks)),
        default=default and bool(loggers),
        steps=values and t.log_every_n_steps > 0,
        every_n_steps=t.log_every_n_steps,
        values=values,
        val_steps=values and validation.enabled,
        hparams_model=hparams_model,
        hparams_data=hparams_data,
        kinds=frozenset(logger.kind for logger in loggers),
        prefixed=any(logger.args.get("prefix") for logger in loggers),
        hp_metric=hp_metric,
        graphs=graphs,
        traces_lightning_module=graphs and model.is_lightning_module,
        finishes=any(logger.kind != "csv" for logger in loggers),
        lr_monitor=lr_monitor,
        rates_subclassed=rates_subclassed,
        device_stats=device_stats,
        throughput=throughput,
        counts_steps=(
            values or lr_monitor is not None or rates_subclassed or device_stats is not None or writes_throughput
        ),
        every_n_steps_used=(
            values
            or rates_subclassed
            or lr_monitor is not None
            and lr_monitor.at_batch_start is not None
            or device_stats is not None
            or writes_throughput
        )
        and t.log_every_n_steps > 0,
    )


# the hooks where Lightning's DeviceStatsMonitor logs (the test ones in an evaluation run), and those where an
# evaluation starts counting its batches (Lightning's should_update_logs counts them from there)
DEVICE_STATS_HOOKS = (
    "on_train_batch_start",
    "on_train_batch_end",
    "on_validation_start",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_test_start",
    "on_test_batch_start",
    "on_test_batch_end",
)


def _logging_callback(
    spec: Spec, name: str, why_one: str, without_logger: str, logs: bool, problems: list[Problem]
) -> list[ClassRef]:
    """The spec's entries of Lightning's callback `name` that writes to the loggers: one at most (`why_one`: why
    a second is refused), and only with a logger (`without_logger`: Lightning's error; fast_dev_run's dummy
    logger is one)."""
    refs = [ref for ref in spec.trainer.callbacks if is_lightning(ref, name)]
    where = f"trainer.callbacks ({name})"
    if len(refs) > 1:
        problems.append(Problem(where, refusal(f"more than one {name} callback", why_one, "keep one"), refs[1].line))
    if refs and not logs and not spec.trainer.fast_dev_run:
        problems.append(Problem(where, without_logger, refs[0].line))
    return refs


def _device_stats(spec: Spec, model: ClassFacts, logs: bool, problems: list[Problem]) -> DeviceStats | None:
    """The spec's DeviceStatsMonitor (one at most): served on the CPU and on CUDA, one process or several (the
    first writes, as Lightning's loggers do); left out where it would write nothing (fast_dev_run's dummy logger,
    log_every_n_steps 0)."""
    refs = _logging_callback(
        spec,
        "DeviceStatsMonitor",
        "each would write the same statistics under the same names at the same steps",
        "Cannot use `DeviceStatsMonitor` callback with `Trainer(logger=False)` (Lightning)",
        logs,
        problems,
    )
    if not refs:
        return None
    where = "trainer.callbacks (DeviceStatsMonitor)"
    if spec.trainer.accelerator == "tpu":
        message = refusal(
            "DeviceStatsMonitor with accelerator tpu",
            "the script reads the CPU's figures with psutil and a GPU's with torch.cuda.memory_stats, not"
            " torch_xla's memory figures",
            "log what you need from your module's hooks with self.log",
        )
        problems.append(Problem(where, message, refs[0].line))
    if follows_1_9_5(spec, model):
        message = refusal(
            "DeviceStatsMonitor in a spec that follows Lightning 1.9.5",
            "1.9.5's writes other names (its prefix and separator) at other points",
            "follow Lightning 2.x",
        )
        problems.append(Problem(where, message, refs[0].line))
    if not logs or spec.trainer.log_every_n_steps == 0:
        return None  # nothing is written: no logger (fast_dev_run's dummy one), or the loggers are never due
    cpu_stats = refs[0].init_args["cpu_stats"]
    callback = Callback(
        construct=Construct("", "DeviceStatsMonitor", {"cpu_stats": cpu_stats}),
        var="device_stats",
        hooks=frozenset(DEVICE_STATS_HOOKS),
        kind="device_stats",
    )
    return DeviceStats(callback=callback, cpu_stats=cpu_stats, psutil=cpu_stats is not False)


# the hooks where the script's ThroughputMonitor counts and writes (the sanity check's validation is not counted)
THROUGHPUT_HOOKS = (
    "on_sanity_check_start",
    "on_sanity_check_end",
    "on_train_start",
    "on_train_epoch_start",
    "on_train_batch_end",
    "on_validation_start",
    "on_validation_batch_end",
    "on_validation_end",
)


def _throughput(spec: Spec, model: ClassFacts, logs: bool, problems: list[Problem]) -> ThroughputPlan | None:
    """The spec's ThroughputMonitor (one at most), in fit on one CPU or GPU; its functions imported from the
    user's code (checked there when the classes are read, loopgen/pipeline.py)."""
    from loopgen.plan.distributed import engine_kind

    refs = [ref for ref in spec.trainer.callbacks if is_lightning(ref, "ThroughputMonitor")]
    if not refs:
        return None
    where, line = "trainer.callbacks (ThroughputMonitor)", refs[0].line
    args = refs[0].init_args
    flops = "flops_per_batch" in model.attributes_read | model.class_attributes | set(model.methods)
    cases = (
        (len(refs) > 1, "a second ThroughputMonitor", "each would write the same names at the same steps", "keep one"),
        (
            follows_1_9_5(spec, model),
            "ThroughputMonitor in a spec that follows Lightning 1.9.5",
            "Lightning 1.9.5 has no ThroughputMonitor",
            "follow Lightning 2.x",
        ),
        (
            engine_kind(spec) is not None,
            f"ThroughputMonitor with the {engine_kind(spec)} engine",
            ("the script counts one process's batches, and Lightning's figures for several devices add the"
            " world's rates"),
            "measure on one device",
        ),
        (
            flops and spec.trainer.accelerator != "cpu",
            (f"ThroughputMonitor with accelerator {spec.trainer.accelerator} and"
             f" {spec.model.class_path}.flops_per_batch"),
            ("Lightning divides the flops by the device's peak flops from its own table of devices (device/mfu),"
            " which the script does not carry"),
            "measure flops on the CPU (accelerator: cpu), or leave flops_per_batch out",
        ),
        (
            spec.trainer.accelerator == "tpu",
            "ThroughputMonitor with accelerator tpu",
            "the script's monitor is written for the CPU and CUDA only (it times CUDA's work by synchronising)",
            "measure on the CPU or a GPU",
        ),
        (args.get("batch_size_fn") is None, "ThroughputMonitor without batch_size_fn", "Lightning requires it",
         "give the import path of a function of a batch, e.g. `my_project.data.batch_size`"),
    )  # fmt: skip
    for refused, what, why, instead in cases:
        if refused:
            problems.append(Problem(where, refusal(what, why, instead), line))
    if args.get("batch_size_fn") is None:
        return None
    imports, passed = [], {}
    for name in ("batch_size_fn", "length_fn"):
        if args.get(name) is not None:
            module, _, function = args[name].rpartition(".")
            alias = f"throughput_{name.removesuffix('_fn')}"
            imports.append((module, function, alias))
            passed[name] = Name(alias)
    passed |= {name: args[name] for name in ("window_size", "separator") if args[name] != THROUGHPUT_DEFAULTS[name]}
    writes = logs and spec.trainer.log_every_n_steps > 0
    callback = Callback(
        construct=Construct("", "ThroughputMonitor", passed),
        var="throughput",
        # the validation steps count from each training epoch's start, when they are written
        hooks=frozenset(hook for hook in THROUGHPUT_HOOKS if writes or hook != "on_train_epoch_start"),
        kind="throughput",
    )
    return ThroughputPlan(callback, tuple(imports), writes=writes)


THROUGHPUT_DEFAULTS = {"window_size": 100, "separator": "/"}


# why a second LearningRateMonitor (Lightning's, or a subclass of it) is refused
ONE_SET_OF_RATES = "the script logs one set of learning rates at each logging point"


def _lr_monitor(
    spec: Spec, model: ClassFacts, optimizers: Optimizers, logs: bool, problems: list[Problem]
) -> LrMonitor | None:
    """The spec's LearningRateMonitor (one at most), at the hooks where Lightning's logs: on_train_batch_start
    when the loggers are due (never with log_every_n_steps 0), on_train_epoch_start."""
    refs = _logging_callback(
        spec,
        "LearningRateMonitor",
        ONE_SET_OF_RATES,
        "Cannot use `LearningRateMonitor` callback with `Trainer` that has no logger (Lightning)",
        logs,
        problems,
    )
    if not refs:
        return None
    where = "trainer.callbacks (LearningRateMonitor)"
    source = model.optimizers if model.optimizers is not None and spec.optimizer is None else None
    if source is not None and not all(facts.name_known for facts in source.schedulers):
        message = 'configure_optimizers gives an lr_scheduler a "name" loopgen cannot read: write it as a string'
        problems.append(Problem(where, message, refs[0].line))
    args = refs[0].init_args
    interval = args["logging_interval"]
    hooks = {"on_train_start"} if args["log_momentum"] else set()
    # logging_interval null: each scheduler at its own interval; "step" / "epoch": all of them, at that one only
    at_batch = "step" if interval is None else "any" if interval == "step" else None
    at_epoch = "epoch" if interval is None else "any" if interval == "epoch" else None
    if spec.trainer.log_every_n_steps == 0:
        at_batch = None
    hooks |= {"on_train_batch_start"} if at_batch else set()
    hooks |= {"on_train_epoch_start"} if at_epoch else set()
    callback = Callback(
        construct=Construct("", "LearningRateMonitor", {}), var="lr_monitor", hooks=frozenset(hooks), kind="lr_monitor"
    )
    return LrMonitor(
        callback=callback,
        at_batch_start=at_batch,
        at_epoch_start=at_epoch,
        momentum=args["log_momentum"],
        weight_decay=args["log_weight_decay"],
        schedulers=optimizers.schedulers,
    )


def _lr_monitor_subclasses(
    spec: Spec, callbacks: tuple[ClassFacts, ...], lr_monitor: LrMonitor | None, logs: bool, problems: list[Problem]
) -> bool:
    """Whether the spec has a user's subclass of LearningRateMonitor (one at most, and not beside the spec's own:
    each would log its set of learning rates at each logging point; and with a logger, as Lightning raises without
    one: fast_dev_run's dummy logger is none the script has). With StochasticWeightAveraging: plan/swa.py."""
    subclasses = {facts.class_path for facts in callbacks if "LearningRateMonitor" in facts.lightning_bases}
    refs = [ref for ref in spec.trainer.callbacks if ref.class_path in subclasses]
    if not refs:
        return False
    where = "trainer.callbacks"
    if len(refs) > 1 or lr_monitor is not None:
        second = refs[1] if len(refs) > 1 else refs[0]
        message = refusal(
            f"a second LearningRateMonitor ({second.class_path})",
            ONE_SET_OF_RATES,
            "keep one",
        )
        problems.append(Problem(where, message, second.line))
    if not logs:
        message = refusal(
            f"{refs[0].class_path} (a LearningRateMonitor) without a logger",
            "Lightning raises `Cannot use LearningRateMonitor callback with Trainer that has no logger`"
            + (" (fast_dev_run's dummy logger is none the script has)" if spec.trainer.fast_dev_run else ""),
            "give the trainer a logger" + (" and no fast_dev_run" if spec.trainer.fast_dev_run else ""),
        )
        problems.append(Problem(where, message, refs[0].line))
    return True


def _logger_plan(ref: ClassRef) -> LoggerPlan:
    """A logger entry as the script's class takes it: the arguments the script's class has, where not at its
    defaults (the others are at Lightning's defaults: the spec stage refuses anything else)."""
    args = ref.init_args
    kind = LOGGER_KINDS[ref.name]
    defaults = SCRIPT_LOGGER_ARGS[ref.name]
    given = {
        name: args.get(name, default)
        for name, default in defaults.items()
        if not same(args.get(name, default), default)
    }
    if "name" in given and kind in ("csv", "tensorboard"):
        given["name"] = args["name"] or ""  # null or empty: no experiment directory
    return LoggerPlan(
        kind=kind,
        cls=ref.name,
        save_dir=args["save_dir"] if kind in ("csv", "tensorboard") else None,
        args=given,
        numbered=ref.name in NUMBERED_LOGGERS and args["version"] is None,
    )
