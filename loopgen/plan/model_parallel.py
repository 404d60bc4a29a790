"""The model-parallel engine (Lightning's ModelParallelStrategy): torchrun's processes on a device mesh of data
parallel x tensor parallel, the module sharded by its own configure_model (FSDP2's fully_shard, tensor
parallelism's parallelize_module)."""

from __future__ import annotations

from collections.abc import Callable

from loopgen.plan.common import flag_problem, follows_1_9_5
from loopgen.plan.distributed import (
    ONE_DEVICE_OVERFIT,
    ONE_DEVICE_TBPTT,
    Distributed,
    process_group_backend,
    refuser,
    strategy_args,
)
from loopgen.plan.engine_parts import EngineParts
from loopgen.plan.objects import is_lightning
from loopgen.spec.kinds import refusal

# Lightning's ModelParallelStrategy takes these precisions (its accelerator connector raises for the others)
MODEL_PARALLEL_PRECISIONS = ("32", "bf16-mixed", "bf16-true", "16-true")

# Lightning's callbacks that copy, average or prune the module's parameters as plain tensors
UNSHARDED_CALLBACKS = ("StochasticWeightAveraging", "WeightAveraging", "EMAWeightAveraging", "ModelPruning")


def refuse_unsharded(
    parts: EngineParts, refuse: Callable[[str, str, str, str], None], strategy: str, shards: str
) -> None:
    """What a sharding engine (`strategy`; `shards`: what it leaves each process) refuses alike: a spec
    without a numeric seed, TBPTT, overfit_batches, and the callbacks that need the whole module's weights."""
    spec = parts.spec
    if not isinstance(spec.seed_everything, int) or isinstance(spec.seed_everything, bool):
        refuse(
            "strategy",
            f"seed_everything: {spec.seed_everything}",
            f"each process seeds itself again from the spec's seed, as {strategy} does, so the processes agree on"
            " the layers' initial values",
            "give seed_everything a number",
        )
    if parts.optimization.tbptt:
        refuse(*ONE_DEVICE_TBPTT)
    if parts.data.sequential:
        refuse(*ONE_DEVICE_OVERFIT)
    if parts.checkpointing.weights_at_decision:
        refuse(
            "callbacks",
            "a callback that may change the weights between a ModelCheckpoint's decision and the file's writing",
            "the script keeps a copy of the weights as they were decided, which it does not gather from the shards",
            "change the weights in the hooks that run before ModelCheckpoint's, or save every_n_epochs",
        )
    for ref in spec.trainer.callbacks:
        if ref.name in UNSHARDED_CALLBACKS and is_lightning(ref, ref.name):
            refuse(
                "callbacks",
                ref.name,
                f"Lightning's {ref.name} works on a full copy of the module, not on {shards}",
                "remove it, or train under ddp",
            )


def resolve_model_parallel(parts: EngineParts) -> Distributed:
    """strategy: ModelParallelStrategy, devices, num_nodes: the module shards itself in configure_model on the
    device mesh Lightning builds (data_parallel x tensor_parallel), and the script trains it without a wrapper,
    as Lightning's strategy does. What it cannot serve yet is refused here, each with its reason."""
    spec, problems, model = parts.spec, parts.problems, parts.model
    t = spec.trainer
    _, args = strategy_args(t.strategy)
    world_size = t.devices * t.num_nodes
    refuse = refuser(spec, problems, "with ModelParallelStrategy")
    if parts.precision.name not in MODEL_PARALLEL_PRECISIONS:
        refuse(
            "precision",
            f"precision {parts.precision.name}",
            "Lightning's ModelParallelStrategy takes 32-true, bf16-mixed, bf16-true and 16-true only",
            "choose one of these",
        )
    if follows_1_9_5(spec, model):
        refuse(
            "strategy",
            "a spec that follows Lightning 1.9.5",
            "ModelParallelStrategy is Lightning 2.x's (1.9.5 has no device mesh nor FSDP2)",
            "follow Lightning 2.x",
        )
    if not model.defines("configure_model"):
        message = refusal(
            f"ModelParallelStrategy with {spec.model.class_path}, which has no configure_model,",
            "Lightning requires the module to apply its parallelism there and raises a TypeError without it",
            "define configure_model and apply fully_shard / parallelize_module on self.device_mesh in it",
        )
        problems.append(flag_problem(spec, "strategy", message))
    refuse_unsharded(
        parts, refuse, "ModelParallelStrategy", "the shards FSDP2 and tensor parallelism leave each process"
    )
    data_parallel = args.get("data_parallel_size", "auto")
    tensor_parallel = args.get("tensor_parallel_size", "auto")
    data_parallel = t.num_nodes if data_parallel == "auto" else data_parallel
    tensor_parallel = t.devices if tensor_parallel == "auto" else tensor_parallel
    if data_parallel * tensor_parallel != world_size:
        message = refusal(
            f"data_parallel_size {data_parallel} x tensor_parallel_size {tensor_parallel}",
            f"their product must be the number of processes, devices x num_nodes = {world_size} (Lightning raises)",
            'choose sizes whose product is the number of processes ("auto": num_nodes x devices)',
        )
        problems.append(flag_problem(spec, "strategy", message))
    backend = process_group_backend(spec, args, problems)
    return Distributed(
        kind="model_parallel",
        devices=t.devices,
        num_nodes=t.num_nodes,
        world_size=world_size,
        backend=backend,
        timeout=args.get("timeout"),
        data_parallel_size=data_parallel,
        tensor_parallel_size=tensor_parallel,
        rank_zero_gates=True,
        replaces_samplers=spec.trainer.use_distributed_sampler,
        reduces_decisions=parts.reduces_decisions,
        broadcasts=parts.checkpointing.saves or parts.logging.versions or parts.timed_stop,
        saves_on_rank_zero=parts.checkpointing.saves,
        sharded_checkpoints=bool(args.get("save_distributed_checkpoint", True)),
        mesh_attribute="_device_mesh" if model.is_lightning_module else "device_mesh",
        logs_on_rank_zero=parts.logging.enabled,
        silent_bar=parts.progress.enabled,
        reseeds=True,
    )
