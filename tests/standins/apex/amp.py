"""apex.amp's API as loopgen's scripts use it, recording each call instead of casting anything."""

from contextlib import contextmanager

from tests.standins.calls import CALLS


def initialize(model, optimizers, opt_level):
    CALLS.append(("apex.initialize", type(model).__name__, len(optimizers), opt_level))
    return model, optimizers


@contextmanager
def scale_loss(loss, optimizer):
    CALLS.append(("apex.scale_loss.enter", type(optimizer).__name__))
    yield loss * 1.0
    CALLS.append(("apex.scale_loss.exit", type(optimizer).__name__))


def master_params(optimizer):
    for group in optimizer.param_groups:
        yield from group["params"]
