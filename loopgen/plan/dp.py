"""The DataParallel engine."""

from __future__ import annotations

from loopgen.plan.distributed import (
    CLOSURE_INSTEAD,
    CLOSURE_STEP,
    ONE_DEVICE_GRAD_NORM,
    ONE_DEVICE_TBPTT,
    SEVERAL_OPTIMIZERS_INSTEAD,
    TIMED_CHECKPOINT,
    TIMED_CHECKPOINT_INSTEAD,
    Distributed,
    refuser,
)
from loopgen.plan.engine_parts import EngineParts
from loopgen.plan.precision import HALF_NOT_IN_1_9_5


def resolve_dp(parts: EngineParts) -> Distributed:
    """strategy: dp, as Lightning 1.9.5's DataParallelStrategy: one process, the model on cuda:0 wrapped in
    torch.nn.DataParallel over `devices` GPUs, the steps run through it on each GPU's slice of the batch, and
    training_step's gathered outputs reduced to their mean unless the model defines training_step_end.

    What it cannot serve is refused here, each with its reason."""
    spec, problems = parts.spec, parts.problems
    t = spec.trainer

    refuse = refuser(spec, problems, "with strategy dp")
    if t.accelerator != "cuda":
        refuse(
            "accelerator",
            f"accelerator {t.accelerator}",
            "DataParallel runs its replicas on GPUs",
            "set `accelerator: cuda`, or use ddp on CPU",
        )
    if t.num_nodes != 1:
        refuse("num_nodes", "num_nodes > 1", "DataParallel is one process on one machine", "use ddp on several nodes")
    for hook in ("transfer_batch_to_device", "on_after_batch_transfer"):
        if parts.data.batch_hook(hook) is not None:
            refuse(
                "strategy",
                f"overriding `{hook}`" + (" in the data module" if parts.data.batch_hook(hook) == "data" else ""),
                "Lightning 1.9.5 refuses it in DP mode: DataParallel scatters the batch over the GPUs itself",
                "do that work in training_step, or use ddp",
            )
    if parts.precision.half:
        refuse("precision", f"precision {parts.precision.name}", HALF_NOT_IN_1_9_5, "use precision 32 with dp")
    elif parts.precision.name != "32" or parts.precision.apex:
        refuse(
            "precision",
            f"precision {parts.precision.name}",
            "the DP script runs the replicas in float32 only: no autocast inside each replica's forward is written",
            "use precision 32 with dp, or ddp for bf16-mixed",
        )
    if parts.model.uses_log:
        refuse(
            "strategy",
            "self.log in the module",
            "DataParallel's replicas would each log into the one collection",
            "use ddp, which serves self.log, or one CPU or GPU",
        )
    if parts.optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if parts.optimization.closure:
        refuse(
            "strategy",
            CLOSURE_STEP,
            "DataParallel's replicas run each forward; a step that runs the closure itself is not written for  them",
            CLOSURE_INSTEAD,
        )
    if parts.optimizers.several:
        refuse(
            "strategy",
            "several optimizers",
            "Lightning 1.9's loop over several optimizers is not written for  DataParallel",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if parts.checkpointing.time_triggered:
        refuse(
            "callbacks",
            TIMED_CHECKPOINT,
            "the DP script's checkpoints are not checked against Lightning 1.9.5 with a time-triggered save",
            TIMED_CHECKPOINT_INSTEAD,
        )
    for kind in sorted(parts.logging.kinds - {"csv", "tensorboard"}):
        refuse(
            "logger",
            f"a {kind} logger",
            "the DP script's logging is written for CSVLogger and  TensorBoardLogger only",
            "use CSVLogger or TensorBoardLogger with dp, or ddp, which serves every  logger",
        )
    if parts.profiling.enabled:
        refuse("profiler", "a profiler", "the DP script has no profiler code", "profile with ddp or on one CPU or GPU")
    if parts.optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    return Distributed(
        kind="dp",
        devices=t.devices,
        scatters=True,
        reduces_step_output=not parts.optimization.step_end,
    )
