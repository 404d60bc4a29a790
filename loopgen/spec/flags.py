"""The trainer flag table: what every `trainer:` key accepts, means and defaults to.

- `FLAGS`: every argument of Lightning 2.x `Trainer.__init__`, plus the seed-era
  flags that 2.x removed and the contract keeps (amp_backend, amp_level,
  track_grad_norm, truncated_bptt_steps, terminate_on_nan).
- `ALIASES`: seed-era spellings (gpus, distributed_backend, ...), read as
  values of modern flags, with a one-line notice.

A `Flag` holds a `Kind` (kinds.py: validates and normalises a raw YAML value,
and describes it as a JSON Schema fragment, which schema.py assembles into the
spec's), its default (what null or absence means), a doc line, and `support`:
the predicate on the normalised value saying whether loopgen implements it
(support.py). To implement a value, edit that flag's `support=`. A value it
refuses gets a `refused(why, instead)` reason: what loopgen would have to do and
does not (or why it cannot), and the nearest thing it does serve.

Each flag is checked here on its own; rules between flags are the plan stage's
(loopgen/plan/). Pure text work: imports neither torch nor Lightning.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopgen.errors import got, show
from loopgen.spec.kinds import (
    CLASS_REF_SCHEMA,
    FlagError,
    Kind,
    Support,
    anything,
    batch_limit,
    boolean,
    choice,
    class_path_of,
    count_or_fraction,
    epoch_or_fraction,
    implemented,
    import_path,
    integer,
    is_number,
    lightning_default,
    names_among,
    only,
    refused,
    string,
    swa_learning_rates,
)
from loopgen.spec.plugins import plugins_kind, plugins_support
from loopgen.spec.support import (
    PRECISION_ALIASES,
    PRECISION_TRUE_HALF,
    TIMED_VALIDATION,
    TRANSFORMER_ENGINE,
    accumulate_kind,
    callback_entries,
    deterministic_kind,
    devices_kind,
    devices_support,
    duration_kind,
    fast_dev_run_kind,
    gradient_clip_val_kind,
    log_model_kind,
    logger_kind,
    no_model_logging,
    number_kind,
    precision_notice,
    precision_support,
    profiler_kind,
    save_last_kind,
    strategy_kind,
    strategy_support,
    tags_kind,
    timedelta_kind,
    track_grad_norm_kind,
    val_check_interval_kind,
    version_kind,
)


@dataclass(frozen=True)
class Flag:
    name: str
    kind: Kind
    default: Any  # the normalised value that null or absence means
    doc: str
    support: Support  # normalised value -> None if loopgen implements it, else the reason
    nullable: bool = False  # null is a value of its own, not "the default"
    notice: Callable[[Any], str | None] | None = None  # raw value -> one-line notice (seed-era value spellings)
    default_notice: str | None = None  # notice when null/absent: Lightning's default is not implemented
    default_only: bool = False  # a Lightning argument loopgen accepts at its default only (`_lightning_only`)

    def parse(self, raw: Any) -> Any:
        return None if raw is None else self.kind.parse(raw)


def _default_not_implemented(what: str, consequence: str, flag: str) -> str:
    return f"Lightning's default {what} is not implemented yet; {consequence} (set `{flag}: false` to silence this)"


def _lightning_only(name: str, kind: Kind, default: Any, doc: str, why: str, instead: str) -> Flag:
    """A Lightning argument the contract does not name: accepted at its default (or null) only; another value is
    refused, saying why and what to do instead."""
    schema = {"const": default} if default is not None else {"type": "null"}
    support = lightning_default(default, why, instead)
    return Flag(name, Kind(kind.parse, {**kind.schema, **schema}), default, doc, support=support, default_only=True)


# fmt: off
FLAGS: tuple[Flag, ...] = (
    # --- Lightning 2.x Trainer arguments, in the order of its signature
    Flag("accelerator", choice("auto", "cpu", "cuda", "mps", "tpu", aliases={"gpu": "cuda"}), "auto",
         "auto (cuda when available, else cpu; decided when the script starts), cpu, gpu/cuda, tpu",
         support=only("auto", "cpu", "cuda", "tpu",
                      why="the script places the model and batches on a CPU, a CUDA GPU or a TPU; Apple's MPS"
                          " device would need its own placement and checks against Lightning's MPSAccelerator",
                      instead="use cpu (or auto)")),
    Flag("strategy", strategy_kind(), "auto",
         "auto (ddp with several devices or nodes), single_device, ddp (ddp_find_unused_parameters_true/false, or a DDPStrategy entry), dp, horovod",
         support=strategy_support),
    Flag("devices", devices_kind(), 1, "auto (= 1), or a device count (> 1: one process per device, strategy ddp)",
         support=devices_support),
    Flag("num_nodes", integer(1), 1, "number of nodes (> 1: strategy ddp, launched with torchrun on each)",
         support=implemented),
    Flag("precision", choice("32", "64", "16-mixed", "bf16-mixed", *PRECISION_TRUE_HALF, *TRANSFORMER_ENGINE,
                             aliases=PRECISION_ALIASES),
         "32", "32, 16-mixed (16), bf16-mixed (bf16), bf16-true, 16-true (the weights in that dtype), 64",
         support=precision_support,
         notice=precision_notice),
    Flag("logger", logger_kind(), True, "true (a CSVLogger with Lightning's layout), false, or logger entries:"
         " CSVLogger, TensorBoardLogger, MLFlowLogger, WandbLogger (a list for several)",
         support=implemented),  # each entry is checked by `logger_support`
    Flag("callbacks", callback_entries(), (),
         "list of {class_path, init_args}: ModelCheckpoint, EarlyStopping or the user's own callback class",
         support=implemented),  # each entry is checked by `callback_support`
    Flag("fast_dev_run", fast_dev_run_kind(), 0, "false, true (= 1) or a number of batches",
         support=implemented),
    Flag("max_epochs", integer(-1, "-1: no limit"), None, "stop after this many epochs (null: 1000 unless max_steps)",
         support=implemented),
    Flag("min_epochs", integer(0), None, "train at least this many epochs",
         support=implemented),
    Flag("max_steps", integer(-1, "-1: no limit"), -1, "stop after this many optimizer steps (-1: no limit)",
         support=implemented),
    Flag("min_steps", integer(0), None, "train at least this many optimizer steps",
         support=implemented),
    Flag("max_time", duration_kind(), None, 'stop training after this much time: "DD:HH:MM:SS" or'
         " {hours: 1, minutes: 30} (Lightning's Timer, checked after every batch)", support=implemented,
         nullable=True),
    Flag("limit_train_batches", batch_limit(), 1.0, "fraction (float) or number (int) of training batches per epoch",
         support=implemented),
    Flag("limit_val_batches", batch_limit(), 1.0, "fraction (float) or number (int) of validation batches",
         support=implemented),
    Flag("limit_test_batches", batch_limit(), 1.0, "fraction (float) or number (int) of test batches (the test"
         " subcommand)", support=implemented),
    Flag("limit_predict_batches", batch_limit(), 1.0, "fraction (float) or number (int) of predict batches (the"
         " predict subcommand)", support=implemented),
    Flag("overfit_batches", batch_limit(), 0.0, "overfit on this fraction (float) or number (int) of batches",
         support=implemented),
    Flag("val_check_interval", val_check_interval_kind(), 1.0,
         "validate after this fraction of an epoch (float) or number of batches (int)",
         support=lambda value: None if is_number(value) else TIMED_VALIDATION),
    Flag("check_val_every_n_epoch", integer(1), 1, "validate every n epochs (null: count batches across epochs)",
         support=implemented, nullable=True),
    Flag("num_sanity_val_steps", integer(-1, "-1: all batches"), 2, "validation batches run before training",
         support=implemented),
    Flag("log_every_n_steps", integer(0), 50, "write the logged step values every n batches that step"
         " (0: only epoch values)", support=implemented),
    Flag("enable_checkpointing", boolean(), True, "save checkpoints (a ModelCheckpoint with Lightning's defaults"
         " when the callbacks have none)", support=implemented),
    Flag("enable_progress_bar", boolean(), True, "show a progress bar (Lightning's TQDMProgressBar, without tqdm;"
         " a TQDMProgressBar or RichProgressBar callback uses tqdm or rich)", support=implemented),
    Flag("enable_model_summary", boolean(), True, "print Lightning's model summary table when training starts",
         support=implemented),
    Flag("accumulate_grad_batches", accumulate_kind(), 1,
         "accumulate gradients over k batches, or {epoch: factor} (the seed's accumulation scheduler)",
         support=implemented),
    Flag("gradient_clip_val", gradient_clip_val_kind(), None, "clip gradients at this value (null or <= 0: off)",
         support=implemented),
    Flag("gradient_clip_algorithm", choice("norm", "value", lower=True), "norm", "norm or value",
         support=implemented),
    Flag("deterministic", deterministic_kind(), False, "use deterministic algorithms",
         support=only(False, True,
                      why="the script turns torch's deterministic algorithms on or leaves them off; their"
                          " warn-only mode is not written",
                      instead="use true (an error where an operation is not deterministic) or false")),
    Flag("benchmark", boolean(), None, "torch.backends.cudnn.benchmark (null: leave it as it is)",
         support=implemented),
    Flag("inference_mode", boolean(), True, "validate, test and predict under torch.inference_mode (false:"
         " torch.no_grad; fit validates under torch.no_grad either way)", support=implemented),
    Flag("use_distributed_sampler", boolean(), True, "with several processes, each loader's sampler replaced by a"
         " DistributedSampler that gives each process its share (false: the loaders as they are)",
         support=implemented),
    Flag("profiler", profiler_kind(), None, "null, simple, advanced, pytorch, or a profiler entry: SimpleProfiler,"
         " AdvancedProfiler, PyTorchProfiler", support=implemented),  # read by spec.py, checked by `profiler_support`
    Flag("detect_anomaly", boolean(), False, "autograd's anomaly detection around the training loop (after the"
         " sanity check): a backward that makes nan raises, naming the forward operation", support=implemented),
    Flag("barebones", boolean(), False, "Lightning's barebones mode: checkpointing, loggers, the progress bar, the"
         " model summary and the sanity check off, self.log a no-op", support=implemented),
    Flag("plugins", plugins_kind(), None, "Lightning's plugins: a precision plugin (Precision, MixedPrecision,"
         " HalfPrecision, DoublePrecision), a cluster environment (Lightning, TorchElastic, SLURM, LSF, Kubeflow),"
         " TorchCheckpointIO, TorchSyncBatchNorm", support=plugins_support),
    Flag("sync_batchnorm", boolean(), False, "with ddp or fsdp, the BatchNorm layers made torch.nn.SyncBatchNorm"
         " before the wrapper (batch statistics over all processes); on one device nothing", support=implemented),
    Flag("reload_dataloaders_every_n_epochs", integer(0), 0, "reload the dataloaders every n epochs (0: never)",
         support=implemented),
    Flag("default_root_dir", string(), None, "where logs and checkpoints go (null: the working directory)",
         support=implemented),
    Flag("enable_autolog_hparams", boolean(), True, "give the loggers the hyperparameters (and TensorBoard the"
         " model's graph) as the run starts", support=implemented),
    _lightning_only("model_registry", anything(), None, "model hub name",
                    why="Lightning uploads the checkpoints to its model registry through the litmodels package;"
                        " the script does not",
                    instead="leave it null and upload the checkpoint files yourself"),
    # --- seed-era flags that Lightning 2.0 removed (Lightning 1.9.5's meaning)
    Flag("amp_backend", choice("native", "apex"), "native", "native or apex",
         support=implemented),
    Flag("amp_level", choice("O0", "O1", "O2", "O3"), None, "apex optimisation level, with amp_backend apex (null: O2)",
         support=implemented),
    Flag("track_grad_norm", track_grad_norm_kind(), -1.0, "-1 (off), or log the p-norm of the gradients",
         support=implemented),
    Flag("truncated_bptt_steps", integer(1), None, "truncated backpropagation through time, in steps",
         support=implemented),
    Flag("terminate_on_nan", boolean(), False, "stop when the loss or the weights become nan or inf",
         support=implemented),
)


# fmt: on

FLAGS_BY_NAME: Mapping[str, Flag] = {flag.name: flag for flag in FLAGS}


def _arg(name: str, kind: Kind, default: Any, doc: str, nullable: bool = False, support: Support | None = None) -> Flag:
    return Flag(name, kind, default, doc, support=support or implemented, nullable=nullable)


# WeightAveraging's arguments, which EMAWeightAveraging takes too
_AVERAGING_ARGS = (
    _arg("device", string(), None, 'where the averaged copy is kept ("cpu", "cuda:0"; null: the module\'s device)',
         nullable=True),
    _arg("use_buffers", boolean(), True, "average the buffers too (else the copy keeps the module's)"),
)  # fmt: skip


def _filename_given(name: str) -> str | None:
    """OnExceptionCheckpoint's filename: Lightning raises ValueError on an empty one."""
    return None if name else refused("Lightning raises ValueError: The filename cannot be empty", "name the file")


