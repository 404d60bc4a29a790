"""Run a generated TPU script against the torch_xla stand-in (tests/standins/torch_xla), as its own
`python train.py` would, recording the calls.

    python -m tests.standins.fake_xla SCRIPT OUT.json WEIGHTS.pt WORLD_SIZE [ORDINAL] [-- SCRIPT_ARGS...]

WORLD_SIZE is what the runtime reports (the script checks it against its `devices`), ORDINAL this process's
place among them (0 by default); SCRIPT_ARGS the script's command line (a subcommand: `-- test`). The optimizer's
step and zero_grad are recorded; the model that went to the device is saved at the end.
"""

from __future__ import annotations

import json
import runpy
import sys

import torch
import torch_xla

from tests.standins.calls import CALLS


def main() -> None:
    argv, script_args = sys.argv[1:], []
    if "--" in argv:
        argv, script_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    script, out, weights, world_size = argv[:4]
    torch_xla.WORLD_SIZE = int(world_size)
    torch_xla.ORDINAL = int(argv[4]) if len(argv) > 4 else 0
    moved = []
    module_to, step, zero_grad = torch.nn.Module.to, torch.optim.SGD.step, torch.optim.SGD.zero_grad

    def to(self, *args, **kwargs):
        if not moved:
            CALLS.append(("module.to", str(args[0] if args else kwargs.get("device"))))
            moved.append(self)
        return module_to(self, *args, **kwargs)

    def recording_step(self, *args, **kwargs):
        CALLS.append(("optimizer.step",))
        return step(self, *args, **kwargs)

    def recording_zero_grad(self, *args, **kwargs):
        CALLS.append(("optimizer.zero_grad",))
        return zero_grad(self, *args, **kwargs)

    torch.nn.Module.to, torch.optim.SGD.step, torch.optim.SGD.zero_grad = to, recording_step, recording_zero_grad
    sys.argv = [script, *script_args]
    runpy.run_path(script, run_name="__main__")
    with open(out, "w") as f:
        json.dump(CALLS, f)
    torch.save(moved[0].state_dict(), weights)


if __name__ == "__main__":
    main()
