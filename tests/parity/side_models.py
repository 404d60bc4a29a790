"""A deliberately broken module for `loopgen verify`'s tests: it trains differently under the script than under
Lightning's Trainer (from its 4th optimizer step, its loss is doubled when `loopgen verify` runs it as the script
side, which verify's LOOPGEN_VERIFY_SIDE variable says)."""

import os

from tests.parity.models import MLP


class SideDependent(MLP):
    def training_step(self, batch, batch_idx):
        loss = super().training_step(batch, batch_idx)
        if self.global_step >= 3 and os.environ.get("LOOPGEN_VERIFY_SIDE") == "script":
            loss = loss * 2
        return loss
