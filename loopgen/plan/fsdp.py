"""The FSDP engine (Lightning's FSDPStrategy, FSDP1): torchrun's processes on CUDA, the module wrapped in
FullyShardedDataParallel with Lightning's arguments (sharding strategy, CPU offload, the precision's
MixedPrecision, the auto-wrap policy's layer classes), activation checkpointing applied after the wrapping, the
optimizer made after it; full or sharded checkpoints as FSDPStrategy writes them. Lightning requires CUDA for it."""

from __future__ import annotations

from typing import Any

from loopgen.plan.common import flag_problem, follows_1_9_5
from loopgen.plan.distributed import (
    DDP_PRECISIONS_NOT_WRITTEN,
    ONE_DEVICE_GRAD_NORM,
    Distributed,
    process_group_backend,
    refuser,
    strategy_args,
)
from loopgen.plan.engine_parts import EngineParts
from loopgen.plan.model_parallel import refuse_unsharded
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec

# torch's ShardingStrategy members, as FSDPStrategy takes them (by name, any case)
SHARDING_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "_HYBRID_SHARD_ZERO2")

# FSDPStrategy's init_args that name layer classes (Lightning turns a set of them into a ModuleWrapPolicy)
POLICIES = ("auto_wrap_policy", "activation_checkpointing_policy")

# Lightning's AcceleratorConnector, for FSDPStrategy on an accelerator other than CUDA
NEEDS_CUDA = (
    "The strategy `fsdp` requires a GPU accelerator, but received `accelerator={accelerator!r}`. Please set"
    " `accelerator='cuda'`, `accelerator='gpu'`, or pass a `CUDAAccelerator()` instance to use FSDP."
)


def policy_classes(spec: Spec) -> dict[str, tuple[str, ...]]:
    """The layer classes of the FSDP strategy's auto_wrap_policy and activation_checkpointing_policy, by
    argument (class paths, as the spec gives them); {} for another strategy."""
    name, args = strategy_args(spec.trainer.strategy)
    if name != "fsdp":
        return {}
    found = {}
    for key in POLICIES:
        value = args.get(key)
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(item, str) and "." in item for item in value):
            found[key] = tuple(value)
    return found


def class_expression(path: str) -> str:
    """How the script names a policy's layer class: torch's by its full path (the script imports torch), the
    user's by its name (imported from its module)."""
    return path if path.startswith("torch.") else path.rpartition(".")[2]


