"""The profilers (simple, advanced, PyTorch)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem
from loopgen.plan.distributed import engine_kind
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import Callback
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, Spec


@dataclass(frozen=True)
class Profiling:
    """`profiler`: Lightning's SimpleProfiler, AdvancedProfiler or PyTorchProfiler over the script's sections."""

    kind: str | None  # "simple" | "advanced" | "pytorch"; None: no profiler, no timing code
    model_class: str
    data_class: str | None
    # where files go: "spec" (its dirpath) | "logger" (the first logger's log_dir) | "logger_save_dir" (its
    # save_dir: MLflow, W&B) | "root"
    directory: str | None
    dirpath: str | None  # the spec's dirpath
    # the file names, Lightning's: fit-FILENAME[-RANK][-ACTION]; the templates write them
    filename: str | None  # the spec's filename, as given (AdvancedProfiler's .prof files: the script cleans them)
    # ... with the characters a path cannot hold replaced by "_" (runs of "_" as one), as in the report's and the
    # trace's file names; None: no filename
    safe_filename: str | None
    # the filename in the report's file name (fit-FILENAME.txt, fit-FILENAME-RANK.txt): safe, and without trailing
    # whitespace when nothing follows it; None: the report is printed
    report_filename: str | None
    extended: bool  # simple: the calls and share columns
    line_count_restriction: int | float  # advanced: the functions listed per action
    dump_stats: bool  # advanced: each action's stats in a .prof file
    trace: bool  # pytorch: a trace for Chrome's trace viewer / TensorBoard, named after the training step
    row_limit: int
    sort_by_key: str | None  # None: cuda_time_total when CUDA is available, else cpu_time_total
    group_by_input_shapes: bool
    record_module_names: bool
    profile_args: Mapping[str, Any]  # torch.profiler.profile's arguments that differ from its defaults

    # strategy ddp: Lightning's strategy class in the actions' names; each process reports, its local rank in
    # the files' names (fit-FILENAME-RANK...) and the report's headers; printed by local rank 0 alone
    strategy_class: str = "SingleDeviceStrategy"
    ranked: bool = False
    # the script has validate, test or predict runs: the profiler keeps the run it reports on (`stage`, Lightning's
    # setup(stage)) for its report's title and its files' names (set by make_plan once the evaluation is known)
    stages: bool = False

    # the actions of the loop's own parts, under Lightning's names for the same code
    @property
    def training_step(self) -> str:
        return self.step_action("training_step")

    @property
    def validation_step(self) -> str:
        return self.step_action("validation_step")

    @property
    def backward(self) -> str:
        return f"[Strategy]{self.strategy_class}.backward"

    @property
    def batch_to_device(self) -> str:
        return f"[Strategy]{self.strategy_class}.batch_to_device"

    def step_action(self, step: str) -> str:
        """A step (training_step, validation_step, test_step, predict_step): the action Lightning's strategy runs
        it in."""
        return f"[Strategy]{self.strategy_class}.{step}"

    @staticmethod
    def next_action(prefix: str) -> str:
        """Fetching an evaluation run's batch ("val", "test", "predict"): the action of Lightning's loop."""
        loop = "_PredictionLoop" if prefix == "predict" else "_EvaluationLoop"
        return f"[{loop}].{prefix}_next"

    @staticmethod
    def iter_action(prefix: str) -> str:
        """Making an evaluation loader's iterator: loopgen's action, as train_iter and val_iter."""
        return f"{prefix}_dataloader_iter"

    train_next: ClassVar[str] = "[_TrainingEpochLoop].train_dataloader_next"
    val_next: ClassVar[str] = "[_EvaluationLoop].val_next"
    save_checkpoint: ClassVar[str] = "save_checkpoint"
    # ... and under loopgen's (Lightning makes its iterators inside actions of its own loops)
    train_iter: ClassVar[str] = "train_dataloader_iter"
    val_iter: ClassVar[str] = "val_dataloader_iter"

    @property
    def enabled(self) -> bool:
        return self.kind is not None

    @property
    def variant(self) -> str:
        """The template file of the profiler's code: templates/profilers/<variant>.j2."""
        return self.kind or "none"

    @property
    def writes_files(self) -> bool:
        """Something goes into the directory (the report, the trace, the raw stats)."""
        return self.report_filename is not None or self.trace or self.dump_stats

    @property
    def prints_on_local_zero(self) -> bool:
        """The report is printed (no file), by each node's first process (Lightning's _rank_zero_info) where
        several processes profile."""
        return self.report_filename is None and self.ranked

    def model_action(self, hook: str) -> str:
        """Lightning's name of a LightningModule hook's action."""
        return f"[LightningModule]{self.model_class}.{hook}"

    def data_action(self, hook: str) -> str:
        return f"[LightningDataModule]{self.data_class}.{hook}"

    @staticmethod
    def callback_action(callback: Callback, hook: str) -> str:
        """Lightning's name of a callback hook's action, by the callback's state_key (see
        Callback.keyed_at_run_time for those the script reads when it runs)."""
        return f"[Callback]{callback.state_key or callback.construct.cls}.{hook}"

    def loader_action(self, owner: str, hook: str) -> str:
        return self.data_action(hook) if owner == "data" else self.model_action(hook)