def _directory_given(path: str | None) -> str | None:
    """SpikeDetection's file needs a directory: Lightning makes os.path.dirname(path), which fails on ""."""
    if path is not None and path.endswith(".json") and not os.path.dirname(path):
        return refused(
            "at a spike Lightning makes the file's directory, and a bare file name has none (it raises"
            " FileNotFoundError instead of stopping with TrainingSpikeException)",
            f"give a directory with it (./{path})",
        )
    return None


# ModelPruning's methods: torch.nn.utils.prune's functions (classes, ranking every module's weights together)
PRUNING_METHODS = ("ln_structured", "l1_unstructured", "random_structured", "random_unstructured")


# The init_args of Lightning's callbacks (Lightning 2.x's names and defaults), checked like trainer flags.
# fmt: off
# How many of a Lightning callback's CALLBACK_ARGS (in its parameters' order) it takes by position, where fewer
# than all (the rest are keyword arguments of its **kwargs)
POSITIONAL_ARGS: Mapping[str, int] = {"ThroughputMonitor": 2}

CALLBACK_ARGS: Mapping[str, tuple[Flag, ...]] = {
    "ModelCheckpoint": (
        _arg("dirpath", string(), None, "where the checkpoints go (null: the logger's or default_root_dir's)"),
        _arg("filename", string(), None, 'the file name template (null: "{epoch}-{step}")'),
        _arg("monitor", string(), None, "the metric that ranks checkpoints (null: the newest is kept)"),
        _arg("verbose", boolean(), False, "say what is saved"),
        _arg("save_last", save_last_kind(), None, 'also keep last.ckpt (true), or a link to the newest ("link")',
             nullable=True),
        _arg("save_top_k", integer(-1, "-1: all, 0: none"), 1, "how many of the best checkpoints to keep"),
        _arg("save_on_exception", boolean(), False, "save when fit raises (a file the script does not resume from)"),
        _arg("save_weights_only", boolean(), False, "save the weights only"),
        _arg("mode", choice("min", "max"), "min", "whether a lower (min) or higher (max) metric is better"),
        _arg("auto_insert_metric_name", boolean(), True, 'write "name=" before each placeholder of filename'),
        _arg("every_n_train_steps", integer(0), None, "save every n optimizer steps", nullable=True),
        _arg("train_time_interval", timedelta_kind(), None, "save after this much training time", nullable=True),
        _arg("every_n_epochs", integer(0), None, "save every n epochs", nullable=True),
        _arg("save_on_train_epoch_end", boolean(), None, "save at the training epoch's end (null: decided by"
             " the validation cadence)", nullable=True),
        _arg("enable_version_counter", boolean(), True, 'add "-v1", "-v2", ... to a name already taken'),
    ),
    "EarlyStopping": (
        _arg("monitor", string(), None, "the metric to watch (required)"),
        _arg("min_delta", number_kind(), 0.0, "the least change that counts as an improvement"),
        _arg("patience", integer(0), 3, "checks without improvement before stopping"),
        _arg("verbose", boolean(), False, "say what is decided"),
        _arg("mode", choice("min", "max"), "min", "whether a lower (min) or higher (max) metric is better"),
        _arg("strict", boolean(), True, "stop with an error when the metric is missing"),
        _arg("check_finite", boolean(), True, "stop when the metric becomes nan or inf"),
        _arg("stopping_threshold", number_kind(), None, "stop once the metric reaches this value", nullable=True),
        _arg("divergence_threshold", number_kind(), None, "stop once the metric is worse than this value",
             nullable=True),
        _arg("check_on_train_epoch_end", boolean(), None, "check at the training epoch's end (null: after"
             " validation, or at the epoch's end without validation)", nullable=True),
        _arg("log_rank_zero_only", boolean(), False, "log only on rank 0",
             support=lightning_default(False, "the script prints EarlyStopping's messages as Lightning does by"
                                              " default, with no switch for printing them on rank 0 only",
                                       "leave it false")),
    ),
    "LearningRateMonitor": (
        _arg("logging_interval", choice("step", "epoch"), None, "log at the schedulers' own interval (null), at"
             " every logging step (step) or at each epoch's start (epoch)", nullable=True),
        _arg("log_momentum", boolean(), False, "also log each group's momentum (Adam's first beta)"),
        _arg("log_weight_decay", boolean(), False, "also log each group's weight decay"),
    ),
    "DeviceStatsMonitor": (
        _arg("cpu_stats", boolean(), None, "the CPU's figures (psutil): null on a CPU only, true also beside a"
             " GPU's, false never", nullable=True),
    ),
    "ThroughputMonitor": (
        _arg("batch_size_fn", import_path(), None, "the import path of a function giving a batch's number of samples"
             " (required)"),
        _arg("length_fn", import_path(), None, "the import path of a function giving a batch's number of items",
             nullable=True),
        # Throughput's, which LightningCLI takes under dict_kwargs
        _arg("window_size", integer(2), 100, "the updates a rate is measured over"),
        _arg("separator", string(), "/", "between a name's parts"),
    ),
    "ModelSummary": (
        _arg("max_depth", integer(-1, "-1: every level, 0: no summary"), 1, "the deepest level of submodules listed"),
    ),
    "Timer": (
        _arg("duration", duration_kind(), None, 'stop training after this much time: "DD:HH:MM:SS" or'
             " {hours: 1, minutes: 30} (null: only time the loops)", nullable=True),
        _arg("interval", choice("step", "epoch"), "step", "check the time after every batch (step) or at each"
             " epoch's end (epoch)"),
        _arg("verbose", boolean(), True, "say when the time is up"),
    ),
    "BackboneFinetuning": (
        _arg("unfreeze_backbone_at_epoch", integer(0), 10, "the epoch at which the module's backbone joins the"
             " optimizers"),
        _arg("lambda_func", anything(), None, "the factor of the backbone's learning rate at each later epoch"
             " (null: Lightning's `multiplicative`, 2.0)", nullable=True,
             support=lightning_default(None, "the script's class multiplies by Lightning's `multiplicative`"
                                             " (2.0) and imports no function a spec names",
                                       "subclass BaseFinetuning and set the rate in its finetune_function")),
        _arg("backbone_initial_ratio_lr", number_kind(), 0.1, "the backbone's first learning rate, as a fraction"
             " of the first group's"),
        _arg("backbone_initial_lr", number_kind(), None, "the backbone's first learning rate (null: by the"
             " ratio)", nullable=True),
        _arg("should_align", boolean(), True, "keep the backbone's rate at most the first group's"),
        _arg("initial_denom_lr", number_kind(), 10.0, "what the backbone's first learning rate is divided by"
             " when none is given"),
        _arg("train_bn", boolean(), True, "train the backbone's BatchNorm layers once it joins"),
        _arg("verbose", boolean(), False, "print the learning rates at each epoch from the unfreeze on"),
        _arg("rounding", integer(0), 12, "the digits printed by verbose"),
    ),
    "WeightAveraging": _AVERAGING_ARGS,
    "EMAWeightAveraging": (
        *_AVERAGING_ARGS,
        _arg("decay", number_kind(), 0.999, "the weight of the average at each update"),
        _arg("update_every_n_steps", integer(0, "0: not by steps"), 1, "update after every n optimizer steps"),
        _arg("update_starting_at_step", integer(0), None, "update by steps from this step on (null: from the"
             " start)", nullable=True),
        _arg("update_starting_at_epoch", integer(0), None, "also update at the end of each epoch from this one"
             " on (null: never)", nullable=True),
    ),
    "StochasticWeightAveraging": (
        _arg("swa_lrs", swa_learning_rates(), None, "the learning rate the average is taken at: a float for every"
             " parameter group, or a list with one per group (required)"),
        _arg("swa_epoch_start", epoch_or_fraction(), 0.8, "the epoch averaging starts at (1-based), or a fraction of"
             " max_epochs"),
        _arg("annealing_epochs", integer(0), 10, "the epochs SWALR takes from the optimizer's rate to swa_lrs"),
        _arg("annealing_strategy", choice("cos", "linear"), "cos", "how SWALR anneals"),
        _arg("avg_fn", anything(), None, "the averaging function (null: the equal-weight average)", nullable=True,
             support=only(None, why="it is a function, which a YAML spec cannot give",
                          instead="leave it null (the equal-weight average)")),
        _arg("device", string(), "cpu", 'where the averaged copy is kept (null: the module\'s device)',
             nullable=True),
    ),
    "ModelPruning": (
        _arg("pruning_fn", choice(*PRUNING_METHODS, lower=True), None, "torch.nn.utils.prune's method, by name"
             " (required)"),
        _arg("parameters_to_prune", anything(), (), "the (module, name) pairs to prune (empty: every weight and"
             " bias the modules hold)",
             support=only((), [], why="its pairs are modules of the built model, which a YAML spec cannot name",
                          instead="leave it empty and choose by parameter_names")),
        _arg("parameter_names", names_among("weight", "bias"), None, 'the parameters pruned in each module (null:'
             ' "weight" and "bias")', nullable=True),
        _arg("use_global_unstructured", boolean(), True, "rank the weights of every module together (the"
             " unstructured methods only)"),
        _arg("amount", count_or_fraction(), 0.5, "what each pruning removes: a count (int) or a fraction (float)"
             " of the weights left"),
        _arg("apply_pruning", boolean(), True, "prune at each epoch (false: never)"),
        _arg("make_pruning_permanent", boolean(), True, "apply the masks for good when training ends, and in"
             " each full checkpoint's state_dict"),
        _arg("use_lottery_ticket_hypothesis", boolean(), True, "after each pruning, reset the weights left to"
             " their values at set-up"),
        _arg("resample_parameters", boolean(), False, "reset them to newly drawn values instead"),
        _arg("pruning_dim", integer(0), None, "the dimension a structured method prunes along", nullable=True),
        _arg("pruning_norm", integer(0), None, "the norm ln_structured ranks by", nullable=True),
        _arg("verbose", integer(0, "0: quiet, 1: the totals, 2: also each parameter"), 0, "say what each pruning"
             " removed"),
        _arg("prune_on_train_epoch_end", boolean(), True, "prune at each training epoch's end (false: at each"
             " validation's end)"),
    ),
    "SpikeDetection": (
        _arg("mode", choice("min", "max"), "min", "whether the loss should fall (min) or rise (max)"),
        _arg("window", integer(1), 10, "the losses the running mean is taken over"),
        _arg("warmup", integer(0), 1, "the batches of each epoch before the loss is checked"),
        _arg("atol", number_kind(), None, "how far off the mean a spike is at least (null: no bound)",
             nullable=True),
        _arg("rtol", number_kind(), 2.0, "how far off the mean a spike is at least, as a multiple of the mean"
             " (null: no bound)", nullable=True),
        _arg("exclude_batches_path", string(), None, "the JSON file (or its directory) the spiking batches are"
             " written to (null: default_root_dir/skip_batches.json)", nullable=True,
             support=_directory_given),
        _arg("finite_only", boolean(), True, "a loss that is not finite is a spike (false: it is left out of the"
             " mean)"),
    ),
    "OnExceptionCheckpoint": (
        _arg("dirpath", string(), None, "where the file goes (required)"),
        _arg("filename", string(), "on_exception", "the file's name, without its .ckpt", support=_filename_given),
    ),
    "RichModelSummary": (
        _arg("max_depth", integer(-1, "-1: every level, 0: no summary"), 1, "the deepest level of submodules listed"),
    ),
    "TQDMProgressBar": (
        _arg("refresh_rate", integer(0, "0: no bar"), 1, "redraw every n batches"),
        _arg("process_position", integer(0), 0, "draw below this many other bars"),
        _arg("leave", boolean(), False, "keep each epoch's bar (a line per epoch)"),
    ),
    "RichProgressBar": (
        _arg("refresh_rate", integer(0, "0: no bar"), 100, "redraw this many times a second"),
        _arg("leave", boolean(), False, "keep each epoch's bar (a line per epoch)"),
        _arg("theme", anything(), None, "the bar's styles",
             support=lightning_default(None, "the script draws the bar in the styles of Lightning's default"
                                             " theme", "leave it null")),
        _arg("console_kwargs", anything(), None, "arguments of rich's Console",
             support=lightning_default(None, "the script draws on rich's Console as created with no arguments",
                                       "leave it null")),
    ),
}


