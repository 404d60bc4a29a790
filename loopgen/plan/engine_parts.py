"""What an engine's resolver reads: the spec and the parts of the plan resolved before the engine."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.data import Data
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import is_lightning
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Precision
from loopgen.plan.profiling import Profiling
from loopgen.plan.progress import Progress
from loopgen.plan.timer import Timer
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class EngineParts:
    """One argument for the engine resolvers (ddp, model_parallel, dp, horovod, xla), which each read most of these;
    `problems` collects what they refuse."""

    @property
    def timed_stop(self) -> bool:
        """A Timer stops training: rank 0's clock decides for every process (Lightning broadcasts it)."""
        return self.timer is not None and self.timer.stops

    @property
    def reduces_decisions(self) -> bool:
        """One process's decision holds for all (Lightning's reduce_boolean_decision): EarlyStopping's stop (a
        subclass's too), SpikeDetection's spike."""
        spikes = any(is_lightning(ref, "SpikeDetection") for ref in self.spec.trainer.callbacks)
        return bool(self.checkpointing.early_stopping) or self.checkpointing.stopping_subclassed or spikes

    spec: Spec
    model: ClassFacts
    precision: Precision
    optimizers: Optimizers
    optimization: Optimization
    data: Data
    checkpointing: Checkpointing
    logging: Logging
    profiling: Profiling
    progress: Progress
    timer: Timer | None
    problems: list[Problem]
