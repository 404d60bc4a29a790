"""What loopgen serves of each flag's values, and why it refuses the rest: strategies, devices, precision, loggers,
profilers, callbacks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from loopgen.errors import did_you_mean, got, kind_of, show
from loopgen.spec.kinds import (
    CLASS_REF_SCHEMA,
    LIGHTNING_PACKAGES,
    FlagError,
    Kind,
    Support,
    batch_limit,
    boolean,
    choice,
    class_path_of,
    is_int,
    is_number,
    refused,
)
from loopgen.spec.unserved import OTHER_LIGHTNING_CALLBACKS


def fast_dev_run_kind() -> Kind:
    """false, true (= 1) or a number of batches; normalised to an int."""

    def parse(raw: Any) -> int:
        if isinstance(raw, bool):
            return int(raw)
        if not is_int(raw) or raw < 0:
            raise FlagError(f"expected true, false or an integer >= 0, {got(raw)}")
        return raw

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"type": "integer", "minimum": 0}]})


def devices_kind() -> Kind:
    """Lightning's devices: a count, -1 (all), "auto", a "0,1" string or a list of indices.

    Normalised to a count ("auto" -> 1 as the contract says, [0, ..., n-1] -> n,
    -1 stays -1), or a tuple of device indices when they are not 0..n-1.
    """
    expected = 'expected "auto", an integer >= 1, -1 (all devices), or a list of device indices'

    def indices(values: list[Any], raw: Any) -> int | tuple[int, ...]:
        if not values or not all(is_int(v) and v >= 0 for v in values) or len(set(values)) != len(values):
            raise FlagError(f"{expected}, {got(raw)}")
        return len(values) if values == list(range(len(values))) else tuple(values)

    def parse(raw: Any) -> int | tuple[int, ...]:
        if isinstance(raw, list):
            return indices(raw, raw)
        count = raw
        if isinstance(raw, str):
            if raw.strip() == "auto":
                return 1
            try:
                numbers = [int(part) for part in raw.split(",") if part.strip()]
            except ValueError:
                raise FlagError(f"{expected}, {got(raw)}") from None
            if "," in raw:
                return indices(numbers, raw)
            count = numbers[0] if numbers else None
        if is_int(count) and (count >= 1 or count == -1):
            return count
        raise FlagError(f"{expected}, {got(raw)}")

    index_list = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "uniqueItems": True}
    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": -1}, {"type": "string"}, index_list]})


_STRATEGIES = (
    "auto", "single_device", "dp", "ddp", "horovod",  # the contract's (dp and horovod: Lightning 1.9)
    "ddp_spawn", "ddp_fork", "ddp_notebook",  # ... and the rest of Lightning 2.x's StrategyRegistry
    "ddp_find_unused_parameters_false", "ddp_find_unused_parameters_true",
    "ddp_spawn_find_unused_parameters_false", "ddp_spawn_find_unused_parameters_true",
    "ddp_fork_find_unused_parameters_false", "ddp_fork_find_unused_parameters_true",
    "ddp_notebook_find_unused_parameters_false", "ddp_notebook_find_unused_parameters_true",
    "deepspeed", "deepspeed_stage_1", "deepspeed_stage_2", "deepspeed_stage_2_offload",
    "deepspeed_stage_3", "deepspeed_stage_3_offload", "deepspeed_stage_3_offload_nvme",
    "fsdp", "fsdp_cpu_offload", "single_tpu", "single_xla", "xla", "xla_debug",
)  # fmt: skip


# Lightning's DDPStrategy however spelled, and the init_args of it that loopgen implements
DDP_STRATEGY_PATHS = (
    "DDPStrategy", "pytorch_lightning.strategies.DDPStrategy", "pytorch_lightning.strategies.ddp.DDPStrategy",
    "lightning.pytorch.strategies.DDPStrategy", "lightning.pytorch.strategies.ddp.DDPStrategy",
)  # fmt: skip


DDP_STRATEGY_ARGS = ("find_unused_parameters", "static_graph", "gradient_as_bucket_view", "timeout",
                     "process_group_backend")  # fmt: skip


DDP_STRATEGIES = ("ddp", "ddp_find_unused_parameters_false", "ddp_find_unused_parameters_true")


# Lightning's ModelParallelStrategy (FSDP2 and tensor parallelism on a device mesh), and its init_args
MODEL_PARALLEL_PATHS = (
    "ModelParallelStrategy", "pytorch_lightning.strategies.ModelParallelStrategy",
    "pytorch_lightning.strategies.model_parallel.ModelParallelStrategy",
    "lightning.pytorch.strategies.ModelParallelStrategy",
    "lightning.pytorch.strategies.model_parallel.ModelParallelStrategy",
)  # fmt: skip


MODEL_PARALLEL_ARGS = ("data_parallel_size", "tensor_parallel_size", "save_distributed_checkpoint", "timeout",
                       "process_group_backend")  # fmt: skip


# Lightning's FSDPStrategy (FSDP1, CUDA only), and its init_args
FSDP_PATHS = (
    "FSDPStrategy", "pytorch_lightning.strategies.FSDPStrategy", "pytorch_lightning.strategies.fsdp.FSDPStrategy",
    "lightning.pytorch.strategies.FSDPStrategy", "lightning.pytorch.strategies.fsdp.FSDPStrategy",
)  # fmt: skip


FSDP_ARGS = ("sharding_strategy", "cpu_offload", "state_dict_type", "auto_wrap_policy",
             "activation_checkpointing_policy", "timeout", "process_group_backend")  # fmt: skip


def _mesh_size(raw: Any) -> Any:
    """ModelParallelStrategy's data_parallel_size and tensor_parallel_size: "auto" or a count of processes."""
    if raw == "auto" or (is_int(raw) and raw >= 1):
        return raw
    raise FlagError(f'expected "auto" or a number of processes >= 1, {got(raw)}', ())


