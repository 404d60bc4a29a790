"""The DDP engine (torchrun, spawn)."""

from __future__ import annotations

from loopgen.errors import Problem
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.distributed import (
    DDP_PRECISIONS_NOT_WRITTEN,
    ONE_DEVICE_GRAD_NORM,
    ONE_DEVICE_OVERFIT,
    ONE_DEVICE_TBPTT,
    SEVERAL_OPTIMIZERS_INSTEAD,
    Distributed,
    process_group_backend,
    refuser,
    strategy_args,
)
from loopgen.plan.engine_parts import EngineParts
from loopgen.spec.kinds import refusal


def resolve_ddp(parts: EngineParts) -> Distributed:
    """strategy: ddp, devices, num_nodes: DDP under torchrun (Lightning's DDPStrategy).

    What DDP cannot serve yet is refused here, each with its reason."""
    spec, problems = parts.spec, parts.problems
    t = spec.trainer
    _, args = strategy_args(t.strategy)
    devices, num_nodes = t.devices, t.num_nodes

    refuse = refuser(spec, problems, "with strategy ddp")
    if parts.precision.name not in ("32", "bf16-mixed", "bf16-true", "16-true"):
        why = DDP_PRECISIONS_NOT_WRITTEN.get(
            parts.precision.name, "the DDP script is written for 32, bf16-mixed, bf16-true and 16-true only"
        )
        refuse(
            "precision",
            f"precision {parts.precision.name}",
            why,
            f"use bf16-mixed, bf16-true or 32 with ddp, or {parts.precision.name} on one device (strategy auto)",
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
    if parts.optimizers.several:
        refuse(
            "strategy",
            "several optimizers (training_step with optimizer_idx, Lightning 1.9)",
            "Lightning 1.9 steps each optimizer with the others' parameters frozen, which DistributedDataParallel's"
            " gradient reduction does not expect; the script writes that loop for one CPU or GPU only",
            SEVERAL_OPTIMIZERS_INSTEAD,
        )
    if parts.optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if parts.data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if parts.optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    if t.sync_batchnorm and t.accelerator == "cpu":
        refuse(
            "sync_batchnorm",
            "sync_batchnorm",
            "torch's SyncBatchNorm runs on GPUs only: DistributedDataParallel raises ValueError for a CPU model that"
            " has one (as it does under Lightning)",
            "use accelerator cuda (or auto), or leave sync_batchnorm false on the CPU",
        )
    backend = process_group_backend(spec, args, problems)
    world_size = devices * num_nodes
    return Distributed(
        kind="ddp",
        devices=devices,
        num_nodes=num_nodes,
        world_size=world_size,
        backend=backend,
        timeout=args.get("timeout"),
        find_unused_parameters=bool(args.get("find_unused_parameters", False)),
        static_graph=bool(args.get("static_graph", False)),
        gradient_as_bucket_view=bool(args.get("gradient_as_bucket_view", False)),
        rank_zero_gates=True,
        replaces_samplers=t.use_distributed_sampler,
        # following Lightning 1.9.5 (a hook or flag only it has): its DistributedSamplerWrapper over every sampler
        wraps_samplers=t.use_distributed_sampler and follows_1_9_5(spec, parts.model),
        no_sync=parts.optimization.accumulates,
        reduces_decisions=parts.reduces_decisions,
        broadcasts=parts.checkpointing.saves or parts.logging.versions or parts.timed_stop,
        saves_on_rank_zero=parts.checkpointing.saves,
        logs_on_rank_zero=parts.logging.enabled,
        silent_bar=parts.progress.enabled,
        sync_batchnorm=t.sync_batchnorm,
        reseeds=isinstance(spec.seed_everything, int) and not isinstance(spec.seed_everything, bool),
    )
