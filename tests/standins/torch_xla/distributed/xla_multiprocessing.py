"""torch_xla.distributed.xla_multiprocessing.spawn, recording: the function runs here, as ordinal 0."""

from tests.standins.calls import CALLS


def spawn(fn, args=(), nprocs=None, start_method="spawn"):
    CALLS.append(("xmp.spawn", nprocs))
    fn(0, *args)