def _timeout_seconds(raw: Any) -> float:
    """DDPStrategy(timeout=...): seconds, or a timedelta as LightningCLI writes it ("0:30:00", "1 day, 0:00:00")."""
    if is_number(raw) and raw > 0:
        return float(raw)
    if isinstance(raw, str):
        days, _, clock = raw.rpartition(", ") if ", " in raw else ("", "", raw)
        parts = clock.split(":")
        try:
            day_count = int(days.split()[0]) if days else 0
            hours, minutes, seconds = (float(part) for part in parts) if len(parts) == 3 else (None, None, None)
        except (ValueError, IndexError, TypeError):
            hours = None
        if hours is not None and hours * 3600 + minutes * 60 + seconds + day_count * 86400 > 0:
            return day_count * 86400 + hours * 3600 + minutes * 60 + seconds
    raise FlagError(f'expected a number of seconds > 0 or a duration "H:MM:SS", {got(raw)}', ("timeout",))


def strategy_kind() -> Kind:
    """A registered strategy name (case-insensitive), or a `{class_path: DDPStrategy,
    init_args: {...}}` entry, normalised to {"class_path": "DDPStrategy", "init_args": {...}} with a timeout in
    seconds."""
    names = choice(*_STRATEGIES, lower=True)
    kinds = {"find_unused_parameters": boolean(), "static_graph": boolean(), "gradient_as_bucket_view": boolean(),
             "process_group_backend": choice("gloo", "nccl"), "save_distributed_checkpoint": boolean(),
             "data_parallel_size": Kind(_mesh_size, {}), "tensor_parallel_size": Kind(_mesh_size, {})}  # fmt: skip

    def parse(raw: Any) -> Any:
        if not isinstance(raw, dict):
            return names.parse(raw)
        class_path = class_path_of(raw, "a strategy name or an entry with a class_path")
        unknown = sorted(set(raw) - {"class_path", "init_args"})
        if unknown:
            raise FlagError(f"unknown key {unknown[0]!r}: expected class_path and init_args", (unknown[0],))
        args = raw.get("init_args") or {}
        if not isinstance(args, dict):
            raise FlagError(f"expected a mapping, {got(args)}", ("init_args",))
        parsed: dict[str, Any] = {}
        for key, value in args.items():
            if value is None:
                continue
            if key == "timeout":
                parsed[key] = _timeout_seconds(value)
            elif key in kinds:
                try:
                    parsed[key] = kinds[key].parse(value)
                except FlagError as error:
                    raise FlagError(error.message, ("init_args", key)) from None
            else:
                parsed[key] = value  # refused by the support predicate, with its name
        return {"class_path": class_path, "init_args": parsed}

    schema = {"anyOf": [names.schema, CLASS_REF_SCHEMA]}
    return Kind(parse, schema)


