"""Run a generated script's main() in one process of a multi-process launch (horovodrun, torchrun) and save the
final weights from the first process only.

    horovodrun -np 2 -H localhost:2 python -m tests.horovod.run_script SCRIPT OUT.pt [SCRIPT OUT.pt ...]
    torchrun --nproc_per_node=2 -m tests.horovod.run_script SCRIPT OUT.pt

Several SCRIPT OUT pairs run in turn, in one launch. The rank is read from the launcher's environment
(HOROVOD_RANK or RANK), so that this file never imports horovod. The scripts' main() runs without their `__main__`
block, so the process group a torchrun script started is destroyed here, as that block does: a process that exits
with Gloo's threads still running may abort ("terminate called without an active exception").
"""

from __future__ import annotations

import os
import runpy
import sys

import torch
import torch.distributed


def main() -> None:
    args = sys.argv[1:]
    for script, out in zip(args[::2], args[1::2]):
        sys.argv = [script]
        model = runpy.run_path(script)["main"]()
        if int(os.environ.get("HOROVOD_RANK", os.environ.get("RANK", "0"))) == 0:
            torch.save({"state_dict": model.state_dict(), "records": getattr(model, "records", None)}, out)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