_SORT_KEYS = ("cpu_time", "cuda_time", "cpu_time_total", "cuda_time_total", "cpu_memory_usage", "cuda_memory_usage",
              "self_cpu_memory_usage", "self_cuda_memory_usage", "count")  # fmt: skip


_PROFILER_OUTPUT = (
    _arg("dirpath", string(), None, "the directory of the report (null: the logger's directory, else"
         " default_root_dir)"),
    _arg("filename", string(), None, "write the report to fit-FILENAME.txt there (null: print it)"),
)


# The init_args of Lightning's profilers (Lightning 2.x's names and defaults), checked like trainer flags.
PROFILER_ARGS: Mapping[str, tuple[Flag, ...]] = {
    "SimpleProfiler": (
        *_PROFILER_OUTPUT,
        _arg("extended", boolean(), True, "also show the number of calls and the share of the run"),
    ),
    "AdvancedProfiler": (
        *_PROFILER_OUTPUT,
        _arg("line_count_restriction", count_or_fraction(), 1.0, "the functions listed per action: a count (int) or a"
             " fraction (float)"),
        _arg("dump_stats", boolean(), False, "also save each action's raw cProfile stats (.prof)"),
    ),
    "PyTorchProfiler": (
        *_PROFILER_OUTPUT,
        _arg("group_by_input_shapes", boolean(), False, "group the operators by input shapes (with record_shapes)"),
        _arg("emit_nvtx", boolean(), False, "emit NVTX ranges for nvprof",
             support=lightning_default(False, "the script does not run under torch.autograd.profiler.emit_nvtx, whose"
                                              " ranges are for NVIDIA's nvprof and Nsight on CUDA",
                                       "leave it false; the trace export_to_chrome writes shows the operators")),
        _arg("export_to_chrome", boolean(), True, "write the trace (Chrome's trace viewer, TensorBoard)"),
        _arg("row_limit", integer(-1, "-1: no limit"), 20, "the rows of the operator table"),
        _arg("sort_by_key", choice(*_SORT_KEYS), None, "the operator table's order (null: cuda_time_total with"
             " CUDA, else cpu_time_total)", nullable=True),
        _arg("record_module_names", boolean(), True, "label each submodule's forward in the trace"),
        _arg("table_kwargs", anything(), None, "more arguments of the table", nullable=True,
             support=lightning_default(None, "the script prints the operator table with row_limit and sort_by_key"
                                             " only", "use row_limit and sort_by_key; leave table_kwargs null")),
        # torch.profiler.profile's own arguments (Lightning passes them on)
        _arg("record_shapes", boolean(), False, "record the operators' input shapes"),
        _arg("profile_memory", boolean(), False, "record tensor memory"),
        _arg("with_stack", boolean(), False, "record the source of each operator"),
        _arg("with_flops", boolean(), False, "estimate the FLOPs of matrix products and convolutions"),
        _arg("with_modules", boolean(), False, "record the module hierarchy"),
    ),
}


