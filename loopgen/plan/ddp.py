"""The DDP engine (torchrun, spawn)."""

from __future__ import annotations

from loopgen.errors import Problem
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.common import flag_problem
from loopgen.plan.data import Data
from loopgen.plan.distributed import (
    DDP_PRECISIONS_NOT_WRITTEN,
    ONE_DEVICE_GRAD_NORM,
    ONE_DEVICE_OVERFIT,
    ONE_DEVICE_TBPTT,
    SEVERAL_OPTIMIZERS_INSTEAD,
    Distributed,
    refuser,
    strategy_args,
)
from loopgen.plan.loggers import Logging
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Precision
from loopgen.plan.profiling import Profiling
from loopgen.plan.progress import Progress
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


def resolve_ddp(
    spec: Spec,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    data: Data,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
    progress: Progress,
    problems: list[Problem],
) -> Distributed:
    """strategy: ddp, devices, num_nodes: DDP under torchrun (Lightning's DDPStrategy).

    What DDP cannot serve yet is refused here, each with its reason."""
    t = spec.trainer
    _, args = strategy_args(t.strategy)
    devices, num_nodes = t.devices, t.num_nodes

    refuse = refuser(spec, problems, "with strategy ddp")
    if precision.name not in ("32", "bf16-mixed", "bf16-true", "16-true"):
        why = DDP_PRECISIONS_NOT_WRITTEN.get(
            precision.name, "the DDP script is written for 32, bf16-mixed, bf16-true and 16-true only"
        )
        refuse(
            "precision",
            f"precision {precision.name}",
            why,
            f"use bf16-mixed, bf16-true or 32 with ddp, or {precision.name} on one device (strategy auto)",
        )
    if spec.seed_everything is True:
        message = "seed_everything: true with strategy ddp: each process would choose its own seed; give a number"
        problems.append(Problem("seed_everything", message, spec.line("seed_everything")))
    elif spec.seed_everything is False:
        message = refusal(
            "seed_everything: false with strategy ddp",
            "the DDP script seeds its processes again where DDPStrategy does, from the spec's seed; Lightning's"
            " unseeded processes are not reproduced",
            "give a number",
        )
        problems.append(Problem("seed_everything", message, spec.line("seed_everything")))
    if optimizers.several:
        refuse(
            "strategy",
            "several optimizers (training_step with optimizer_idx, Lightning 1.9)",
            "Lightning 1.9 steps each optimizer with the others' parameters frozen, which DistributedDataParallel's"
            " gradient reduction does not expect; the script writes that loop for one CPU or GPU only",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    backend = args.get("process_group_backend")
    if backend is None and spec.trainer.accelerator != "auto":
        backend = "nccl" if spec.trainer.accelerator == "cuda" else "gloo"
    if backend == "nccl" and spec.trainer.accelerator == "cpu":
        problems.append(flag_problem(spec, "strategy", "process_group_backend: nccl needs CUDA (accelerator: cpu)"))
    world_size = devices * num_nodes
    return Distributed(
        kind="ddp",
        devices=devices,
        num_nodes=num_nodes,
        world_size=world_size,
        ranks_from="torchrun",
        backend=backend,
        timeout=args.get("timeout"),
        find_unused_parameters=bool(args.get("find_unused_parameters", False)),
        static_graph=bool(args.get("static_graph", False)),
        gradient_as_bucket_view=bool(args.get("gradient_as_bucket_view", False)),
        rank_zero_gates=True,
        replaces_samplers=True,
        no_sync=optimization.accumulates,
        reduces_decisions=bool(checkpointing.early_stopping),
        broadcasts=checkpointing.saves or logging.versions,
        saves_on_rank_zero=checkpointing.saves,
        logs_on_rank_zero=logging.enabled,
        silent_bar=progress.enabled,
        reseeds=isinstance(spec.seed_everything, int) and not isinstance(spec.seed_everything, bool),
    )
