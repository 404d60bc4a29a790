"""The script's import lines."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.plan.bounds import Bounds
from loopgen.plan.build import Build
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.data import Data
from loopgen.plan.loggers import Logging
from loopgen.plan.metrics import Metrics
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Precision
from loopgen.plan.profiling import Profiling
from loopgen.plan.progress import Progress
from loopgen.plan.state import State
from loopgen.plan.summary import Summary
from loopgen.plan.validation import Validation


@dataclass(frozen=True)
class Imports:
    """The standard-library and torch imports the script needs."""

    argparse: bool
    copy: bool
    cprofile: bool
    csv: bool
    enum: bool
    glob: bool
    json: bool
    io: bool
    math: bool
    pickle: bool  # pickle.UnpicklingError: a checkpoint weights_only loading refuses
    pstats: bool
    re: bool
    signal: bool
    subprocess: bool
    shutil: bool
    time: bool
    timedelta: bool
    os: bool
    random: bool
    sys: bool
    warnings: bool
    sequence: bool
    contextmanager: bool
    dataclass: bool
    field: bool
    simple_namespace: bool
    accumulate: bool
    samplers: bool
    apex: bool
    mutable_mapping: bool
    dataclass_functions: bool  # asdict, is_dataclass
    tensorboard: bool
    hparams_summaries: bool  # torch.utils.tensorboard.summary.hparams
    mlflow: bool
    mlflow_params: bool
    wandb: bool
    tqdm: bool
    rich: bool
    torchmetrics: bool = False
    nullcontext: bool = False  # DDP's all-reduce only on the batch that steps (`with nullcontext() if should_step`)


def resolve_imports(
    build: Build,
    state: State,
    data: Data,
    bounds: Bounds,
    validation: Validation,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    metrics: Metrics,
    checkpointing: Checkpointing,
    logging: Logging,
    summary: Summary,
    profiling: Profiling,
    progress: Progress,
) -> Imports:
    saves = checkpointing.saves
    profiles = profiling.enabled
    return Imports(
        math=state.estimates or profiling.kind == "simple",
        cprofile=profiling.kind == "advanced",
        io=profiling.kind == "advanced",
        pickle=checkpointing.resumes,
        pstats=profiling.kind == "advanced",
        csv="csv" in logging.kinds,
        enum=logging.writes_yaml,
        json=logging.hparams and "wandb" in logging.kinds,
        os=build.deterministic
        or state.has("default_root_dir")
        or state.has("log_dir")
        or checkpointing.resumes
        or logging.enabled
        or profiles
        or progress.kind == "tqdm",
        random=build.seeds or validation.sanity or saves,
        sys=build.seeds or validation.sanity or saves or progress.own or progress.kind == "tqdm",
        warnings=optimizers.general_schedulers
        or optimizers.lenient_plateau
        or bounds.holds_stop
        or checkpointing.resumes
        or bool(checkpointing.stopping.get("lenient"))
        or logging.warns
        or (logging.lr_monitor is not None and logging.lr_monitor.momentum)
        or (summary.enabled and summary.unsupported_precision is not None)
        or profiling.kind == "pytorch"
        or (progress.version and progress.metrics),
        argparse=checkpointing.resumes or logging.flattens,
        copy=checkpointing.saves,
        glob=checkpointing.searches_versions,
        re=bool(checkpointing.checkpoints)
        or checkpointing.resumes
        or logging.writes_yaml
        or "mlflow" in logging.kinds
        or profiling.dump_stats,
        signal=checkpointing.stops_on_signals,
        subprocess=checkpointing.requeues,
        shutil=progress.own,
        time=checkpointing.time_triggered or "mlflow" in logging.kinds or profiling.kind == "simple" or progress.own,
        timedelta=checkpointing.time_triggered or progress.kind == "rich",
        sequence=optimization.tbptt and not optimization.tbptt_split_hook,
        contextmanager=precision.casts or profiles,
        dataclass=metrics.collect
        or bool(checkpointing.checkpoints)
        or bool(checkpointing.stopping.get("lenient"))
        or logging.enabled
        or state.has("lr_scheduler_configs"),
        field=bool(checkpointing.checkpoints),
        simple_namespace=state.exists,
        accumulate=optimization.frequencies is not None,
        samplers=data.sequential,
        apex=precision.apex,
        mutable_mapping=logging.flattens,
        dataclass_functions=logging.flattens,
        tensorboard="tensorboard" in logging.kinds,
        hparams_summaries=logging.hp_metric,
        mlflow="mlflow" in logging.kinds,
        mlflow_params="mlflow" in logging.kinds and logging.hparams,
        wandb="wandb" in logging.kinds,
        tqdm=progress.kind == "tqdm",
        rich=progress.kind == "rich",
    )
