"""The module-level constants the script declares."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.plan.bounds import Bounds
from loopgen.plan.build import Build
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.loggers import Logging
from loopgen.plan.profiling import Profiling
from loopgen.plan.state import State
from loopgen.plan.validation import Validation


@dataclass(frozen=True)
class Constants:
    """The configuration constants the script declares, beside those a single flag decides."""

    seed: bool
    max_epochs: bool
    max_steps: bool
    num_sanity_val_steps: bool
    root_dir: bool  # the script needs default_root_dir (checkpoints, or a logger's directory)
    default_root_dir: str | None  # ... and the spec names it (DEFAULT_ROOT_DIR)


def resolve_constants(
    build: Build,
    state: State,
    bounds: Bounds,
    validation: Validation,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
) -> Constants:
    # the SLURM checkpoints, or a default checkpoint directory outside a logger's (DDP has no SLURM code)
    in_root = checkpointing.requeues or (checkpointing.default_dir and not checkpointing.versioned)
    root_dir = (checkpointing.saves and in_root) or any(logger.in_root_dir for logger in logging.loggers)
    root_dir = root_dir or checkpointing.default_dir_in_run  # an MLflow or W&B run's: under save_dir, else the root
    root_dir = root_dir or (profiling.writes_files and profiling.directory == "root")
    root_dir = root_dir or state.has("default_root_dir")
    root_dir = root_dir or (state.has("log_dir") and logging.log_dir == "root")  # trainer.log_dir without a logger
    return Constants(
        seed=build.seed is not None,
        max_epochs=bounds.loop_until in ("epochs", "epochs_and_steps") or state.has("max_epochs"),
        max_steps=bounds.step_limit or state.has("max_steps"),
        num_sanity_val_steps=validation.sanity and not validation.sanity_all,
        root_dir=root_dir,
        default_root_dir=checkpointing.default_root_dir if root_dir else None,
    )