STRATEGIES_DONE = ("auto", "single_device", *DDP_STRATEGIES, "horovod", "dp", "fsdp", "fsdp_cpu_offload")


_LAUNCHED = ("_spawn", "_fork", "_notebook")  # the DDP strategies that start their processes from the program


def strategy_support(value: Any) -> str | None:
    """A strategy entry is named by its class_path in the refusal (spec.py), so its reasons read after it."""
    served = "use a strategy name (ddp, fsdp, dp, horovod), a DDPStrategy, FSDPStrategy or ModelParallelStrategy entry"
    if isinstance(value, dict):
        if value["class_path"] in FSDP_PATHS:
            what, known = "builds FullyShardedDataParallel, its process group and checkpoints", FSDP_ARGS
        elif value["class_path"] in MODEL_PARALLEL_PATHS:
            what, known = "builds the device mesh, the process group and the checkpoints", MODEL_PARALLEL_ARGS
        elif value["class_path"] in DDP_STRATEGY_PATHS:
            what, known = "builds DistributedDataParallel and its process group", DDP_STRATEGY_ARGS
        else:
            return refused(
                "of Lightning's strategy classes the script reproduces DDPStrategy's, FSDPStrategy's and"
                " ModelParallelStrategy's work only; another strategy object is Lightning code the script does not have",
                served,
            )
        unknown = [key for key in value["init_args"] if key not in known]
        if unknown:
            return refused(
                f"with {unknown[0]}: the script {what} from {', '.join(known)} only, and torchrun starts its"
                " processes",
                f"remove {unknown[0]}",
            )
        return None
    if value in STRATEGIES_DONE:
        return None
    if value.startswith("ddp"):
        launched = next(part for part in _LAUNCHED if part in value)
        return refused(
            "it starts the processes from inside the running program; the script is started once per process by"
            " torchrun instead",
            f"use {value.replace(launched, '')}: the same training, launched by the command in the script's header",
        )
    if value.startswith("deepspeed"):
        return refused(
            "DeepSpeed's engine takes over the model, the optimizer step, ZeRO's partitioned states and the"
            " checkpoints; the script would have to drive that engine, and does not",
            "use ddp",
        )
    return refused(  # single_tpu, single_xla, xla, xla_debug
        "the TPU strategies are chosen from the accelerator and the device count, not named",
        "use `accelerator: tpu` with `strategy: auto` (devices: 1 for one TPU core, more for one process each)",
    )


def devices_support(value: Any) -> str | None:
    if is_int(value) and value >= 1:
        return None
    if value == -1:
        return refused(
            "the number of processes is fixed when the script is rendered, in the launch command of its header,"
            " while all devices is a count known only where it runs",
            "give the device count",
        )
    return refused(
        "each process uses the device of its local rank, so the script cannot pick particular devices",
        "give a device count and choose the GPUs with CUDA_VISIBLE_DEVICES",
    )


