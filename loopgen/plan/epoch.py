"""What runs at an epoch's start, which a run resumed in the middle of the epoch has run already."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.hooks import Hooks
from loopgen.plan.optimization import Optimization
from loopgen.plan.state import State


@dataclass(frozen=True)
class Epoch:
    start_block: bool  # an epoch's start has code: a mirrored epoch counter, hooks, a schedule, outputs, a note
    resume_skips_start: bool  # ... which a run resumed in the middle of the epoch must skip


def resolve_epoch(hooks: Hooks, optimization: Optimization, checkpointing: Checkpointing, state: State) -> Epoch:
    start_block = (
        state.mirror_epoch
        or bool(hooks.callbacks_with("on_train_epoch_start"))
        or hooks.model_has("on_train_epoch_start")
        or optimization.scheduled
        or optimization.epoch_outputs
        or optimization.notes_epoch_end
    )
    return Epoch(start_block=start_block, resume_skips_start=checkpointing.resumes and start_block)