_NEW_WANDB_RUN = "the script starts a new W&B run; resuming an existing run by its id is not written"


_NO_ARTIFACTS = "it applies to the checkpoint artifacts that log_model uploads, and the script uploads none"


# The init_args of Lightning's loggers that loopgen implements, checked like trainer flags.
LOGGER_ARGS: Mapping[str, tuple[Flag, ...]] = {
    "CSVLogger": (
        _arg("save_dir", string(), None, "the directory of the logs (required)"),
        _arg("name", string(), "lightning_logs", "the experiment's directory in save_dir (null or empty: none)",
             nullable=True),
        _arg("version", version_kind(), None, "version_N for a number, the name itself for a string (null: the next"
             " free version_N)", nullable=True),
        _arg("prefix", string(), "", "put before each metric's name (joined with -)"),
        _arg("flush_logs_every_n_steps", integer(1), 100, "metrics.csv is written after every logging step, as"
             " under Lightning's Trainer; a row logged without a step is numbered as Lightning numbers it"),
    ),
    "TensorBoardLogger": (
        _arg("save_dir", string(), None, "the directory of the logs (required)"),
        _arg("name", string(), "lightning_logs", "the experiment's directory in save_dir (null or empty: none)",
             nullable=True),
        _arg("version", version_kind(), None, "version_N for a number, the name itself for a string (null: the next"
             " free version_N)", nullable=True),
        _arg("log_graph", boolean(), False, "add the model's graph, traced from its example_input_array"),
        _arg("default_hp_metric", boolean(), True, "log hp_metric -1 with the hyperparameters"),
        _arg("prefix", string(), "", "put before each metric's name (joined with -)"),
        _arg("sub_dir", string(), None, "a directory inside version_N for the event files", nullable=True,
             support=lightning_default(None, "the script writes the event files into version_N itself",
                                       "leave it null")),
    ),
    "MLFlowLogger": (
        _arg("experiment_name", string(), "lightning_logs", "the experiment the run belongs to (created when"
             " missing)"),
        _arg("run_name", string(), None, "the run's name (its mlflow.runName tag; null: MLflow picks one)",
             nullable=True),
        _arg("tracking_uri", string(), None, "where MLflow keeps the runs, e.g. file:./mlruns (null:"
             " $MLFLOW_TRACKING_URI, else file:{save_dir})", nullable=True),
        _arg("tags", tags_kind(), None, "the run's tags", nullable=True),
        _arg("save_dir", string(), "./mlruns", "the local file store, when tracking_uri is null"),
        _arg("log_model", log_model_kind(), False, "log the checkpoints as artifacts",
             support=no_model_logging("MLflow")),
        _arg("prefix", string(), "", "put before each metric's name (joined with -)"),
        _arg("artifact_location", string(), None, "where a new experiment keeps its artifacts", nullable=True,
             support=lightning_default(None, "the script creates a missing experiment at MLflow's default artifact"
                                             " location",
                                       "create the experiment first, with mlflow.create_experiment(name,"
                                       " artifact_location=...), and name it in experiment_name")),
        _arg("run_id", string(), None, "log into this existing run", nullable=True,
             support=lightning_default(None, "the script starts a new MLflow run; logging into an existing one is"
                                             " not written", "leave it null (a new run)")),
        _arg("synchronous", boolean(), None, "block on every logging call", nullable=True,
             support=lightning_default(None, "the script logs in MLflow's default mode", "leave it null; MLflow's"
                                       " MLFLOW_ENABLE_ASYNC_LOGGING environment variable chooses the mode")),
    ),
    "WandbLogger": (
        _arg("name", string(), None, "the run's display name (null: W&B picks one)", nullable=True),
        _arg("save_dir", string(), ".", "the directory W&B writes its wandb/ run folders in"),
        _arg("version", string(), None, "the id of a run to resume", nullable=True,
             support=lightning_default(None, _NEW_WANDB_RUN, "leave it null (a new run)")),
        _arg("offline", boolean(), False, "keep the run on disk (W&B's offline mode), to sync later"),
        _arg("dir", string(), None, "same as save_dir", nullable=True,
             support=lightning_default(None, "it is save_dir under another name", "use save_dir")),
        _arg("id", string(), None, "same as version", nullable=True,
             support=lightning_default(None, _NEW_WANDB_RUN, "leave it null (a new run)")),
        _arg("anonymous", boolean(), None, "W&B's anonymous logging", nullable=True,
             support=lightning_default(None, "the script does not pass W&B's anonymous mode to wandb.init",
                                       "leave it null and log in (wandb login), or set WANDB_ANONYMOUS")),
        _arg("project", string(), None, "the run's project (null: $WANDB_PROJECT, else lightning_logs)",
             nullable=True),
        _arg("log_model", log_model_kind(), False, "log the checkpoints as artifacts",
             support=no_model_logging("W&B")),
        _arg("experiment", anything(), None, "an existing run object", nullable=True,
             support=lightning_default(None, "a run object cannot be written in a spec: the script starts its own"
                                             " run", "leave it null")),
        _arg("prefix", string(), "", "put before each metric's name (joined with -)"),
        _arg("checkpoint_name", string(), None, "the name of the checkpoint artifacts", nullable=True,
             support=lightning_default(None, _NO_ARTIFACTS, "leave it null")),
        _arg("add_file_policy", choice("mutable", "immutable"), "mutable", "how artifact files are added",
             support=lightning_default("mutable", _NO_ARTIFACTS, "leave it mutable")),
    ),
}