PRECISION_ALIASES: Mapping[str | int, str] = {
    64: "64", "64": "64", "64-true": "64",
    32: "32", "32": "32", "32-true": "32",
    16: "16-mixed", "16": "16-mixed",
    "bf16": "bf16-mixed",
}  # fmt: skip


PRECISION_TRUE_HALF = ("16-true", "bf16-true")


# Lightning's TransformerEnginePrecision: NVIDIA Transformer Engine's FP8 layers, weights in bf16 or float16
TRANSFORMER_ENGINE = {"transformer-engine": "bf16", "transformer-engine-float16": "16"}


def precision_support(value: str) -> str | None:
    if value in TRANSFORMER_ENGINE:
        half = TRANSFORMER_ENGINE[value]
        weights = "bfloat16" if half == "bf16" else "float16"
        return refused(
            "NVIDIA's Transformer Engine replaces the model's Linear and LayerNorm layers with its FP8 ones and runs"
            " them under its FP8 autocast (CUDA only, the transformer_engine package); the script would have to"
            " make that conversion, and does not",
            f"use {half}-mixed, or {half}-true for {weights} weights",
        )
    return None


def precision_notice(raw: Any) -> str | None:
    # the spellings Lightning 2.x also warns about ("supported for historical reasons")
    if type(raw) in (str, int) and raw in (16, "16", "bf16"):
        return f"{show(raw)} is a seed-era spelling, read as `precision: {PRECISION_ALIASES[raw]}`"
    return None


def accumulate_kind() -> Kind:
    """An int >= 1, or the seed's {epoch: factor} schedule (Lightning 1.x's GradientAccumulationScheduler).

    A schedule is normalised as that scheduler does: sorted, with factor 1 from
    epoch 0 when epoch 0 is not given.
    """

    def parse(raw: Any) -> int | dict[int, int]:
        if is_int(raw) and raw >= 1:
            return raw
        if not isinstance(raw, dict):
            raise FlagError(f"expected an integer >= 1 or a mapping {{epoch: factor}}, {got(raw)}")
        if not raw:
            raise FlagError("the {epoch: factor} mapping is empty")
        for epoch, factor in raw.items():
            if not is_int(epoch) or epoch < 0:
                message = f"epoch keys must be integers >= 0, got {show(epoch)} ({kind_of(epoch)})"
                raise FlagError(message, (show(epoch),))
            if not is_int(factor) or factor < 1:
                raise FlagError(f"accumulation factors must be integers >= 1, {got(factor)}", (show(epoch),))
        return dict(sorted({0: 1, **raw}.items()))

    schedule = {
        "type": "object",
        "propertyNames": {"pattern": "^[0-9]+$"},
        "additionalProperties": {"type": "integer", "minimum": 1},
        "minProperties": 1,
    }
    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 1}, schedule]})


def gradient_clip_val_kind() -> Kind:
    """A number; normalised to a float, or to None when <= 0 (Lightning does not clip then)."""

    def parse(raw: Any) -> float | None:
        if not is_number(raw) or math.isnan(raw):
            raise FlagError(f"expected a number, {got(raw)}")
        return float(raw) if raw > 0 else None

    return Kind(parse, {"type": "number"})


def deterministic_kind() -> Kind:
    """true, false, or Lightning's "warn"."""

    def parse(raw: Any) -> bool | str:
        return raw if isinstance(raw, bool) else choice("warn").parse(raw)

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"const": "warn"}]})


def logger_kind() -> Kind:
    """true (Lightning's default logger), false, a logger entry, or a list of them (a list: normalised to a
    list of entries; spec.py reads each entry as a class ref, checked by `logger_support`)."""

    def parse(raw: Any) -> bool | list[Any]:
        if isinstance(raw, bool):
            return raw
        entries = raw if isinstance(raw, list) else [raw]
        for index, entry in enumerate(entries):
            if not isinstance(entry, (str, dict)):
                at = (index,) if isinstance(raw, list) else ()
                raise FlagError(f"expected true, false, or logger entries with a class_path, {got(entry)}", at)
        return entries

    schema = {"anyOf": [{"type": "boolean"}, CLASS_REF_SCHEMA, {"type": "array", "items": CLASS_REF_SCHEMA}]}
    return Kind(parse, schema)


