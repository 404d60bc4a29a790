"""torch_xla.runtime, recording: this process is ordinal torch_xla.ORDINAL of torch_xla.WORLD_SIZE."""

import torch_xla

from tests.standins.calls import CALLS


def world_size():
    CALLS.append(("xr.world_size",))
    return torch_xla.WORLD_SIZE


def global_ordinal():
    CALLS.append(("xr.global_ordinal",))
    return torch_xla.ORDINAL


def local_ordinal():
    return torch_xla.ORDINAL


def host_index():
    return 0