# fmt: on


EARLY_STOPPING_DEFAULT = {
    # the seed's `early_stop_callback: true`; Lightning 2.x's EarlyStopping needs the monitor named
    "class_path": "pytorch_lightning.callbacks.EarlyStopping",
    "init_args": {"monitor": "val_loss"},
}


@dataclass(frozen=True)
class Alias:
    """A seed-era spelling: `kind.parse` reads its non-null value as {modern flag: raw value}
    (a `callbacks` value is a list of entries to add)."""

    name: str
    kind: Kind
    doc: str


def _gpus(raw: Any) -> dict[str, Any]:
    if isinstance(raw, bool) or not isinstance(raw, (int, str, list)):
        raise FlagError(f"expected a number of GPUs, -1, or a list of GPU indices, {got(raw)}")
    if raw == 0 or raw == [] or (isinstance(raw, str) and raw.strip() in ("0", "[]")):
        return {"accelerator": "cpu"}  # Lightning 1.x: no GPU
    return {"accelerator": "cuda", "devices": raw}


def _distributed_backend(raw: Any) -> dict[str, Any]:
    if raw == "ddp_cpu":
        return {"strategy": "ddp", "accelerator": "cpu"}
    return {"strategy": raw}


def _reload_dataloaders_every_epoch(raw: Any) -> dict[str, Any]:
    return {"reload_dataloaders_every_n_epochs": 1 if boolean().parse(raw) else 0}


