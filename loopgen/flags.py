"""The trainer flag table: what every `trainer:` key accepts, means and defaults to.

- `FLAGS`: every argument of Lightning 2.x `Trainer.__init__`, plus the seed-era
  flags that 2.x removed and the contract keeps (amp_backend, amp_level,
  track_grad_norm, truncated_bptt_steps, terminate_on_nan).
- `ALIASES`: seed-era spellings (gpus, distributed_backend, ...), read as
  values of modern flags, with a one-line notice.

A `Flag` holds a `Kind` (validates and normalises a raw YAML value, and
describes it as a JSON Schema fragment, which schema.py assembles into the
spec's), its default (what null or absence means), a doc line, and `support`:
the predicate on the normalised value saying whether loopgen implements it. To
implement a value, edit that flag's `support=`. A value it refuses gets a
`refused(why, instead)` reason: what loopgen would have to do and does not (or
why it cannot), and the nearest thing it does serve.

Each flag is checked here on its own; rules between flags are the plan stage's
(loopgen/plan.py). Pure text work: imports neither torch nor Lightning.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopgen.errors import did_you_mean, got, kind_of, show
from loopgen.schema import CLASS_REF_SCHEMA

LIGHTNING_PACKAGES = ("pytorch_lightning.", "lightning.pytorch.", "lightning.")


class FlagError(ValueError):
    """A raw value that Lightning itself refuses.

    `at` is where below the flag's key (mapping keys as str, list indexes as
    int); the caller prefixes the flag's own key path.
    """

    def __init__(self, message: str, at: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.message = message
        self.at = at


# ---------------------------------------------------------------------------
# comparing values


def same(a: Any, b: Any) -> bool:
    """Equality that tells 1 from 1.0 and from True (Lightning gives them different meanings)."""
    return type(a) is type(b) and a == b


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------
# kinds of values: a validating normaliser plus its JSON Schema

Parser = Callable[[Any], Any]  # raw non-null YAML value -> normalised value; raises FlagError
Support = Callable[[Any], "str | None"]  # normalised value -> None if loopgen implements it, else `refused(...)`


def refused(why: str, instead: str) -> str:
    """The reason a value is refused, read after the value and "is": why loopgen does not serve it, and the
    nearest thing it does serve ("XLAProfiler is not supported by loopgen (it profiles XLA devices); use ...")."""
    return f"not supported by loopgen ({why}); {instead}"


def refusal(what: str, why: str, instead: str) -> str:
    """The whole refusal of `what`: "<what> is not supported by loopgen (<why>); <instead>"."""
    return f"{what} is {refused(why, instead)}"


@dataclass(frozen=True)
class Kind:
    parse: Parser
    schema: Mapping[str, Any]  # JSON Schema of the raw non-null value


def integer(minimum: int, meaning: str = "") -> Kind:
    """An int >= minimum (neither a bool nor a float)."""
    expected = f"an integer >= {minimum}" + (f" ({meaning})" if meaning else "")

    def parse(raw: Any) -> int:
        if not _is_int(raw) or raw < minimum:
            raise FlagError(f"expected {expected}, {got(raw)}")
        return raw

    return Kind(parse, {"type": "integer", "minimum": minimum})


def boolean() -> Kind:
    def parse(raw: Any) -> bool:
        if not isinstance(raw, bool):
            raise FlagError(f"expected true or false, {got(raw)}")
        return raw

    return Kind(parse, {"type": "boolean"})


def string() -> Kind:
    def parse(raw: Any) -> str:
        if not isinstance(raw, str):
            raise FlagError(f"expected a string, {got(raw)}")
        return raw

    return Kind(parse, {"type": "string"})


def choice(*options: str, aliases: Mapping[str | int, str] | None = None, lower: bool = False) -> Kind:
    """One of `options`, or an alias of one (normalised to it). `lower`: case-insensitive (Lightning's strategy)."""
    aliases = dict(aliases or {})
    accepted = list(dict.fromkeys([*options, *(str(alias) for alias in aliases)]))

    def parse(raw: Any) -> str:
        if type(raw) in (str, int):
            key = raw.lower() if lower and isinstance(raw, str) else raw
            if key in aliases:
                return aliases[key]
            if key in options:
                return key
        hint = did_you_mean(raw, accepted) if isinstance(raw, str) else ""
        raise FlagError(f"expected one of {', '.join(accepted)}, {got(raw)}{hint}")

    return Kind(parse, {"enum": list(dict.fromkeys([*options, *aliases]))})


def batch_limit(*, zero: bool = True) -> Kind:
    """Lightning's `_determine_batch_limits`: a float fraction in [0, 1] or an int count.

    An integral float above 1 becomes an int, as in Lightning. `zero=False`
    (val_check_interval) refuses 0 and 0.0.
    """
    low, least = ("[", 0) if zero else ("(", 1)
    expected = f"expected a float in {low}0.0, 1.0] (a fraction) or an integer >= {least} (a count)"

    def parse(raw: Any) -> int | float:
        if not _is_number(raw) or raw < 0 or (raw == 0 and not zero):
            raise FlagError(f"{expected}, {got(raw)}")
        if isinstance(raw, float) and raw > 1:
            if not raw.is_integer():
                raise FlagError(f"{expected}, {got(raw)}")
            return int(raw)
        return raw

    fraction = {"type": "number", "minimum" if zero else "exclusiveMinimum": 0, "maximum": 1}
    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": least}, fraction]})


def anything() -> Kind:
    """Any value: for Lightning arguments of which loopgen accepts only the default."""
    return Kind(lambda raw: raw, {})


def _class_path_of(raw: Any, expected: str) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("class_path"), str):
        return raw["class_path"]
    raise FlagError(f"expected {expected}, {got(raw)}")


