"""The XLA (TPU) engine."""

from __future__ import annotations

from loopgen.errors import Problem
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.distributed import (
    CLOSURE_INSTEAD,
    CLOSURE_STEP,
    ONE_DEVICE_GRAD_NORM,
    ONE_DEVICE_OVERFIT,
    ONE_DEVICE_TBPTT,
    TIMED_CHECKPOINT,
    TIMED_CHECKPOINT_INSTEAD,
    TIMED_STOP_INSTEAD,
    Distributed,
    refuser,
    strategy_args,
)
from loopgen.plan.engine_parts import EngineParts


def resolve_xla(parts: EngineParts) -> Distributed:
    """accelerator: tpu, as Lightning 2.6.6 with torch_xla: one device is SingleDeviceXLAStrategy (the model and
    the batches on xm.xla_device(), no processes), several are XLAStrategy (xmp.spawn starts one process per
    device, the loaders become MpDeviceLoaders over DistributedSamplers on XLA's ordinal and world size,
    sync_dist reduces with xm.mesh_reduce). Both step through XLAPrecision.optimizer_step: the gradients
    all-reduced (xm.reduce_gradients) after the backward, the step, then xm.mark_step().

    What it cannot serve is refused here, each with its reason."""
    spec, problems = parts.spec, parts.problems
    t = spec.trainer
    strategy, _ = strategy_args(t.strategy)

    refuse = refuser(spec, problems, "with accelerator tpu")
    if strategy != "auto":
        refuse(
            "strategy",
            f"strategy {strategy}",
            "the TPU strategies come from `devices`: SingleDeviceXLAStrategy for one, XLAStrategy for several",
            "set `strategy: auto`",
        )
    if t.num_nodes != 1:
        refuse(
            "num_nodes",
            "num_nodes > 1",
            "one TPU VM host: xmp.spawn starts the processes of this host",
            "keep num_nodes: 1",
        )
    if parts.precision.apex:
        refuse(
            "amp_backend", "apex", "apex is CUDA's, and Lightning's XLAPrecision has no apex path", "use precision 32"
        )
    elif parts.precision.name == "16-mixed":
        refuse(
            "precision",
            "precision 16-mixed",
            "the float16 GradScaler is CUDA's; XLAPrecision takes 32-true, 16-true and bf16-true",
            "use precision 32",
        )
    elif parts.precision.half:
        switch = "XLA_USE_BF16" if parts.precision.name == "bf16-true" else "XLA_USE_F16"
        refuse(
            "precision",
            f"precision {parts.precision.name}",
            f"XLAPrecision sets torch_xla's {switch}, which neither the torch_xla stand-in nor a TPU here can check",
            "use precision 32 on TPU (loopgen implements XLAPrecision's 32-true)",
        )
    elif parts.precision.name != "32":
        refuse(
            "precision",
            f"precision {parts.precision.name}",
            "loopgen implements XLAPrecision's 32-true only",
            "use precision 32",
        )
    if spec.seed_everything is True:
        message = "seed_everything: true with accelerator tpu: each process would choose its own seed; give a number"
        problems.append(Problem("seed_everything", message, spec.line("seed_everything")))
    if parts.optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if parts.data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if parts.optimization.closure:
        refuse(
            "strategy",
            CLOSURE_STEP,
            "the TPU script reduces the gradients after the backward it runs itself; a step that runs the"
            " closure would need the reduction inside it, as XLAPrecision wraps it",
            CLOSURE_INSTEAD,
        )
    if parts.optimizers.several:
        refuse(
            "strategy",
            "several optimizers",
            "several optimizers under automatic optimization are Lightning 1.9's, and the TPU script follows"
            " Lightning 2.6.6's XLA strategies",
            "train them on one CPU or GPU",
        )
    if parts.profiling.enabled:
        refuse(
            "profiler",
            "a profiler",
            "the TPU script has no profiler code",
            "set `profiler: null`, and profile the same module on a CPU or GPU",
        )
    if parts.optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    # checkpoints, the CSV and TensorBoard loggers and the bar: rank 0's on several devices
    devices = t.devices
    several = devices > 1
    if several:
        for kind in sorted(parts.logging.kinds - {"csv", "tensorboard"}):
            refuse(
                "logger",
                f"a {kind} logger on several devices",
                "on several devices the script writes the CSVLogger's and TensorBoardLogger's files on process 0;"
                " the other loggers' handling is not written",
                "use CSVLogger or TensorBoardLogger, or one  device",
            )
        if parts.checkpointing.time_triggered:
            refuse(
                "callbacks",
                f"{TIMED_CHECKPOINT} on several devices",
                "each process's clock would decide on its own, where Lightning broadcasts process 0's decision",
                TIMED_CHECKPOINT_INSTEAD,
            )
        if parts.timed_stop:
            refuse(
                "callbacks" if parts.timer.entry is not None else "max_time",
                "a Timer (max_time) on several devices",
                "each process's clock would decide on its own, where Lightning broadcasts process 0's decision",
                TIMED_STOP_INSTEAD,
            )
    return Distributed(
        kind="xla",
        devices=devices,
        world_size=devices,
        ranks_from="xla" if several else None,
        rank_zero_gates=several,
        replaces_samplers=several and spec.trainer.use_distributed_sampler,
        # following Lightning 1.9.5 (a hook or flag only it has): its DistributedSamplerWrapper over every sampler,
        # as 1.9.5's TPUSpawnStrategy had it
        wraps_samplers=several and spec.trainer.use_distributed_sampler and follows_1_9_5(spec, parts.model),
        # several devices: XLAStrategy's rank-0 files (XLACheckpointIO), broadcasts (xm.collective_broadcast),
        # barriers (xm.rendezvous) and decisions (xm.mesh_reduce); one device needs none of them
        reduces_decisions=several and parts.reduces_decisions,
        broadcasts=several and (parts.checkpointing.saves or parts.logging.versions),
        saves_on_rank_zero=several and parts.checkpointing.saves,
        reduces_any=several and (bool(parts.checkpointing.early_stopping) or parts.checkpointing.saves),
        reduces_all=several and parts.checkpointing.saves and parts.checkpointing.monitors,
        logs_on_rank_zero=several and parts.logging.enabled,
        silent_bar=several and parts.progress.enabled,
    )
