"""The script's docstring: where it came from, what it is specialised for, how to run it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from loopgen import __version__
from loopgen.cache import templates_sha256
from loopgen.plan.bounds import Bounds
from loopgen.plan.distributed import Distributed
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Device, Precision
from loopgen.plan.validation import Validation
from loopgen.spec.model import Spec

SCRIPT_SHA256_PLACEHOLDER = "-" * 64  # the script's own sha256 is of its text with this in its place


@dataclass(frozen=True)
class Header:
    version: str
    spec_name: str
    spec_sha256: str
    script_name: str
    model_module: str
    model_package: str
    choices: tuple[str, ...]  # what the script was specialised for
    launch: str  # the command that runs it
    notes: tuple[str, ...]  # where the script is general, and why
    templates_sha256: str = ""  # of loopgen's templates (`loopgen check` tells a change of loopgen by it)
    script_sha256: str = SCRIPT_SHA256_PLACEHOLDER  # of the script itself: filled in once formatted


def xla_header(header: Header, distributed: Distributed) -> Header:
    """The header of a TPU script: how it is launched on a TPU VM."""
    if distributed.devices > 1:
        choices = (*header.choices, f"XLAStrategy over {distributed.devices} devices (xmp.spawn)")
        note = (
            f"Runs on a TPU VM with torch_xla (PJRT runtime): `{distributed.launch}`; xmp.spawn starts one process"
            f" per TPU device, and the script checks that they are {distributed.devices}."
        )
    else:
        choices = (*header.choices, "SingleDeviceXLAStrategy (one device)")
        note = f"Runs on a TPU VM with torch_xla (PJRT runtime): `{distributed.launch}`; one process, one device."
    note += " It has been run against recording stand-ins of torch_xla only, not on real TPUs."
    return replace(header, choices=choices, launch=distributed.launch, notes=(*header.notes, note))


def horovod_header(header: Header, distributed: Distributed) -> Header:
    """The header of a Horovod script: the horovodrun command that launches it."""
    choices = (*header.choices, f"strategy=horovod over {distributed.devices} processes (Lightning 1.9.5)")
    note = (
        f"Launched by horovodrun, one process per device: on this host `{distributed.launch}`; on several hosts"
        f" `{distributed.launch_nodes}` (Lightning 1.9.5 scales the learning rates by the number of processes, as"
        " this script does). Run without horovodrun, the script says so and exits with status 2."
    )
    return replace(header, choices=choices, launch=distributed.launch, notes=(*header.notes, note))


def distributed_header(header: Header, distributed: Distributed) -> Header:
    """The header of a DDP script: the choices it was made for, and the torchrun commands that launch it."""
    choices = (*header.choices, f"strategy=ddp over {distributed.num_nodes} x {distributed.devices} processes")
    note = f"Launched by torchrun, one process per device, {distributed.world_size} in all (devices x num_nodes)"
    if distributed.num_nodes == 1:
        note += f": on one node `{distributed.launch}`"
    if distributed.world_size > 1:
        note += (
            f"; on several nodes, `{distributed.launch_nodes}` on each (any --nnodes x --nproc_per_node that makes"
            f" {distributed.world_size}), with NODE_RANK 0 on the node at NODE0_ADDRESS, 1, 2, ... on the others"
        )
    note += ". Run without torchrun, the script says so and exits with status 2."
    return replace(header, choices=choices, launch=distributed.launch, notes=(*header.notes, note))


def resolve_header(
    spec: Spec,
    optimizers: Optimizers,
    script_name: str,
    device: Device,
    precision: Precision,
    bounds: Bounds,
    optimization: Optimization,
    validation: Validation,
) -> Header:
    choices = [f"accelerator={device.name}", f"precision={precision.name}"]
    choices.append(
        f"max_epochs={bounds.max_epochs}" + (f", max_steps={bounds.max_steps}" if bounds.max_steps != -1 else "")
    )
    if optimization.schedule is not None:
        choices.append(f"accumulate_grad_batches={dict(optimization.schedule)}")
    elif optimization.accumulates:
        choices.append(f"accumulate_grad_batches={optimization.accumulate}")
    if optimization.clip:
        choices.append(f"gradient_clip_val={optimization.clip_val} ({spec.trainer.gradient_clip_algorithm})")
    choices.append("validation" if validation.enabled else "no validation")
    notes = []
    if optimizers.general:
        notes.append(
            f"General where the source does not say: {optimizers.general_reason}, so this script unpacks any of the"
            " forms Lightning accepts and checks at run time what it gets."
        )
    return Header(
        version=__version__,
        spec_name=spec.path.name,
        spec_sha256=spec.sha256,
        script_name=script_name,
        model_module=spec.model.module,
        model_package=spec.model.module.split(".")[0],
        choices=tuple(choices),
        launch=f"python {script_name}",
        notes=tuple(notes),
        templates_sha256=templates_sha256(),
    )
