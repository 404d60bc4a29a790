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
