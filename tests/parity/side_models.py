"""Deliberately broken modules for `loopgen verify`'s tests: each trains, or fails, differently under the script than
under Lightning's Trainer, as verify's LOOPGEN_VERIFY_SIDE variable says which run it is in. SideDependent doubles
its loss from its 4th optimizer step in the script's run."""

import importlib
import os

from tests.parity.eval_models import EvalModel
from tests.parity.models import MLP


class SideDependent(MLP):
    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        if self.global_step >= 3 and os.environ.get("LOOPGEN_VERIFY_SIDE") == "script":
            loss = loss * 2
        return loss


class LightningSideFails(MLP):
    """Lightning's run fails (the reference cannot be built); the script's would train."""

    def __init__(self, hidden: int = 32) -> None:
        if os.environ.get("LOOPGEN_VERIFY_SIDE") == "lightning":
            raise RuntimeError("this model cannot be built under Lightning")
        super().__init__(hidden)


class ScriptSideFails(MLP):
    """The script's run fails at its 2nd optimizer step, where Lightning's trains on: a RuntimeError, or with
    `missing_module` the import of that module."""

    def __init__(self, hidden: int = 32, missing_module: str = "") -> None:
        super().__init__(hidden)
        self.missing_module = missing_module

    def training_step(self, batch, batch_idx):
        if self.global_step >= 1 and os.environ.get("LOOPGEN_VERIFY_SIDE") == "script":
            if self.missing_module:
                importlib.import_module(self.missing_module)
            raise RuntimeError("the script's run broke here")
        return super().training_step(batch, batch_idx)


class EvalSideDependent(EvalModel):
    """Trains identically under both; its test_step logs a loss 1% higher in the script's run."""

    def test_step(self, batch, batch_idx):
        loss = self._evaluate(batch, "test")
        if os.environ.get("LOOPGEN_VERIFY_SIDE") == "script":
            self.log("test_loss", loss * 1.01)
        return loss
