"""The distributed part every engine fills, and the refusals engines share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec

# The engines whose processes a launcher starts, one per device, each reading its rank from the environment
TORCHRUN_ENGINES = ("ddp", "fsdp", "model_parallel")
# The cluster environments (Trainer(plugins=[...])) under which they are served, by the launcher that starts the
# processes: torchrun, srun, jsrun, Kubeflow's PyTorchJob
LAUNCHERS = {
    "TorchElasticEnvironment": "torchrun",
    "SLURMEnvironment": "slurm",
    "LSFEnvironment": "lsf",
    "KubeflowEnvironment": "kubeflow",
}


@dataclass(frozen=True)
class Distributed:
    """Several processes (or devices) training one model: what the launcher, the process group, the model wrapper
    and the samplers are. `kind` None: one process on one device, and the script has no code for any of this.

    Written for every engine the contract names: "ddp" (torchrun; implemented), with room for "dp", "horovod"
    and "xla". The templates gate rank-0-only actions (printing the summary, writing files) on the script's
    `is_global_zero` boolean whenever `rank_zero_gates`, and replace the samplers when `replaces_samplers`,
    whatever the engine."""

    kind: str | None = None  # None | "ddp" | "model_parallel" | "fsdp" | "dp" | "horovod" | "xla"
    devices: int = 1  # processes (devices) per node
    num_nodes: int = 1
    world_size: int = 1  # devices * num_nodes
    # where the ranks come from: "torchrun" (RANK, LOCAL_RANK, WORLD_SIZE, GROUP_RANK in the environment), or the
    # cluster's launcher under a cluster environment plugin (LAUNCHERS), whose variables the script reads as
    # Lightning's environment reads them; "horovod" and "xla": their runtimes
    ranks_from: str | None = None
    backend: str | None = None  # "gloo" | "nccl"; None: decided at run time by the device (nccl on CUDA)
    timeout: float | None = None  # the process group's timeout in seconds; None: torch's default (Lightning's)
    # DistributedDataParallel's arguments, as Lightning passes them
    find_unused_parameters: bool = False
    static_graph: bool = False
    gradient_as_bucket_view: bool = False
    rank_zero_gates: bool = False  # several processes: rank-0-only actions are gated on `is_global_zero`
    replaces_samplers: bool = False  # Lightning's use_distributed_sampler: train and val samplers shard the data
    no_sync: bool = False  # accumulation: the gradient all-reduce only on the batch that steps
    reduces_decisions: bool = False  # EarlyStopping, SpikeDetection: one process that stops (spikes) stops all
    # xla: the script reduces a decision over the processes as "any" (EarlyStopping's stop, whether the first
    # process's checkpoint file exists) ...
    reduces_any: bool = False
    reduces_all: bool = False  # ... and as "all" (ModelCheckpoint's top-k decision, by a monitored metric)
    # Lightning's sync_batchnorm (TorchSyncBatchNorm): the BatchNorm layers made SyncBatchNorm before the wrapper,
    # and made batch norms again (Lightning's _BatchNormXd) when fit ends
    sync_batchnorm: bool = False
    reseeds: bool = False  # Lightning seeds again (seed_everything's seed) once the processes are set up
    # rank 0's value on every process: the loggers' versions, the checkpoint files that exist (Lightning's broadcast)
    broadcasts: bool = False
    saves_on_rank_zero: bool = False  # checkpoints: every process decides, rank 0 writes, then all wait (barrier)
    logs_on_rank_zero: bool = False  # the loggers write on rank 0 only (Lightning's rank_zero_only)
    silent_bar: bool = False  # the progress bar draws on rank 0 only (Lightning disables it elsewhere)
    # Lightning 1.9.5's sampler replacement: every sampler (RandomSampler too) sharded over its own order
    wraps_samplers: bool = False
    # dp: batches go to the GPUs through DataParallel's scatter, not to the device first
    scatters: bool = False
    # dp: the per-GPU outputs of training_step reduced to their mean (no training_step_end of the model's)
    reduces_step_output: bool = False
    # horovod with accumulation: optimizer.step() on every batch, counted at a window's end (Lightning 1.9.5)
    steps_every_batch: bool = False
    # model_parallel: the device mesh's shape (data_parallel x tensor_parallel processes); the samplers shard the
    # data over the data-parallel dimension only, each tensor-parallel group reading the same batches
    data_parallel_size: int = 1
    tensor_parallel_size: int = 1
    # model_parallel's save_distributed_checkpoint: each file a directory of every process's shards
    # (torch.distributed.checkpoint) and meta.pt; else the full state gathered and written by rank 0
    sharded_checkpoints: bool = False
    # ... the module's attribute the device mesh goes to: a LightningModule's self.device_mesh reads _device_mesh
    mesh_attribute: str = "device_mesh"
    # fsdp (Lightning's FSDPStrategy, FSDP1): FullyShardedDataParallel's sharding strategy (ShardingStrategy's
    # member), whether it offloads the parameters to the CPU, the layer classes its auto_wrap_policy wraps and
    # those activation checkpointing wraps (the script's expressions for them); sharded_checkpoints above is its
    # state_dict_type "sharded"
    sharding_strategy: str = "FULL_SHARD"
    cpu_offload: bool = False
    wrap_classes: tuple[str, ...] = ()
    checkpoint_classes: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.kind is not None

    @property
    def engine(self) -> str:
        """The template file of the engine's code: templates/engines/<engine>.j2."""
        return self.kind or "single"

    @property
    def several_nodes(self) -> bool:
        """The processes run on several nodes (the launcher is started on each)."""
        return self.num_nodes > 1

    @property
    def several_processes(self) -> bool:
        return self.world_size > 1

    @property
    def nnodes(self) -> int:
        """torchrun's --nnodes in the command for several nodes: the spec's num_nodes, else one node per process
        (any --nnodes x --nproc_per_node that makes the world size will do)."""
        return self.num_nodes if self.several_nodes else self.world_size

    @property
    def nproc_per_node(self) -> int:
        """... and its --nproc_per_node."""
        return self.devices if self.several_nodes else 1

    @property
    def ddp(self) -> bool:
        return self.kind == "ddp"

    @property
    def horovod(self) -> bool:
        return self.kind == "horovod"

    @property
    def dp(self) -> bool:
        return self.kind == "dp"

    @property
    def model_parallel(self) -> bool:
        return self.kind == "model_parallel"

    @property
    def fsdp(self) -> bool:
        return self.kind == "fsdp"

    @property
    def shards_module(self) -> bool:
        """The module's parameters are sharded over the processes (ModelParallelStrategy, FSDPStrategy): the
        layers are built on the CPU and the checkpoints hold sharded or gathered states."""
        return self.kind in ("model_parallel", "fsdp")

    @property
    def gathers_on_rank_zero(self) -> bool:
        """A checkpoint's full state is gathered on rank 0 alone (ModelParallelStrategy without distributed
        checkpoints, FSDPStrategy's state_dict_type "full"): the other processes' states are empty."""
        return self.shards_module and not self.sharded_checkpoints

    @property
    def shard_key(self) -> str:
        """The weights' key in a distributed checkpoint's shards: ModelParallelStrategy's "state_dict",
        FSDPStrategy's "model"."""
        return "model" if self.kind == "fsdp" else "state_dict"

    @property
    def shares(self) -> str:
        """The samplers' num_replicas and rank (the script's names): the processes, or the device mesh's
        data-parallel groups (ModelParallelStrategy's distributed_sampler_kwargs)."""
        if self.kind == "model_parallel":
            return "DATA_PARALLEL_SIZE, data_parallel_rank"
        return "world_size, global_rank"

    @property
    def sampler_rank(self) -> str | None:
        """trainer.distributed_sampler_kwargs' rank where it is not the global rank: the data-parallel one."""
        return "data_parallel_rank" if self.kind == "model_parallel" else None

    @property
    def xla(self) -> bool:
        return self.kind == "xla"

    @property
    def device_ids(self) -> str:
        """trainer.device_ids: the indices of this node's devices (Lightning's, from its strategy's devices)."""
        if self.kind == "horovod":  # 1.9.5's horovod: one device per process on this host
            return "list(range(hvd.local_size()))"
        return repr(list(range(self.devices)))

    @property
    def sampler_replicas(self) -> str | None:
        """trainer.distributed_sampler_kwargs' num_replicas, where Lightning's strategy is a parallel one (its
        value for the others, one device, is None): dp's devices, the others' processes."""
        if self.kind == "dp":
            return str(self.devices)
        if self.kind == "model_parallel":
            return "DATA_PARALLEL_SIZE"
        if self.kind in ("ddp", "fsdp", "horovod") or (self.kind == "xla" and self.devices > 1):
            return "world_size"
        return None