# Lightning's loggers, and the submodule each is defined in
LIGHTNING_LOGGERS = {"CSVLogger": "csv_logs", "TensorBoardLogger": "tensorboard", "MLFlowLogger": "mlflow",
                     "WandbLogger": "wandb"}  # fmt: skip


LOGGERS_DONE = ("CSVLogger", "TensorBoardLogger", "MLFlowLogger", "WandbLogger")


def lightning_logger(class_path: str) -> str | None:
    """pytorch_lightning.loggers.NAME for one of Lightning's loggers however spelled (short, pytorch_lightning.
    loggers[.module], lightning.pytorch.loggers[.module]), else None."""
    module, _, name = class_path.rpartition(".")
    if name not in LIGHTNING_LOGGERS:
        return None
    packages = ("pytorch_lightning.loggers", "lightning.pytorch.loggers")
    spellings = {"", *packages, *(f"{package}.{LIGHTNING_LOGGERS[name]}" for package in packages)}
    return f"pytorch_lightning.loggers.{name}" if module in spellings else None


def logger_support(class_path: str) -> str | None:
    """Whether loopgen implements a `logger` entry (its class path canonicalised by `lightning_logger`)."""
    canonical = lightning_logger(class_path)
    if canonical is None or canonical.rpartition(".")[2] not in LOGGERS_DONE:
        return refused(
            "a logger class is called by Lightning's Trainer, which the script does not have: it writes the logs"
            " of Lightning's own loggers itself",
            f"use {', '.join(LOGGERS_DONE[:-1])} or {LOGGERS_DONE[-1]}, or write your logs from a callback class"
            " of your own",
        )
    return None


def version_kind() -> Kind:
    """A logger's version: a number (the directory version_N) or a name (the directory itself)."""

    def parse(raw: Any) -> int | str:
        if isinstance(raw, str) or (is_int(raw) and raw >= 0):
            return raw
        raise FlagError(f"expected an integer >= 0 or a string, {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]})


def tags_kind() -> Kind:
    """MLflow run tags: a mapping of names to strings, numbers or booleans (MLflow stores each as its str)."""

    def parse(raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise FlagError(f"expected a mapping of tag names to values, {got(raw)}")
        for key, value in raw.items():
            if not isinstance(key, str):
                raise FlagError(f"tag names must be strings, got {show(key)} ({kind_of(key)})", (show(key),))
            if not isinstance(value, (str, int, float)):
                raise FlagError(f"expected a string, a number or a boolean, {got(value)}", (key,))
        return dict(raw)

    schema = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}
    return Kind(parse, schema)


def log_model_kind() -> Kind:
    """MLFlowLogger's / WandbLogger's log_model: false, true or "all" (only false is implemented)."""

    def parse(raw: Any) -> bool | str:
        if isinstance(raw, bool) or raw == "all":
            return raw
        raise FlagError(f'expected true, false or "all", {got(raw)}')

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"const": "all"}]})


def no_model_logging(logger: str) -> Support:
    reason = refused(
        f"the script does not upload the checkpoints as {logger} artifacts after saving them",
        "keep `log_model: false`; the checkpoints stay in ModelCheckpoint's directory",
    )
    return lambda value: None if value is False else reason


# Lightning's profilers: Trainer(profiler=NAME) and the class it stands for, and the submodule of each class
PROFILER_NAMES = {"simple": "SimpleProfiler", "advanced": "AdvancedProfiler", "pytorch": "PyTorchProfiler",
                  "xla": "XLAProfiler"}  # fmt: skip