def _fast_dev_run() -> Kind:
    """false, true (= 1) or a number of batches; normalised to an int."""

    def parse(raw: Any) -> int:
        if isinstance(raw, bool):
            return int(raw)
        if not _is_int(raw) or raw < 0:
            raise FlagError(f"expected true, false or an integer >= 0, {got(raw)}")
        return raw

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"type": "integer", "minimum": 0}]})


def _devices() -> Kind:
    """Lightning's devices: a count, -1 (all), "auto", a "0,1" string or a list of indices.

    Normalised to a count ("auto" -> 1 as the contract says, [0, ..., n-1] -> n,
    -1 stays -1), or a tuple of device indices when they are not 0..n-1.
    """
    expected = 'expected "auto", an integer >= 1, -1 (all devices), or a list of device indices'

    def indices(values: list[Any], raw: Any) -> int | tuple[int, ...]:
        if not values or not all(_is_int(v) and v >= 0 for v in values) or len(set(values)) != len(values):
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
        if _is_int(count) and (count >= 1 or count == -1):
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


def _timeout_seconds(raw: Any) -> float:
    """DDPStrategy(timeout=...): seconds, or a timedelta as LightningCLI writes it ("0:30:00", "1 day, 0:00:00")."""
    if _is_number(raw) and raw > 0:
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


def _strategy() -> Kind:
    """A registered strategy name (case-insensitive; single_device -> auto), or a `{class_path: DDPStrategy,
    init_args: {...}}` entry, normalised to {"class_path": "DDPStrategy", "init_args": {...}} with a timeout in
    seconds."""
    names = choice(*_STRATEGIES, aliases={"single_device": "auto"}, lower=True)
    kinds = {"find_unused_parameters": boolean(), "static_graph": boolean(), "gradient_as_bucket_view": boolean(),
             "process_group_backend": choice("gloo", "nccl")}  # fmt: skip

    def parse(raw: Any) -> Any:
        if not isinstance(raw, dict):
            return names.parse(raw)
        class_path = _class_path_of(raw, "a strategy name or an entry with a class_path")
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


STRATEGIES_DONE = ("auto", *DDP_STRATEGIES, "horovod", "dp")
_LAUNCHED = ("_spawn", "_fork", "_notebook")  # the DDP strategies that start their processes from the program