def _early_stop_callback(raw: Any) -> dict[str, Any]:
    if raw is False:
        return {}
    if raw is True:
        return {"callbacks": [EARLY_STOPPING_DEFAULT]}
    class_path_of(raw, "true, false or an EarlyStopping entry with a class_path")
    return {"callbacks": [raw]}


def _progress_bar_refresh_rate(raw: Any) -> dict[str, Any]:
    """Lightning 1.5's meaning: 0 turns the bar off, n redraws it every n batches (`progress_bar_refresh_rate` is
    not a modern flag: spec.py gives it to the plan as Spec.progress_bar_refresh_rate)."""
    rate = integer(0).parse(raw)
    return {"enable_progress_bar": True, "progress_bar_refresh_rate": rate} if rate else {"enable_progress_bar": False}


# fmt: off
ALIASES: tuple[Alias, ...] = (
    Alias("gpus", Kind(_gpus, {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "array"}]}),
          "seed-era: accelerator cuda with this many devices (0: cpu)"),
    Alias("distributed_backend", Kind(_distributed_backend, {"type": "string"}),
          "seed-era: strategy"),
    Alias("row_log_interval", Kind(lambda raw: {"log_every_n_steps": raw}, {"type": "integer"}),
          "seed-era: log_every_n_steps"),
    Alias("reload_dataloaders_every_epoch", Kind(_reload_dataloaders_every_epoch, {"type": "boolean"}),
          "seed-era: reload_dataloaders_every_n_epochs 1 (true) or 0 (false)"),
    Alias("early_stop_callback", Kind(_early_stop_callback, {"anyOf": [{"type": "boolean"}, CLASS_REF_SCHEMA]}),
          "seed-era: true adds an EarlyStopping callback monitoring val_loss"),
    Alias("replace_sampler_ddp", Kind(lambda raw: {"use_distributed_sampler": boolean().parse(raw)},
                                      {"type": "boolean"}),
          "Lightning 1.9.5's name of use_distributed_sampler"),
    Alias("progress_bar_refresh_rate", Kind(_progress_bar_refresh_rate, {"type": "integer", "minimum": 0}),
          "seed-era: 0 is enable_progress_bar false; n is true, the bar redrawn every n batches"),
)


# fmt: on

ALIASES_BY_NAME: Mapping[str, Alias] = {alias.name: alias for alias in ALIASES}


TRAINER_KEYS: tuple[str, ...] = (*FLAGS_BY_NAME, *ALIASES_BY_NAME)


def alias_notice(modern: Mapping[str, Any]) -> str:
    """The one-line notice for a seed-era spelling read as `modern` (Alias.kind.parse's result)."""
    if not modern:
        return "seed-era flag with no effect here; remove it"
    parts, after = [], ""
    for name, value in modern.items():
        if name == "callbacks":
            parts.append("callbacks: + " + ", ".join(entry["class_path"] for entry in value))
        elif name == "progress_bar_refresh_rate":
            after = f", the bar redrawn every {value} batch{'es' if value != 1 else ''}"
        else:
            parts.append(f"{name}: {show(value)}")
    return "seed-era spelling, read as `" + "`, `".join(parts) + "`" + after
