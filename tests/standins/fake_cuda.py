"""Run a generated script's main() as if CUDA were there, recording the device and AMP calls.

    python -m tests.standins.fake_cuda SCRIPT OUT.json [WEIGHTS.pt] [-- SCRIPT ARGUMENTS]

`torch.cuda.is_available()` answers True; moving a module or a tensor to "cuda" records the move and keeps
the data on the CPU; torch.autocast("cuda", ...) and torch.amp.GradScaler("cuda") are recording stand-ins.
The optimizer's step, zero_grad and the model's hooks are wrapped to record their order.
"""

from __future__ import annotations

import contextlib
import json
import runpy
import sys

import torch

from tests.standins.calls import CALLS

torch.cuda.is_available = lambda: True


def memory_stats(device=None) -> dict:
    """torch.cuda.memory_stats's shape: flat names, numbers (a few of its keys)."""
    CALLS.append(("cuda.memory_stats", str(device)))
    return {"allocated_bytes.all.current": 1024, "num_alloc_retries": 0, "reserved_bytes.all.peak": 2048}


torch.cuda.memory_stats = memory_stats
torch.cuda.get_rng_state_all = list
torch.cuda.set_rng_state_all = lambda states: CALLS.append(("cuda.set_rng_state_all",))

_module_to = torch.nn.Module.to
_tensor_to = torch.Tensor.to


def _is_cuda(args, kwargs) -> bool:
    target = args[0] if args else kwargs.get("device")
    return str(target).startswith("cuda")


def module_to(self, *args, **kwargs):
    if _is_cuda(args, kwargs):
        CALLS.append(("module.to", "cuda"))
        return self
    return _module_to(self, *args, **kwargs)


def tensor_to(self, *args, **kwargs):
    if _is_cuda(args, kwargs):
        CALLS.append(("tensor.to", "cuda", kwargs.get("non_blocking", False)))
        return self
    return _tensor_to(self, *args, **kwargs)


torch.nn.Module.to = module_to
torch.Tensor.to = tensor_to


class Autocast(contextlib.ContextDecorator):
    def __init__(self, device_type, dtype=None, cache_enabled=True):
        self.args = (device_type, str(dtype), cache_enabled)

    def __enter__(self):
        CALLS.append(("autocast.enter", *self.args))

    def __exit__(self, *exc):
        CALLS.append(("autocast.exit",))


class GradScaler:
    def __init__(self, device="cuda", enabled=True):
        CALLS.append(("GradScaler", device, enabled))

    def scale(self, loss):
        CALLS.append(("scaler.scale",))
        return loss

    def unscale_(self, optimizer):
        CALLS.append(("scaler.unscale_",))

    def step(self, optimizer):
        CALLS.append(("scaler.step",))
        optimizer.step()

    def update(self):
        CALLS.append(("scaler.update",))
        self.updates = getattr(self, "updates", 0) + 1

    def state_dict(self):
        return {"updates": getattr(self, "updates", 0)}

    def load_state_dict(self, state):
        CALLS.append(("scaler.load_state_dict", state))
        self.updates = state["updates"]


torch.autocast = Autocast
torch.amp.GradScaler = GradScaler

_clip = torch.nn.utils.clip_grad_norm_


def clip_grad_norm_(parameters, max_norm, *args, **kwargs):
    CALLS.append(("clip_grad_norm_", max_norm))
    return _clip(parameters, max_norm, *args, **kwargs)


torch.nn.utils.clip_grad_norm_ = clip_grad_norm_


def recorded(name, method):
    def wrapper(self, *args, **kwargs):
        CALLS.append((name,))
        return method(self, *args, **kwargs)

    return wrapper


torch.optim.Optimizer.zero_grad = recorded("optimizer.zero_grad", torch.optim.Optimizer.zero_grad)
torch.Tensor.backward = recorded("backward", torch.Tensor.backward)


def main() -> None:
    arguments, script_arguments = sys.argv[1:], []
    if "--" in arguments:
        arguments, script_arguments = arguments[: arguments.index("--")], arguments[arguments.index("--") + 1 :]
    script, out = arguments[0], arguments[1]
    namespace = runpy.run_path(script)
    original_step = namespace.get("torch").optim.SGD.step

    def step(self, *args, **kwargs):
        CALLS.append(("optimizer.step",))
        return original_step(self, *args, **kwargs)

    torch.optim.SGD.step = step
    sys.argv = [script, *script_arguments]
    model = namespace["main"]()
    with open(out, "w") as f:
        json.dump(CALLS, f)
    if len(arguments) > 2:  # fit's final weights, or what an evaluation run returned
        torch.save(model.state_dict() if isinstance(model, torch.nn.Module) else model, arguments[2])


if __name__ == "__main__":
    main()