def _strategy_support(value: Any) -> str | None:
    """A strategy entry is named by its class_path in the refusal (spec.py), so its reasons read after it."""
    served = "use a strategy name (ddp, dp, horovod) or a DDPStrategy entry"
    if isinstance(value, dict):
        if value["class_path"] not in DDP_STRATEGY_PATHS:
            return refused(
                "of Lightning's strategy classes the script reproduces DDPStrategy's work only; another strategy"
                " object is Lightning code the script does not have",
                served,
            )
        unknown = [key for key in value["init_args"] if key not in DDP_STRATEGY_ARGS]
        if unknown:
            return refused(
                f"with {unknown[0]}: the script builds DistributedDataParallel and its process group from"
                f" {', '.join(DDP_STRATEGY_ARGS)} only, and torchrun starts its processes",
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
    if value.startswith("fsdp"):
        return refused(
            "the script does not shard the parameters, gradients and optimizer state, nor save sharded"
            " checkpoints, as FSDP does",
            "use ddp, which keeps a full copy of the model on each device",
        )
    return refused(  # single_tpu, single_xla, xla, xla_debug
        "the TPU strategies are chosen from the accelerator and the device count, not named",
        "use `accelerator: tpu` with `strategy: auto` (devices: 1 for one TPU core, more for one process each)",
    )


def _devices_support(value: Any) -> str | None:
    if _is_int(value) and value >= 1:
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


_PRECISION_ALIASES: Mapping[str | int, str] = {
    64: "64", "64": "64", "64-true": "64",
    32: "32", "32": "32", "32-true": "32",
    16: "16-mixed", "16": "16-mixed",
    "bf16": "bf16-mixed",
}  # fmt: skip
_PRECISION_TRUE_HALF = ("16-true", "bf16-true")
# Lightning's TransformerEnginePrecision: NVIDIA Transformer Engine's FP8 layers, weights in bf16 or float16
_TRANSFORMER_ENGINE = {"transformer-engine": "bf16", "transformer-engine-float16": "16"}


def _precision_support(value: str) -> str | None:
    if value in _TRANSFORMER_ENGINE:
        half = _TRANSFORMER_ENGINE[value]
        weights = "bfloat16" if half == "bf16" else "float16"
        return refused(
            "NVIDIA's Transformer Engine replaces the model's Linear and LayerNorm layers with its FP8 ones and runs"
            " them under its FP8 autocast (CUDA only, the transformer_engine package); the script would have to"
            " make that conversion, and does not",
            f"use {half}-mixed, or {half}-true for {weights} weights",
        )
    return None


def _precision_notice(raw: Any) -> str | None:
    # the spellings Lightning 2.x also warns about ("supported for historical reasons")
    if type(raw) in (str, int) and raw in (16, "16", "bf16"):
        return f"{show(raw)} is a seed-era spelling, read as `precision: {_PRECISION_ALIASES[raw]}`"
    return None


def _accumulate() -> Kind:
    """An int >= 1, or the seed's {epoch: factor} schedule (Lightning 1.x's GradientAccumulationScheduler).

    A schedule is normalised as that scheduler does: sorted, with factor 1 from
    epoch 0 when epoch 0 is not given.
    """

    def parse(raw: Any) -> int | dict[int, int]:
        if _is_int(raw) and raw >= 1:
            return raw
        if not isinstance(raw, dict):
            raise FlagError(f"expected an integer >= 1 or a mapping {{epoch: factor}}, {got(raw)}")
        if not raw:
            raise FlagError("the {epoch: factor} mapping is empty")
        for epoch, factor in raw.items():
            if not _is_int(epoch) or epoch < 0:
                message = f"epoch keys must be integers >= 0, got {show(epoch)} ({kind_of(epoch)})"
                raise FlagError(message, (show(epoch),))
            if not _is_int(factor) or factor < 1:
                raise FlagError(f"accumulation factors must be integers >= 1, {got(factor)}", (show(epoch),))
        return dict(sorted({0: 1, **raw}.items()))

    schedule = {
        "type": "object",
        "propertyNames": {"pattern": "^[0-9]+$"},
        "additionalProperties": {"type": "integer", "minimum": 1},
        "minProperties": 1,
    }
    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 1}, schedule]})


