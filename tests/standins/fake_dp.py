"""tests.standins.fake_cuda plus a recording torch.nn.DataParallel that runs its "GPUs" one after the other on
the CPU: the batch's tensors are split along dimension 0 into one slice per device id, the wrapped module runs
on each slice, and the outputs are gathered as DataParallel gathers them (tensors concatenated along dimension
0, a 0-dim tensor unsqueezed first, dicts, lists and tuples element-wise, None kept).

    python -m tests.standins.fake_dp SCRIPT OUT.json [WEIGHTS.pt] [-- SCRIPT ARGUMENTS]
"""

from __future__ import annotations

import torch

from tests.standins import fake_cuda
from tests.standins.calls import CALLS


def _scatter(value, n):
    if isinstance(value, torch.Tensor):
        return list(value.chunk(n))
    if isinstance(value, (list, tuple)) and value:
        return [type(value)(parts) for parts in zip(*(_scatter(item, n) for item in value))]
    if isinstance(value, dict) and value:
        keys = list(value)
        return [dict(zip(keys, parts)) for parts in zip(*(_scatter(value[k], n) for k in keys))]
    return [value] * n


def _gather(outputs):
    first = outputs[0]
    if first is None:
        return None
    if isinstance(first, torch.Tensor):
        return torch.cat([o.unsqueeze(0) if o.dim() == 0 else o for o in outputs])
    if isinstance(first, dict):
        return {key: _gather([o[key] for o in outputs]) for key in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_gather(list(parts)) for parts in zip(*outputs))
    raise TypeError(f"DataParallel cannot gather {type(first).__name__}")


class DataParallel(torch.nn.Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = list(device_ids)
        CALLS.append(("DataParallel", type(module).__name__, self.device_ids))

    def forward(self, *inputs):
        CALLS.append(("DataParallel.forward", inputs[0], len(self.device_ids)))
        slices = _scatter(inputs, len(self.device_ids))
        return _gather([self.module(*inputs_i) for inputs_i in slices])


torch.nn.DataParallel = DataParallel

if __name__ == "__main__":
    fake_cuda.main()
