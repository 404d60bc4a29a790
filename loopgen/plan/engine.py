"""Which engine runs the loop: one process, DDP, DataParallel, Horovod or XLA."""

from __future__ import annotations

from dataclasses import replace

from loopgen.errors import Problem
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.common import flag_problem, follows_1_9_5, only_1_9_5
from loopgen.plan.data import Data
from loopgen.plan.ddp import resolve_ddp
from loopgen.plan.distributed import LAUNCHERS, TORCHRUN_ENGINES, Distributed, engine_kind
from loopgen.plan.dp import resolve_dp
from loopgen.plan.engine_parts import EngineParts
from loopgen.plan.fsdp import resolve_fsdp
from loopgen.plan.horovod import resolve_horovod
from loopgen.plan.loggers import Logging
from loopgen.plan.model_parallel import resolve_model_parallel
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Precision
from loopgen.plan.profiling import Profiling
from loopgen.plan.progress import Progress
from loopgen.plan.timer import Timer
from loopgen.plan.xla import resolve_xla
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec
from loopgen.spec.plugins import cluster_environment


def resolve_engine(
    spec: Spec,
    model: ClassFacts,
    precision: Precision,
    optimizers: Optimizers,
    optimization: Optimization,
    data: Data,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
    progress: Progress,
    timer: Timer | None,
    problems: list[Problem],
) -> Distributed:
    """accelerator, strategy, devices, num_nodes: which engine runs the loop (one process on one device, DDP,
    ModelParallelStrategy, FSDPStrategy, DataParallel, Horovod or XLA), each resolved in its own module with what it refuses.
    """
    t = spec.trainer
    kind = engine_kind(spec)
    parts = EngineParts(spec, model, precision, optimizers, optimization, data, checkpointing, logging, profiling,
                        progress, timer, problems)  # fmt: skip
    environment = cluster_environment(t.plugins)
    launcher = None if environment is None else LAUNCHERS.get(environment["class_path"])
    if environment is not None and kind is not None and not (kind in TORCHRUN_ENGINES and launcher is not None):
        message = refusal(
            f"{environment['class_path']} with {kind}",
            (
                "Lightning starts the other processes itself under it (its subprocess launcher); the script's are"
                " started by a launcher, one per process: torchrun, srun, jsrun or Kubeflow's PyTorchJob"
                if kind in TORCHRUN_ENGINES
                else f"the {kind} script reads its processes from its own runtime"
            ),
            (
                "launch with torchrun (TorchElasticEnvironment, or no cluster environment), srun"
                " (SLURMEnvironment), jsrun (LSFEnvironment) or a PyTorchJob (KubeflowEnvironment)"
                if kind in TORCHRUN_ENGINES
                else "leave the cluster environment out"
            ),
        )
        problems.append(flag_problem(spec, "plugins", message))
    if kind == "dp":
        return resolve_dp(parts)
    if kind == "xla":
        return resolve_xla(parts)
    if kind == "horovod":
        return resolve_horovod(parts)
    ranks_from = launcher or "torchrun"  # the torchrun engines': the launcher whose variables hold the ranks
    if kind == "model_parallel":
        return replace(resolve_model_parallel(parts), ranks_from=ranks_from)
    if kind == "fsdp":
        return replace(resolve_fsdp(parts), ranks_from=ranks_from)
    unnamed = t.strategy == "auto" and "strategy" not in spec.trainer_given
    if kind == "ddp" and unnamed and t.num_nodes == 1 and follows_1_9_5(spec, model):
        # 1.9.5's strategy=None picks ddp_spawn on one node ("auto" picks ddp)
        message = (
            f"devices: {t.devices} without a strategy is ddp_spawn in Lightning 1.9.5 (which"
            f" this spec follows for {only_1_9_5(spec, model)[0]}): it starts the processes from inside the"
            " running program, while the script is started once per process by torchrun; set `strategy: ddp`"
        )
        problems.append(flag_problem(spec, "devices", message))
    if kind is None:
        for flag, value in (("devices", t.devices), ("num_nodes", t.num_nodes)):
            if value != 1:
                message = (
                    f"{flag}: {value} needs `strategy: ddp` (one process per device, launched with torchrun);"
                    " with strategy single_device Lightning trains on the first device alone: give it devices: 1"
                )
                problems.append(flag_problem(spec, flag, message))
        return Distributed()
    return replace(resolve_ddp(parts), ranks_from=ranks_from)