def _gradient_clip_val() -> Kind:
    """A number; normalised to a float, or to None when <= 0 (Lightning does not clip then)."""

    def parse(raw: Any) -> float | None:
        if not _is_number(raw) or math.isnan(raw):
            raise FlagError(f"expected a number, {got(raw)}")
        return float(raw) if raw > 0 else None

    return Kind(parse, {"type": "number"})


def _deterministic() -> Kind:
    """true, false, or Lightning's "warn"."""

    def parse(raw: Any) -> bool | str:
        return raw if isinstance(raw, bool) else choice("warn").parse(raw)

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"const": "warn"}]})


def _logger() -> Kind:
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


def _version() -> Kind:
    """A logger's version: a number (the directory version_N) or a name (the directory itself)."""

    def parse(raw: Any) -> int | str:
        if isinstance(raw, str) or (_is_int(raw) and raw >= 0):
            return raw
        raise FlagError(f"expected an integer >= 0 or a string, {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]})


def _tags() -> Kind:
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


def _log_model() -> Kind:
    """MLFlowLogger's / WandbLogger's log_model: false, true or "all" (only false is implemented)."""

    def parse(raw: Any) -> bool | str:
        if isinstance(raw, bool) or raw == "all":
            return raw
        raise FlagError(f'expected true, false or "all", {got(raw)}')

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"const": "all"}]})


def _no_model_logging(logger: str) -> Support:
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


def _profiler() -> Kind:
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


_TIMED_VALIDATION = refused(
    "the script decides when to validate by counting batches; Lightning's time-based interval, the clock read"
    " at every batch, is not written",
    "give a fraction of the epoch (float) or a number of batches (int)",
)


def _val_check_interval() -> Kind:
    """A fraction of the epoch (float in (0, 1]) or a number of batches (int >= 1), or Lightning's time-based forms."""
    batches = batch_limit(zero=False)

    def parse(raw: Any) -> int | float | str | dict[str, Any]:
        if isinstance(raw, (str, dict)):
            return raw  # "DD:HH:MM:SS" or timedelta kwargs: refused by `support`
        return batches.parse(raw)

    return Kind(parse, {"anyOf": [batches.schema, {"type": "string"}, {"type": "object"}]})


def _callback_entries() -> Kind:
    """A list of callback entries (a single entry: a list of one); spec.py reads each entry as a class ref."""

    def parse(raw: Any) -> list[Any]:
        entries = raw if isinstance(raw, list) else [raw]
        for index, entry in enumerate(entries):
            if not isinstance(entry, (str, dict)):
                at = (index,) if isinstance(raw, list) else ()
                raise FlagError(f"expected a class path or a mapping with class_path and init_args, {got(entry)}", at)
        return entries

    return Kind(parse, {"anyOf": [{"type": "array", "items": CLASS_REF_SCHEMA}, CLASS_REF_SCHEMA]})


def _track_grad_norm() -> Kind:
    """Lightning 1.9: -1 (off), a p > 0 for the p-norm, or "inf"; normalised to a float."""

    def parse(raw: Any) -> float:
        if raw == "inf":
            return math.inf
        if not _is_number(raw) or not (raw == -1 or raw > 0):
            raise FlagError(f'expected -1 (off), a number > 0 or "inf", {got(raw)}')
        return float(raw)

    return Kind(parse, {"anyOf": [{"type": "number"}, {"const": "inf"}]})


# ---------------------------------------------------------------------------
# Lightning's own callbacks