def refuser(spec: Spec, problems: list[Problem], under: str) -> Callable[[str, str, str, str], None]:
    """An engine's `refuse(flag, what, why, instead)`: the problem "<what> <under> is not supported by loopgen
    (<why>); <instead>" at the flag's key."""

    def refuse(flag: str, what: str, why: str, instead: str) -> None:
        problems.append(flag_problem(spec, flag, refusal(f"{what} {under}", why, instead)))

    return refuse


# What the DDP script does not write for a precision, by its name.
DDP_PRECISIONS_NOT_WRITTEN = {
    "16-mixed": "the DDP script has no GradScaler step: scaling the loss, unscaling before clipping, skipping the"
    " steps whose gradients overflow",
    "64": "the DDP script does not make the model and its batches float64 before DistributedDataParallel wraps it,"
    " as Lightning's DoublePrecision does",
}


SEVERAL_OPTIMIZERS_INSTEAD = (
    "use manual optimization (self.automatic_optimization = False) with ddp, or train on one CPU or GPU"
)


# What the engines (ddp, horovod, dp, tpu) refuse alike: the flag, what, why, and what to do instead. "One CPU
# or GPU" is the script without an engine: accelerator cpu or cuda, strategy auto.
ONE_DEVICE_TBPTT = (
    "truncated_bptt_steps",
    "truncated_bptt_steps",
    (
        "the script writes Lightning 1.9's truncated BPTT, each batch split into chunks stepped one by one with"
        " their hiddens, for one CPU or GPU only"
    ),
    "train it on one CPU or GPU",
)