LIGHTNING_PROFILERS = {"SimpleProfiler": "simple", "AdvancedProfiler": "advanced", "PyTorchProfiler": "pytorch",
                       "XLAProfiler": "xla", "PassThroughProfiler": "base"}  # fmt: skip


PROFILERS_DONE = ("SimpleProfiler", "AdvancedProfiler", "PyTorchProfiler")


def profiler_kind() -> Kind:
    """Lightning's profiler names (as Lightning reads them: any case), or a profiler class entry (spec.py reads
    it as a class ref, checked by `profiler_support`)."""

    def parse(raw: Any) -> str | dict[str, Any]:
        if isinstance(raw, str) and "." not in raw and raw not in LIGHTNING_PROFILERS:
            return choice(*PROFILER_NAMES, lower=True).parse(raw)
        if isinstance(raw, (str, dict)):
            return raw
        raise FlagError(f"expected a profiler name ({', '.join(PROFILER_NAMES)}) or a class entry, {got(raw)}")

    return Kind(parse, {"anyOf": [{"enum": list(PROFILER_NAMES)}, CLASS_REF_SCHEMA]})


def lightning_profiler(class_path: str) -> str | None:
    """pytorch_lightning.profilers.NAME for one of Lightning's profilers however spelled, else None."""
    module, _, name = class_path.rpartition(".")
    if name not in LIGHTNING_PROFILERS:
        return None
    packages = ("pytorch_lightning.profilers", "lightning.pytorch.profilers")
    spellings = {"", *packages, *(f"{package}.{LIGHTNING_PROFILERS[name]}" for package in packages)}
    return f"pytorch_lightning.profilers.{name}" if module in spellings else None


def profiler_support(class_path: str) -> str | None:
    """Whether loopgen implements a `profiler` entry (its class path canonicalised by `lightning_profiler`)."""
    canonical = lightning_profiler(class_path)
    name = canonical.rpartition(".")[2] if canonical is not None else None
    served = "use simple, advanced or pytorch"
    if name == "XLAProfiler":
        return refused(
            "it profiles XLA devices through torch_xla's profiler server, which the script does not start", served
        )
    if name == "PassThroughProfiler":
        return refused("it profiles nothing; the script has no profiler to pass through", "use `profiler: null`")
    if name not in PROFILERS_DONE:
        return refused(
            "a profiler class is called by Lightning's Trainer around each action, and the script does not have"
            " one: it writes the code of Lightning's SimpleProfiler, AdvancedProfiler and PyTorchProfiler itself",
            served,
        )
    return None


TIMED_VALIDATION = refused(
    "the script decides when to validate by counting batches; Lightning's time-based interval, the clock read"
    " at every batch, is not written",
    "give a fraction of the epoch (float) or a number of batches (int)",
)


def val_check_interval_kind() -> Kind:
    """A fraction of the epoch (float in (0, 1]) or a number of batches (int >= 1), or Lightning's time-based forms."""
    batches = batch_limit(zero=False)

    def parse(raw: Any) -> int | float | str | dict[str, Any]:
        if isinstance(raw, (str, dict)):
            return raw  # "DD:HH:MM:SS" or timedelta kwargs: refused by `support`
        return batches.parse(raw)

    return Kind(parse, {"anyOf": [batches.schema, {"type": "string"}, {"type": "object"}]})


def callback_entries() -> Kind:
    """A list of callback entries (a single entry: a list of one); spec.py reads each entry as a class ref."""

    def parse(raw: Any) -> list[Any]:
        entries = raw if isinstance(raw, list) else [raw]
        for index, entry in enumerate(entries):
            if not isinstance(entry, (str, dict)):
                at = (index,) if isinstance(raw, list) else ()
                raise FlagError(f"expected a class path or a mapping with class_path and init_args, {got(entry)}", at)
        return entries

    return Kind(parse, {"anyOf": [{"type": "array", "items": CLASS_REF_SCHEMA}, CLASS_REF_SCHEMA]})