# name: the submodules of pytorch_lightning.callbacks it can be imported from
LIGHTNING_CALLBACKS = {
    "ModelCheckpoint": ("model_checkpoint",),
    "EarlyStopping": ("early_stopping",),
    "LearningRateMonitor": ("lr_monitor",),
    "ModelSummary": ("model_summary",),
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


def callback_support(class_path: str) -> str | None:
    """Whether loopgen implements a `callbacks` entry (its class path canonicalised by `lightning_callback`)."""
    if lightning_callback(class_path) is not None:
        return None
    if class_path.startswith(LIGHTNING_PACKAGES):
        nearest = _NEAREST_CALLBACKS.get(class_path.rpartition(".")[2], "")
        return refused(
            "the script has no Lightning: it carries its own code for each of Lightning's callbacks it serves,"
            " and has none for this one",
            f"{nearest}use {', '.join(LIGHTNING_CALLBACKS)}, or a callback class of your own with the same hooks",
        )
    return None  # the user's own callback


# What a few of Lightning's other callbacks do that loopgen serves otherwise
_NEAREST_CALLBACKS = {
    "GradientAccumulationScheduler": "give `accumulate_grad_batches: {epoch: factor}` (the same schedule); or ",
    "RichModelSummary": "use ModelSummary (the same table, without rich); or ",
    "Timer": "bound the run with max_epochs or max_steps; or ",
}


def _number() -> Kind:
    def parse(raw: Any) -> float:
        if not _is_number(raw) or math.isnan(raw):
            raise FlagError(f"expected a number, {got(raw)}")
        return float(raw)

    return Kind(parse, {"type": "number"})


def _line_count() -> Kind:
    """pstats' restriction: an int count of lines, or a float fraction in [0, 1] of them."""

    def parse(raw: Any) -> int | float:
        if _is_int(raw) and raw >= 0 or isinstance(raw, float) and 0.0 <= raw <= 1.0:
            return raw
        raise FlagError(f"expected an integer >= 0 (a count) or a float in [0.0, 1.0] (a fraction), {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "number", "minimum": 0, "maximum": 1}]})


def _save_last() -> Kind:
    """ModelCheckpoint's save_last: true, false, or "link" (last.ckpt a symbolic link to the newest checkpoint)."""

    def parse(raw: Any) -> bool | str:
        if isinstance(raw, bool) or raw == "link":
            return raw
        raise FlagError(f'expected true, false or "link", {got(raw)}')

    return Kind(parse, {"anyOf": [{"type": "boolean"}, {"const": "link"}]})


_TIMEDELTA_KEYS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds")


def _timedelta() -> Kind:
    """A duration, normalised to seconds: a number of seconds, "[D:]HH:MM:SS", or datetime.timedelta's
    keyword arguments ({hours: 1, minutes: 30})."""
    expected = 'expected a number of seconds, "HH:MM:SS" or "DD:HH:MM:SS", or a mapping of timedelta arguments'
    scale = {"weeks": 604800.0, "days": 86400.0, "hours": 3600.0, "minutes": 60.0, "seconds": 1.0,
             "milliseconds": 1e-3, "microseconds": 1e-6}  # fmt: skip

    def parse(raw: Any) -> float:
        if _is_number(raw) and raw >= 0:
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
                if not _is_number(value) or value < 0:
                    raise FlagError(f"expected a number >= 0, {got(value)}", (show(key),))
            return sum(scale[key] * value for key, value in raw.items())
        raise FlagError(f"{expected}, {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}, {"type": "object"}]})


# ---------------------------------------------------------------------------
# support predicates


def implemented(value: Any) -> str | None:
    return None


def only(*done: Any, why: str, instead: str) -> Support:
    """Implemented for the `done` values; another is refused, saying why and what to use instead."""
    reason = refused(why, instead)
    return lambda value: None if any(same(value, d) for d in done) else reason


def lightning_default(default: Any, why: str, instead: str) -> Support:
    """For the Lightning arguments that the contract does not name: only the default is accepted."""
    return only(default, why=why, instead=instead)


# ---------------------------------------------------------------------------
# the table


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

    def parse(self, raw: Any) -> Any:
        return None if raw is None else self.kind.parse(raw)


def _default_not_implemented(what: str, consequence: str, flag: str) -> str:
    return f"Lightning's default {what} is not implemented yet; {consequence} (set `{flag}: false` to silence this)"


def _lightning_only(name: str, kind: Kind, default: Any, doc: str, why: str, instead: str) -> Flag:
    """A Lightning argument the contract does not name: accepted at its default (or null) only; another value is
    refused, saying why and what to do instead."""
    schema = {"const": default} if default is not None else {"type": "null"}
    support = lightning_default(default, why, instead)
    return Flag(name, Kind(kind.parse, {**kind.schema, **schema}), default, doc, support=support)


# fmt: off
FLAGS: tuple[Flag, ...] = (
    # --- Lightning 2.x Trainer arguments, in the order of its signature
    Flag("accelerator", choice("auto", "cpu", "cuda", "mps", "tpu", aliases={"gpu": "cuda"}), "auto",
         "auto (cuda when available, else cpu; decided when the script starts), cpu, gpu/cuda, tpu",
         support=only("auto", "cpu", "cuda", "tpu",
                      why="the script places the model and batches on a CPU, a CUDA GPU or a TPU; Apple's MPS"
                          " device would need its own placement and checks against Lightning's MPSAccelerator",
                      instead="use cpu (or auto)")),
    Flag("strategy", _strategy(), "auto",
         "auto/single_device, ddp (ddp_find_unused_parameters_true/false, or a DDPStrategy entry), dp, horovod",
         support=_strategy_support),
    Flag("devices", _devices(), 1, "auto (= 1), or a device count (> 1: one process per device, strategy ddp)",
         support=_devices_support),
    Flag("num_nodes", integer(1), 1, "number of nodes (> 1: strategy ddp, launched with torchrun on each)",
         support=implemented),
    Flag("precision", choice("32", "64", "16-mixed", "bf16-mixed", *_PRECISION_TRUE_HALF, *_TRANSFORMER_ENGINE,
                             aliases=_PRECISION_ALIASES),
         "32", "32, 16-mixed (16), bf16-mixed (bf16), bf16-true, 16-true (the weights in that dtype), 64",
         support=_precision_support,
         notice=_precision_notice),
    Flag("logger", _logger(), True, "true (a CSVLogger with Lightning's layout), false, or logger entries:"
         " CSVLogger, TensorBoardLogger, MLFlowLogger, WandbLogger (a list for several)",
         support=implemented),  # each entry is checked by `logger_support`
    Flag("callbacks", _callback_entries(), (),
         "list of {class_path, init_args}: ModelCheckpoint, EarlyStopping or the user's own callback class",
         support=implemented),  # each entry is checked by `callback_support`
    Flag("fast_dev_run", _fast_dev_run(), 0, "false, true (= 1) or a number of batches",
         support=implemented),
    Flag("max_epochs", integer(-1, "-1: no limit"), None, "stop after this many epochs (null: 1000 unless max_steps)",
         support=implemented),
    Flag("min_epochs", integer(0), None, "train at least this many epochs",
         support=implemented),
    Flag("max_steps", integer(-1, "-1: no limit"), -1, "stop after this many optimizer steps (-1: no limit)",
         support=implemented),
    Flag("min_steps", integer(0), None, "train at least this many optimizer steps",
         support=implemented),
    _lightning_only("max_time", anything(), None, "stop after this much time",
                    why="the script does not time the run: Lightning's Timer callback reads the clock after every"
                        " batch and epoch, and keeps the elapsed time in checkpoints",
                    instead="bound the run with max_epochs or max_steps"),
    Flag("limit_train_batches", batch_limit(), 1.0, "fraction (float) or number (int) of training batches per epoch",
         support=implemented),
    Flag("limit_val_batches", batch_limit(), 1.0, "fraction (float) or number (int) of validation batches",
         support=implemented),
    _lightning_only("limit_test_batches", batch_limit(), 1.0, "fraction or number of test batches",
                    why="it limits Lightning's test run; the script only trains, with no test loop to limit",
                    instead="remove it: fit does not read it"),
    _lightning_only("limit_predict_batches", batch_limit(), 1.0, "fraction or number of predict batches",
                    why="it limits Lightning's predict run; the script only trains, with no predict loop to"
                        " limit",
                    instead="remove it: fit does not read it"),
    Flag("overfit_batches", batch_limit(), 0.0, "overfit on this fraction (float) or number (int) of batches",
         support=implemented),
    Flag("val_check_interval", _val_check_interval(), 1.0,
         "validate after this fraction of an epoch (float) or number of batches (int)",
         support=lambda value: None if _is_number(value) else _TIMED_VALIDATION),
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
    Flag("accumulate_grad_batches", _accumulate(), 1,
         "accumulate gradients over k batches, or {epoch: factor} (the seed's accumulation scheduler)",
         support=implemented),
    Flag("gradient_clip_val", _gradient_clip_val(), None, "clip gradients at this value (null or <= 0: off)",
         support=implemented),
    Flag("gradient_clip_algorithm", choice("norm", "value", lower=True), "norm", "norm or value",
         support=implemented),
    Flag("deterministic", _deterministic(), False, "use deterministic algorithms",
         support=only(False, True,
                      why="the script turns torch's deterministic algorithms on or leaves them off; their"
                          " warn-only mode is not written",
                      instead="use true (an error where an operation is not deterministic) or false")),
    Flag("benchmark", boolean(), None, "torch.backends.cudnn.benchmark (null: leave it as it is)",
         support=implemented),
    _lightning_only("inference_mode", boolean(), True, "evaluate under torch.inference_mode",
                    why="it applies to Lightning's validate, test and predict runs, which the script does not have;"
                        " fit validates under torch.no_grad either way",
                    instead="remove it"),
    _lightning_only("use_distributed_sampler", boolean(), True, "wrap samplers in a DistributedSampler",
                    why="with ddp the script shards every loader with a DistributedSampler, as Lightning's default"
                        " does; keeping each loader's own sampler is not written",
                    instead="leave it true (on one device it changes nothing)"),
    Flag("profiler", _profiler(), None, "null, simple, advanced, pytorch, or a profiler entry: SimpleProfiler,"
         " AdvancedProfiler, PyTorchProfiler", support=implemented),  # read by spec.py, checked by `profiler_support`
    _lightning_only("detect_anomaly", boolean(), False, "autograd anomaly detection",
                    why="the script does not run under torch.autograd.set_detect_anomaly",
                    instead="call torch.autograd.set_detect_anomaly(True) in your module's __init__ (the same"
                            " switch, for the whole run)"),
    _lightning_only("barebones", boolean(), False, "Lightning's barebones mode",
                    why="the script has no such mode: it leaves out what each flag turns off",
                    instead="turn the parts off one by one: logger, enable_checkpointing, enable_progress_bar and"
                            " enable_model_summary false"),
    _lightning_only("plugins", anything(), None, "Lightning plugins",
                    why="a plugin replaces a part of Lightning's Trainer, such as its precision, cluster"
                        " environment or checkpoint IO, which the script does not have",
                    instead="set the precision with `precision:`; leave plugins null"),
    _lightning_only("sync_batchnorm", boolean(), False, "synchronise batch norm statistics across processes",
                    why="the script does not convert the model's BatchNorm layers to torch.nn.SyncBatchNorm before"
                        " DistributedDataParallel wraps it",
                    instead="leave it false: each process normalises by its own batch"),
    Flag("reload_dataloaders_every_n_epochs", integer(0), 0, "reload the dataloaders every n epochs (0: never)",
         support=implemented),
    Flag("default_root_dir", string(), None, "where logs and checkpoints go (null: the working directory)",
         support=implemented),
    _lightning_only("enable_autolog_hparams", boolean(), True, "log hyperparameters at the start",
                    why="the script gives the hyperparameters to its logger at the start, as Lightning's default"
                        " does, and has no switch to skip that",
                    instead="leave it true, or turn the logger off (`logger: false`)"),
    _lightning_only("model_registry", anything(), None, "model hub name",
                    why="Lightning uploads the checkpoints to its model registry through the litmodels package;"
                        " the script does not",
                    instead="leave it null and upload the checkpoint files yourself"),
    # --- seed-era flags that Lightning 2.0 removed (Lightning 1.9.5's meaning)
    Flag("amp_backend", choice("native", "apex"), "native", "native or apex",
         support=implemented),
    Flag("amp_level", choice("O0", "O1", "O2", "O3"), None, "apex optimisation level, with amp_backend apex (null: O2)",
         support=implemented),
    Flag("track_grad_norm", _track_grad_norm(), -1.0, "-1 (off), or log the p-norm of the gradients",
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


# The init_args of Lightning's callbacks (Lightning 2.x's names and defaults), checked like trainer flags.
# fmt: off
CALLBACK_ARGS: Mapping[str, tuple[Flag, ...]] = {
    "ModelCheckpoint": (
        _arg("dirpath", string(), None, "where the checkpoints go (null: the logger's or default_root_dir's)"),
        _arg("filename", string(), None, 'the file name template (null: "{epoch}-{step}")'),
        _arg("monitor", string(), None, "the metric that ranks checkpoints (null: the newest is kept)"),
        _arg("verbose", boolean(), False, "say what is saved"),
        _arg("save_last", _save_last(), None, 'also keep last.ckpt (true), or a link to the newest ("link")',
             nullable=True),
        _arg("save_top_k", integer(-1, "-1: all, 0: none"), 1, "how many of the best checkpoints to keep"),
        _arg("save_on_exception", boolean(), False, "save when training raises",
             support=lightning_default(False, "the script does not catch an error raised in training to save a"
                                              " checkpoint before raising it again",
                                       "leave it false and resume from the last checkpoint saved")),
        _arg("save_weights_only", boolean(), False, "save the weights only"),
        _arg("mode", choice("min", "max"), "min", "whether a lower (min) or higher (max) metric is better"),
        _arg("auto_insert_metric_name", boolean(), True, 'write "name=" before each placeholder of filename'),
        _arg("every_n_train_steps", integer(0), None, "save every n optimizer steps", nullable=True),
        _arg("train_time_interval", _timedelta(), None, "save after this much training time", nullable=True),
        _arg("every_n_epochs", integer(0), None, "save every n epochs", nullable=True),
        _arg("save_on_train_epoch_end", boolean(), None, "save at the training epoch's end (null: decided by"
             " the validation cadence)", nullable=True),
        _arg("enable_version_counter", boolean(), True, 'add "-v1", "-v2", ... to a name already taken'),
    ),
    "EarlyStopping": (
        _arg("monitor", string(), None, "the metric to watch (required)"),
        _arg("min_delta", _number(), 0.0, "the least change that counts as an improvement"),
        _arg("patience", integer(0), 3, "checks without improvement before stopping"),
        _arg("verbose", boolean(), False, "say what is decided"),
        _arg("mode", choice("min", "max"), "min", "whether a lower (min) or higher (max) metric is better"),
        _arg("strict", boolean(), True, "stop with an error when the metric is missing"),
        _arg("check_finite", boolean(), True, "stop when the metric becomes nan or inf"),
        _arg("stopping_threshold", _number(), None, "stop once the metric reaches this value", nullable=True),
        _arg("divergence_threshold", _number(), None, "stop once the metric is worse than this value",
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
    "ModelSummary": (
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
        _arg("line_count_restriction", _line_count(), 1.0, "the functions listed per action: a count (int) or a"
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
        _arg("version", _version(), None, "version_N for a number, the name itself for a string (null: the next"
             " free version_N)", nullable=True),
        _arg("prefix", string(), "", "put before each metric's name (joined with -)"),
        _arg("flush_logs_every_n_steps", integer(1), 100, "accepted; as under Lightning's Trainer, metrics.csv is"
             " written after every logging step"),
    ),
    "TensorBoardLogger": (
        _arg("save_dir", string(), None, "the directory of the logs (required)"),
        _arg("name", string(), "lightning_logs", "the experiment's directory in save_dir (null or empty: none)",
             nullable=True),
        _arg("version", _version(), None, "version_N for a number, the name itself for a string (null: the next"
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
        _arg("tags", _tags(), None, "the run's tags", nullable=True),
        _arg("save_dir", string(), "./mlruns", "the local file store, when tracking_uri is null"),
        _arg("log_model", _log_model(), False, "log the checkpoints as artifacts",
             support=_no_model_logging("MLflow")),
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
        _arg("log_model", _log_model(), False, "log the checkpoints as artifacts",
             support=_no_model_logging("W&B")),
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


# ---------------------------------------------------------------------------
# seed-era spellings

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
    _class_path_of(raw, "true, false or an EarlyStopping entry with a class_path")
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