def resolve_fsdp(parts: EngineParts) -> Distributed:
    """strategy: fsdp, fsdp_cpu_offload or an FSDPStrategy entry, devices, num_nodes: torchrun's processes, each
    on its CUDA device, the module in FullyShardedDataParallel as Lightning's FSDPStrategy wraps it. What it cannot
    serve is refused here, each with its reason; on another accelerator, Lightning's own error."""
    spec, problems, model = parts.spec, parts.problems, parts.model
    t = spec.trainer
    _, args = strategy_args(t.strategy)
    refuse = refuser(spec, problems, "with FSDPStrategy")
    if t.accelerator not in ("cuda", "gpu"):
        # Lightning resolves auto first: to CUDA where it is, else to the CPU, for which it raises
        seen = "cpu" if t.accelerator == "auto" else t.accelerator
        message = refusal(
            f"FSDPStrategy with accelerator: {t.accelerator}",
            "FullyShardedDataParallel runs on CUDA only; Lightning raises"
            + (" where there is no GPU" if t.accelerator == "auto" else "")
            + ": "
            + NEEDS_CUDA.format(accelerator=seen),
            "set accelerator: cuda, or shard on the CPU with ModelParallelStrategy (FSDP2's fully_shard in"
            " configure_model)",
        )
        problems.append(flag_problem(spec, "strategy", message))
    if parts.precision.name not in ("32", "bf16-mixed", "bf16-true", "16-true"):
        why = DDP_PRECISIONS_NOT_WRITTEN.get(
            parts.precision.name, "the FSDP script is written for 32, bf16-mixed, bf16-true and 16-true only"
        )
        refuse("precision", f"precision {parts.precision.name}", why.replace("DDP", "FSDP"),
               "use bf16-mixed, bf16-true or 32")  # fmt: skip
    if follows_1_9_5(spec, model):
        refuse(
            "strategy",
            "a spec that follows Lightning 1.9.5",
            "1.9.5's fsdp is FairScale's (its fsdp_native differs from 2.x's FSDPStrategy)",
            "follow Lightning 2.x",
        )
    if model.defines("configure_sharded_model"):
        refuse(
            "strategy",
            "configure_sharded_model",
            "Lightning then assumes the module wrapped its own layers and does not wrap it, a legacy path the"
            " script does not write",
            "rename it configure_model (torch's wrap() inside it wraps a layer, and the strategy wraps the rest)",
        )
    if parts.optimization.clip and not parts.optimization.clip_by_value:
        refuse(
            "gradient_clip_algorithm",
            "gradient_clip_algorithm: norm",
            "Lightning's FSDPPrecision raises: `gradient_clip_algorithm='norm'` is currently not supported for"
            " `FSDPPrecision` (torch's clip_grad_norm_ is wrong on shards)",
            "clip by value, or clip with FullyShardedDataParallel.clip_grad_norm_ in configure_gradient_clipping",
        )
    if parts.optimizers.several:
        refuse("strategy", "several optimizers (training_step with optimizer_idx, Lightning 1.9)",
               "Lightning 2.x's FSDPStrategy steps one optimizer in automatic optimization", "use one optimizer")  # fmt: skip
    if parts.optimization.track_grad_norm is not None:
        refuse(*ONE_DEVICE_GRAD_NORM)
    refuse_unsharded(parts, refuse, "FSDPStrategy", "the shards FullyShardedDataParallel leaves each process")
    sharding = _sharding_strategy(spec, args, problems)
    classes = policy_classes(spec)
    for key in POLICIES:
        if args.get(key) is not None and key not in classes:
            message = (
                f"expected a list of layer classes (their import paths, e.g. [torch.nn.Linear]), got {args[key]!r}"
            )
            problems.append(flag_problem(spec, "strategy", f"{key}: {message}"))
    if "HYBRID" in sharding and "auto_wrap_policy" not in classes:
        problems.append(flag_problem(spec, "strategy", (
            f"sharding_strategy {sharding} needs an auto_wrap_policy (Lightning raises: the hybrid sharding strategy"
            " requires you to pass at least one of the parameters: `auto_wrap_policy`, `process_group` tuple, or"
            " `device_mesh`)"
        )))  # fmt: skip
    for key, expected in (("cpu_offload", bool), ("state_dict_type", str)):
        value = args.get(key)
        if value is not None and (not isinstance(value, expected) or (key == "state_dict_type" and value not in
                                                                      ("full", "sharded"))):  # fmt: skip
            wanted = "true or false" if expected is bool else '"full" or "sharded"'
            problems.append(flag_problem(spec, "strategy", f"{key}: expected {wanted}, got {value!r}"))
    backend = process_group_backend(spec, args, problems)
    world_size = t.devices * t.num_nodes
    return Distributed(
        kind="fsdp",
        devices=t.devices,
        num_nodes=t.num_nodes,
        world_size=world_size,
        backend=backend,
        timeout=args.get("timeout"),
        rank_zero_gates=True,
        replaces_samplers=t.use_distributed_sampler,
        reduces_decisions=parts.reduces_decisions,
        broadcasts=parts.checkpointing.saves or parts.logging.versions or parts.timed_stop,
        saves_on_rank_zero=parts.checkpointing.saves,
        sharded_checkpoints=args.get("state_dict_type", "full") == "sharded",
        sharding_strategy=sharding,
        cpu_offload=args.get("cpu_offload") is True,
        wrap_classes=tuple(map(class_expression, classes.get("auto_wrap_policy", ()))),
        checkpoint_classes=tuple(map(class_expression, classes.get("activation_checkpointing_policy", ()))),
        logs_on_rank_zero=parts.logging.enabled,
        silent_bar=parts.progress.enabled,
        sync_batchnorm=t.sync_batchnorm,
        reseeds=True,
    )


def _sharding_strategy(spec: Spec, args: dict[str, Any], problems: list) -> str:
    """FSDPStrategy's sharding_strategy as ShardingStrategy's member name (Lightning upper-cases the string)."""
    value = args.get("sharding_strategy", "FULL_SHARD")
    if isinstance(value, str) and value.upper() in SHARDING_STRATEGIES:
        return value.upper()
    choices = ", ".join(SHARDING_STRATEGIES)
    problems.append(flag_problem(spec, "strategy", f"sharding_strategy: expected one of {choices}, got {value!r}"))
    return "FULL_SHARD"