ONE_DEVICE_OVERFIT = (
    "overfit_batches",
    "overfit_batches",
    (
        "the script's sequential sampler for the overfitted batches is written for one CPU or GPU only, not"
        " sharded over processes or devices"
    ),
    "overfit on one CPU or GPU",
)


ONE_DEVICE_GRAD_NORM = (
    "track_grad_norm",
    "track_grad_norm",
    "the script writes Lightning 1.9's gradient-norm logging for one CPU or GPU only",
    "track it on one CPU or GPU, or compute the norm in on_before_optimizer_step and log it yourself",
)


CLOSURE_STEP = "an optimizer step through a closure (LBFGS or an optimizer_step override)"


CLOSURE_INSTEAD = "use ddp, which steps through closures, or one CPU or GPU"


TIMED_CHECKPOINT = "ModelCheckpoint(train_time_interval=...)"


TIMED_CHECKPOINT_INSTEAD = "save every_n_train_steps or every_n_epochs"


TIMED_STOP_INSTEAD = "bound the run with max_epochs or max_steps"


def strategy_args(strategy: Any) -> tuple[str, dict[str, Any]]:
    """The `strategy` flag's value as (name, the strategy's init_args): ddp_find_unused_parameters_true is "ddp"
    with find_unused_parameters, a DDPStrategy entry is "ddp" with its init_args, a ModelParallelStrategy entry
    "model_parallel" with its, an FSDPStrategy entry (or fsdp, fsdp_cpu_offload) "fsdp" with its."""
    if isinstance(strategy, dict):  # {class_path: DDPStrategy, init_args: {...}}
        names = {"ModelParallelStrategy": "model_parallel", "FSDPStrategy": "fsdp"}
        return names.get(strategy["class_path"].rpartition(".")[2], "ddp"), dict(strategy["init_args"])
    if strategy == "fsdp_cpu_offload":
        return "fsdp", {"cpu_offload": True}
    if strategy == "ddp_find_unused_parameters_true":
        return "ddp", {"find_unused_parameters": True}
    if strategy == "ddp_find_unused_parameters_false":
        return "ddp", {}
    return strategy, {}


def process_group_backend(spec: Spec, args: dict[str, Any], problems: list[Problem]) -> str | None:
    """The torchrun engines' process group backend: the strategy's process_group_backend, else nccl on CUDA and
    gloo on CPU; None with accelerator auto (decided at run time by the device). nccl on CPU is refused."""
    backend = args.get("process_group_backend")
    if backend is None and spec.trainer.accelerator != "auto":
        backend = "nccl" if spec.trainer.accelerator == "cuda" else "gloo"
    if backend == "nccl" and spec.trainer.accelerator == "cpu":
        problems.append(flag_problem(spec, "strategy", "process_group_backend: nccl needs CUDA (accelerator: cpu)"))
    return backend


def engine_kind(spec: Spec) -> str | None:
    """Which engine runs the loop, from the flags alone: "dp", "xla" (accelerator tpu), "horovod", "ddp",
    "model_parallel", "fsdp", or None (one process on one device). Every part that differs by engine reads this (or the resolved `Distributed`).

    `strategy: auto` with several devices or nodes is "ddp", as Lightning's accelerator connector chooses it
    (`_choose_strategy`: ddp for num_nodes > 1 or more than one device outside a notebook).
    """
    t = spec.trainer
    strategy, _ = strategy_args(t.strategy)
    if strategy == "dp":
        return "dp"
    if t.accelerator == "tpu":
        return "xla"
    if strategy in ("horovod", "ddp", "model_parallel", "fsdp"):
        return strategy
    if strategy == "auto" and (t.devices != 1 or t.num_nodes != 1):
        return "ddp"
    return None


def steps_every_batch(spec: Spec, accumulates: bool) -> bool:
    """Horovod with accumulation: optimizer.step() on every batch, counted at a window's end (Lightning 1.9.5's
    DistributedOptimizer with backward_passes_per_step), so no step is forced at the epoch's last batch."""
    return engine_kind(spec) == "horovod" and accumulates