def track_grad_norm_kind() -> Kind:
    """Lightning 1.9: -1 (off), a p > 0 for the p-norm, or "inf"; normalised to a float."""

    def parse(raw: Any) -> float:
        if raw == "inf":
            return math.inf
        if not is_number(raw) or not (raw == -1 or raw > 0):
            raise FlagError(f'expected -1 (off), a number > 0 or "inf", {got(raw)}')
        return float(raw)

    return Kind(parse, {"anyOf": [{"type": "number"}, {"const": "inf"}]})


# name: the submodules of pytorch_lightning.callbacks it can be imported from
LIGHTNING_CALLBACKS = {
    "ModelCheckpoint": ("model_checkpoint",),
    "EarlyStopping": ("early_stopping",),
    "LearningRateMonitor": ("lr_monitor",),
    "ModelSummary": ("model_summary",),
    "RichModelSummary": ("rich_model_summary",),
    "Timer": ("timer",),
    "BackboneFinetuning": ("finetuning",),
    "WeightAveraging": ("weight_averaging",),
    "EMAWeightAveraging": ("weight_averaging",),
    "DeviceStatsMonitor": ("device_stats_monitor",),
    "ThroughputMonitor": ("throughput_monitor",),
    "ModelPruning": ("pruning",),
    "SpikeDetection": ("spike",),
    "StochasticWeightAveraging": ("stochastic_weight_avg",),
    "OnExceptionCheckpoint": ("on_exception_checkpoint",),
    "TQDMProgressBar": ("progress", "progress.tqdm_progress"),
    "RichProgressBar": ("progress", "progress.rich_progress"),
}


PROGRESS_BARS = ("TQDMProgressBar", "RichProgressBar")


def lightning_callback(class_path: str) -> str | None:
    """pytorch_lightning.callbacks.NAME for one of Lightning's callbacks that loopgen implements (LIGHTNING_CALLBACKS)
    however spelled, else None."""
    module, _, name = class_path.rpartition(".")
    if name not in LIGHTNING_CALLBACKS:
        return None
    packages = ("pytorch_lightning.callbacks", "lightning.pytorch.callbacks")
    spellings = {"", *packages, *(f"{package}.{sub}" for package in packages for sub in LIGHTNING_CALLBACKS[name])}
    return f"pytorch_lightning.callbacks.{name}" if module in spellings else None


def other_lightning_callback(class_path: str) -> str | None:
    """pytorch_lightning.callbacks.NAME for one of Lightning's callbacks that loopgen does not serve
    (OTHER_LIGHTNING_CALLBACKS), written without its module or from Lightning's package, else None."""
    module, _, name = class_path.rpartition(".")
    if name not in OTHER_LIGHTNING_CALLBACKS:
        return None
    if module == "" or module.startswith(("pytorch_lightning.callbacks", "lightning.pytorch.callbacks")):
        return f"pytorch_lightning.callbacks.{name}"
    return None


def accumulation_scheduler(class_path: str) -> bool:
    """Lightning's GradientAccumulationScheduler, however spelled: the spec's accumulation schedule."""
    module, _, name = class_path.rpartition(".")
    packages = ("pytorch_lightning.callbacks", "lightning.pytorch.callbacks")
    spellings = {"", *packages, *(f"{package}.gradient_accumulation_scheduler" for package in packages)}
    return name == "GradientAccumulationScheduler" and module in spellings


def callback_support(class_path: str) -> str | None:
    """Whether loopgen implements a `callbacks` entry (its class path canonicalised by `lightning_callback`); a
    GradientAccumulationScheduler is the spec's accumulation schedule."""
    if lightning_callback(class_path) is not None or accumulation_scheduler(class_path):
        return None
    other = other_lightning_callback(class_path)
    if other is not None:
        return refused(*OTHER_LIGHTNING_CALLBACKS[other.rpartition(".")[2]])
    if class_path.startswith(LIGHTNING_PACKAGES):
        return refused(
            "the script has no Lightning: it carries its own code for each of Lightning's callbacks it serves,"
            " and has none for this one",
            f"use {', '.join(LIGHTNING_CALLBACKS)}, or a callback class of your own with the same hooks",
        )
    return None  # the user's own callback