def _safe(filename: str) -> str:
    """A filename as Lightning's profilers write it into a file name: path-unsafe characters replaced."""
    return re.sub(r"_+", "_", re.sub(r"[\\/:*?\"<>|\n\r\t]", "_", filename))


def resolve_profiling(spec: Spec, logging: Logging, problems: list[Problem], notices: list[str]) -> Profiling:
    """`profiler`: which profiler, and where its report (and the PyTorch profiler's trace) go: its dirpath, else
    Lightning's trainer.log_dir (the first logger's directory, else default_root_dir; none under fast_dev_run
    with a logger, whose dummy logger has no directory)."""
    t = spec.trainer
    ref: ClassRef | None = t.profiler
    args = dict(ref.init_args) if ref is not None else {}
    kind = {"SimpleProfiler": "simple", "AdvancedProfiler": "advanced", "PyTorchProfiler": "pytorch"}.get(
        ref.name if ref is not None else ""
    )
    dirpath, filename = args.get("dirpath") or None, args.get("filename") or None
    if dirpath is not None:
        directory: str | None = "spec"
    elif t.fast_dev_run and t.logger is not False:
        directory = None
    else:
        directory = logging.log_dir
    if kind is not None and spec.accumulation_callback:
        message = refusal(
            "a profiler with a GradientAccumulationScheduler entry",
            "Lightning's report times the callback's hooks, for which the script has no code of its own",
            "give the schedule as `accumulate_grad_batches: {epoch: factor}`, or profile without it",
        )
        problems.append(flag_problem(spec, "profiler", message))
    ddp = engine_kind(spec) in ("ddp", "model_parallel", "fsdp") and kind is not None  # torchrun's processes
    strategy_classes = {"ddp": "DDPStrategy", "model_parallel": "ModelParallelStrategy", "fsdp": "FSDPStrategy"}
    strategy_class = strategy_classes.get(engine_kind(spec) or "", "SingleDeviceStrategy")
    trace = kind == "pytorch" and args["export_to_chrome"]
    if trace and directory is None:
        trace = False
        notices.append(
            "trainer.profiler: under fast_dev_run Lightning's dummy logger has no directory, so the PyTorch"
            " profiler writes no trace (set its dirpath for one)"
        )
    if kind == "advanced" and args["dump_stats"] and directory is None:
        problems.append(flag_problem(spec, "profiler", "dump_stats needs a dirpath under fast_dev_run with a logger"))
    safe = _safe(filename) if filename else None
    report_filename = None
    if safe is not None and directory is not None:
        # one process: the name ends with the filename, and its trailing whitespace goes (fit-FILENAME.txt)
        report_filename = safe if ddp else safe.rstrip()
    defaults = {"record_shapes": False, "profile_memory": False, "with_stack": False, "with_flops": False,
                "with_modules": False}  # fmt: skip
    return Profiling(
        kind=kind,
        model_class=spec.model.name,
        data_class=spec.data.name if spec.data else None,
        directory=directory if kind is not None else None,
        dirpath=dirpath,
        filename=filename,
        safe_filename=safe,
        report_filename=report_filename,
        extended=args.get("extended", True),
        line_count_restriction=args.get("line_count_restriction", 1.0),
        dump_stats=args.get("dump_stats", False),
        trace=trace,
        row_limit=args.get("row_limit", 20),
        sort_by_key=args.get("sort_by_key"),
        group_by_input_shapes=args.get("group_by_input_shapes", False) and args.get("record_shapes", False),
        record_module_names=args.get("record_module_names", True),
        profile_args={key: args[key] for key in defaults if key in args and args[key] != defaults[key]},
        strategy_class=strategy_class,
        ranked=ddp,
    )
