"""The hooks the script calls: the user's code's, and Lightning's own callbacks (ModelCheckpoint, EarlyStopping,
LearningRateMonitor, the bar, the summary) in the order Lightning calls them."""

from __future__ import annotations

from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.hooks import VALIDATION_CALLBACK_HOOKS, Hooks, UserCode
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import Callback, is_lightning, numbered_name
from loopgen.plan.progress import Progress, is_progress_bar, progress_callback
from loopgen.plan.summary import is_summary
from loopgen.plan.swa import Swa
from loopgen.plan.timer import Timer
from loopgen.spec.model import Spec


def resolve_hooks(
    spec: Spec,
    user: UserCode,
    checkpointing: Checkpointing,
    logging: Logging,
    summaries: tuple[Callback, ...],
    progress: Progress,
    timer: Timer | None,
    swa: Swa | None,
) -> Hooks:
    """All the callbacks in the order Lightning calls them: the spec's order, then the default progress bar (a
    TQDMProgressBar or RichProgressBar the spec names stays where it is) and the default ModelSummary, with every
    ModelCheckpoint (the default one included) and OnExceptionCheckpoint moved to the end. A Timer entry stays where it is; max_time's comes
    after the spec's callbacks. Those configure_callbacks returned come after these defaults, as Lightning appends
    them when fit starts."""
    users = iter(user.callbacks)
    stoppers = {cb.var: cb for cb in checkpointing.early_stopping}  # by name: one that does nothing is left out
    count = sum(is_lightning(ref, "EarlyStopping") for ref in spec.trainer.callbacks)
    stopper_names = iter([numbered_name("early_stopping", i, count) for i in range(count)])
    summary = iter(summaries)
    bar = progress_callback(progress)
    ordered: list[Callback | None] = []
    defaults_placed = False
    for index, ref in enumerate(spec.trainer.callbacks):
        if index == spec.callbacks_configured_at:  # Lightning appends configure_callbacks' after its defaults
            if timer is not None and timer.entry is None:
                ordered.append(timer.callback)
            ordered += [bar, *summary]
            bar, defaults_placed = None, True
        if is_lightning(ref, "EarlyStopping"):
            ordered.append(stoppers.get(next(stopper_names)))  # none under fast_dev_run
        elif is_lightning(ref, "LearningRateMonitor"):
            if logging.lr_monitor is not None and logging.lr_monitor.callback not in ordered:
                ordered.append(logging.lr_monitor.callback)
        elif is_lightning(ref, "ThroughputMonitor"):
            if logging.throughput is not None and logging.throughput.callback not in ordered:
                ordered.append(logging.throughput.callback)
        elif is_lightning(ref, "DeviceStatsMonitor"):
            if logging.device_stats is not None and logging.device_stats.callback not in ordered:
                ordered.append(logging.device_stats.callback)
        elif is_summary(ref):
            ordered.append(next(summary))
        elif is_lightning(ref, "StochasticWeightAveraging"):
            if swa is not None and swa.callback not in ordered:
                ordered.append(swa.callback)
        elif is_lightning(ref, "Timer"):
            ordered.append(timer.callback if timer is not None else None)
        elif is_progress_bar(ref):
            ordered.append(bar)
            bar = None
        elif not is_lightning(ref, "ModelCheckpoint") and not is_lightning(ref, "OnExceptionCheckpoint"):
            callback = next(users)
            # a ModelCheckpoint subclass is a Checkpoint: Lightning moves it to the end with the others
            ordered.append(None if callback.checkpointer else callback)
    if timer is not None and timer.entry is None and not defaults_placed:
        ordered.append(timer.callback)
    ordered += [bar, *summary, *checkpointing.checkpoint_order]
    callbacks = tuple(cb for cb in ordered if cb is not None)
    return Hooks(
        model=user.model,
        data=user.data,
        callbacks=callbacks,
        step_hook_index=user.step_hook_index,
        validation_callbacks=tuple(c for c in callbacks if c.hooks & set(VALIDATION_CALLBACK_HOOKS)),
    )
