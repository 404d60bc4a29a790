"""torch_xla.core.xla_model, recording: the device is the CPU."""

import torch
import torch_xla

from tests.standins.calls import CALLS


def xla_device(n=None):
    CALLS.append(("xm.xla_device",))
    return torch.device("cpu")


def mark_step():
    CALLS.append(("xm.mark_step",))


def reduce_gradients(optimizer, groups=None, pin_layout=True):
    # every process holds the same gradients here: their mean is this process's
    CALLS.append(("xm.reduce_gradients", type(optimizer).__name__))


def optimizer_step(optimizer, barrier=False, optimizer_args=None, groups=None, pin_layout=True):
    CALLS.append(("xm.optimizer_step",))
    reduce_gradients(optimizer)
    return optimizer.step(**(optimizer_args or {}))


def mesh_reduce(tag, data, reduce_fn):
    CALLS.append(("xm.mesh_reduce", tag, float(data)))
    return reduce_fn([data] * torch_xla.WORLD_SIZE)


def rendezvous(tag, payload=b"", replicas=None):
    CALLS.append(("xm.rendezvous", tag))
    return [payload] * torch_xla.WORLD_SIZE


def save(data, path, master_only=True, global_master=False):
    CALLS.append(("xm.save", str(path), master_only))
    torch.save(data, path)


def _maybe_convert_to_cpu(data, convert=True):
    """torch_xla's: the data with its XLA tensors synced and, with `convert`, copied to the CPU (new tensors;
    the rest as it is). Here the device is the CPU: the copies are new CPU tensors."""
    CALLS.append(("xm._maybe_convert_to_cpu", convert))

    def copy(value):
        if type(value) is torch.Tensor:
            return value.detach().to("cpu", copy=True) if convert else value
        if isinstance(value, dict):
            return type(value)((key, copy(item)) for key, item in value.items())
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(copy(item) for item in value)
        return value

    return copy(data)


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    """torch_xla's: every process's tensors (in place) become the root's. This process is ordinal 0, the root."""
    CALLS.append(("xm.collective_broadcast", root_ordinal, [str(t.dtype) for t in tensors]))
