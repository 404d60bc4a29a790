"""torch_xla.distributed.xla_multiprocessing.spawn, recording: the function runs here, as ordinal
torch_xla.ORDINAL."""

import torch_xla

from tests.standins.calls import CALLS


def spawn(fn, args=(), nprocs=None, start_method="spawn"):
    CALLS.append(("xmp.spawn", nprocs))
    fn(torch_xla.ORDINAL, *args)
