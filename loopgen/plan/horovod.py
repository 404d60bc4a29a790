"""The Horovod engine."""

from __future__ import annotations

from loopgen.errors import Problem
from loopgen.plan.distributed import (
    CLOSURE_INSTEAD,
    CLOSURE_STEP,
    ONE_DEVICE_GRAD_NORM,
    ONE_DEVICE_OVERFIT,
    ONE_DEVICE_TBPTT,
    SEVERAL_OPTIMIZERS_INSTEAD,
    TIMED_CHECKPOINT,
    TIMED_CHECKPOINT_INSTEAD,
    TIMED_STOP_INSTEAD,
    Distributed,
    refuser,
    steps_every_batch,
)
from loopgen.plan.engine_parts import EngineParts
from loopgen.plan.precision import HALF_NOT_IN_1_9_5


def resolve_horovod(parts: EngineParts) -> Distributed:
    """strategy: horovod, as Lightning 1.9.5's HorovodStrategy: processes started by horovodrun (`devices` of them
    on this host, the count the header's command gives), hvd.DistributedOptimizer, the learning rates scaled by
    the number of processes, parameters and optimizer state broadcast from process 0, every sampler sharded.

    What it cannot serve is refused here, each with its reason: what the DDP part refuses (the rank-0 handling
    of loggers, checkpoints and the bar is not there yet), and what Lightning 1.9.5 refuses or does differently."""
    spec, problems = parts.spec, parts.problems
    t = spec.trainer

    refuse = refuser(spec, problems, "with strategy horovod")
    if t.num_nodes != 1:
        refuse(
            "num_nodes",
            "num_nodes > 1",
            "Lightning 1.9.5 refuses it: horovodrun's -H places the processes",
            "keep num_nodes: 1 and list the hosts in horovodrun's -H (the header's command for several hosts)",
        )
    if parts.precision.apex:
        refuse("amp_backend", "apex", "Lightning 1.9.5's Horovod has no apex path", "use precision 32")
    elif parts.precision.half:
        refuse("precision", f"precision {parts.precision.name}", HALF_NOT_IN_1_9_5, "use precision 32 with horovod")
    elif parts.precision.name != "32":
        refuse(
            "precision",
            f"precision {parts.precision.name}",
            "the Horovod script steps hvd.DistributedOptimizer in float32 only: no autocast, GradScaler or float64"
            " path is written for it",
            "use precision 32 with horovod, or ddp for bf16-mixed",
        )
    if spec.seed_everything is True:
        problems.append(
            Problem(
                "seed_everything",
                "seed_everything: true with strategy horovod: each process would choose its own seed; give a number",
                spec.line("seed_everything"),
            )
        )
    if parts.optimization.schedule is not None:
        refuse(
            "accumulate_grad_batches",
            "an accumulation schedule",
            "Lightning 1.9.5 refuses it with Horovod",
            "use a constant accumulate_grad_batches",
        )
    if parts.optimizers.general_schedulers:
        refuse(
            "strategy",
            "LR schedulers from a configure_optimizers whose returned form its source does not show",
            "Lightning 1.9.5 scales each scheduler's base learning rates by the number of processes, and the script"
            " does so for the schedulers it finds in configure_optimizers' source",
            "return them in a form the source shows (`return [optimizer], [scheduler]`), or give them in the"
            " spec's optimizer: and lr_scheduler:",
        )
    if parts.optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if parts.data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if parts.optimization.closure:
        refuse(
            "strategy",
            CLOSURE_STEP,
            "hvd.DistributedOptimizer synchronises the gradients after backward and steps under"
            " skip_synchronize; a step that runs the closure itself is not written for it",
            CLOSURE_INSTEAD,
        )
    if parts.optimizers.several:
        refuse(
            "strategy",
            "several optimizers",
            "Lightning 1.9's loop over several optimizers is not written for hvd.DistributedOptimizer",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if parts.timed_stop:
        refuse(
            "callbacks" if parts.timer.entry is not None else "max_time",
            "a Timer (max_time)",
            "each process's clock would decide on its own, where Lightning broadcasts rank 0's decision",
            f"{TIMED_STOP_INSTEAD}, or use ddp, which follows rank 0's clock",
        )
    if parts.checkpointing.time_triggered:
        refuse(
            "callbacks",
            TIMED_CHECKPOINT,
            "each process's clock would decide on its own, where Lightning broadcasts rank 0's decision",
            f"{TIMED_CHECKPOINT_INSTEAD}, or use ddp, which follows rank 0's clock",
        )
    for kind in sorted(parts.logging.kinds - {"csv"}):
        refuse(
            "logger",
            f"a {kind} logger",
            "the Horovod script's rank-0 logging is written and checked against Lightning 1.9.5 for CSVLogger  only",
            "use CSVLogger with horovod, or ddp, which serves every logger",
        )
    if parts.profiling.enabled:
        refuse(
            "profiler",
            "a profiler",
            "the Horovod script has no profiler code; the DDP script's writes one report per process",
            "profile with ddp or on one CPU or GPU",
        )
    if parts.optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    devices = t.devices
    return Distributed(
        kind="horovod",
        devices=devices,
        world_size=devices,
        ranks_from="horovod",
        rank_zero_gates=True,
        replaces_samplers=spec.trainer.use_distributed_sampler,
        wraps_samplers=spec.trainer.use_distributed_sampler,
        # Lightning 1.9.5's Horovod "handles accumulation": its loop calls optimizer.step() on every batch
        steps_every_batch=steps_every_batch(spec, parts.optimization.accumulates),
        # rank 0 writes the checkpoints and the logs; rank 0's directories and versions hold on every process
        broadcasts=parts.checkpointing.saves or parts.logging.versions,
        saves_on_rank_zero=parts.checkpointing.saves,
        logs_on_rank_zero=parts.logging.enabled,
        silent_bar=parts.progress.enabled,
        # EarlyStopping: one process that stops stops all (1.9.5's reduce_boolean_decision, an hvd.allreduce)
        reduces_decisions=parts.reduces_decisions,
    )