def number_kind() -> Kind:
    def parse(raw: Any) -> float:
        if not is_number(raw) or math.isnan(raw):
            raise FlagError(f"expected a number, {got(raw)}")
        return float(raw)

    return Kind(parse, {"type": "number"})


def save_last_kind() -> Kind:
    """ModelCheckpoint's save_last: true, false, or "link" (last.ckpt a symbolic link to the newest checkpoint)."""

    def parse(raw: Any) -> bool | str:
        if isinstance(raw, bool) or raw == "link":
            return raw
        raise FlagError(f'expected true, false or "link", {got(raw)}')

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"const": "link"}]})


_TIMEDELTA_KEYS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds")


def duration_kind() -> Kind:
    """Lightning's Timer duration (and max_time), normalised to seconds: "DD:HH:MM:SS" (Lightning's pattern), or
    datetime.timedelta's keyword arguments ({hours: 1, minutes: 30})."""
    expected = 'expected "DD:HH:MM:SS" or a mapping of timedelta arguments ({hours: 1, minutes: 30})'

    def parse(raw: Any) -> float:
        if isinstance(raw, str):
            match = re.fullmatch(r"(\d+):(\d\d):(\d\d):(\d\d)", raw.strip())
            if match is None:
                raise FlagError(f"{expected}, {got(raw)}")
            days, hours, minutes, seconds = (int(group) for group in match.groups())
            return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds).total_seconds()
        if isinstance(raw, dict) and raw:
            for key, value in raw.items():
                if key not in _TIMEDELTA_KEYS:
                    raise FlagError(
                        f"unknown timedelta argument{did_you_mean(str(key), _TIMEDELTA_KEYS)}", (show(key),)
                    )
                if not is_number(value) or value < 0:
                    raise FlagError(f"expected a number >= 0, {got(value)}", (show(key),))
            return timedelta(**raw).total_seconds()
        raise FlagError(f"{expected}, {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "string", "pattern": r"^\s*\d+:\d\d:\d\d:\d\d\s*$"}, {"type": "object"}]})


def timedelta_kind() -> Kind:
    """A duration, normalised to seconds: a number of seconds, "[D:]HH:MM:SS", or datetime.timedelta's
    keyword arguments ({hours: 1, minutes: 30})."""
    expected = 'expected a number of seconds, "HH:MM:SS" or "DD:HH:MM:SS", or a mapping of timedelta arguments'
    scale = {"weeks": 604800.0, "days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0,
             "milliseconds": 1e-3, "microseconds": 1e-6}  # fmt: skip

    def parse(raw: Any) -> float:
        if is_number(raw) and raw >= 0:
            return float(raw)
        if isinstance(raw, str):
            parts = raw.split(":")
            try:
                numbers = [float(part) for part in parts]
            except ValueError:
                raise FlagError(f"{expected}, {got(raw)}") from None
            if len(numbers) in (3, 4) and all(n >= 0 for n in numbers):
                return sum(n * unit for n, unit in zip(reversed(numbers), (1.0, 60.0, 3600.0, 86400.0)))
        if isinstance(raw, dict) and raw:
            for key, value in raw.items():
                if key not in scale:
                    raise FlagError(
                        f"unknown timedelta argument{did_you_mean(str(key), _TIMEDELTA_KEYS)}", (show(key),)
                    )
                if not is_number(value) or value < 0:
                    raise FlagError(f"expected a number >= 0, {got(value)}", (show(key),))
            return sum(scale[key] * value for key, value in raw.items())
        raise FlagError(f"{expected}, {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}, {"type": "object"}]})
