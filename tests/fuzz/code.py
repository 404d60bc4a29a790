"""Drawn module code: a LightningModule, a data module and a callback whose hooks change training as a function of
what they see.

The spec draws (tests/fuzz/specs.py) vary the flags over the zoo's fixed modules; these draw the code itself. A
drawn module subclasses the zoo's LitRegression and overrides some of the training, validation, optimizer and
clipping hooks, `setup` and the batch-transfer hooks; a drawn data module subclasses the zoo's RegressionData and
overrides its `setup`, loaders and batch-transfer hooks (which Lightning calls where the module does not override
them); a drawn callback acts on the module and its optimizer. Each
body depends on what Lightning hands it: trainer attributes (read directly, through `getattr` by name, and through
a helper function the module's file defines), the logged metrics (`trainer.callback_metrics`), the hook's arguments
and the random state (torch's generator, seeded by `seed_everything` on both sides).

`drawn_code(draw)` returns the source of one module file (its name derived from the text) and the class names of
its module, data module and callback; the fuzzer writes the file where both sides import it (tests/fuzz/check.py).
"""

from __future__ import annotations

import hashlib

from hypothesis import strategies as st

# a factor near 1 computed from what the hook sees: (code, what it reads)
FACTORS = (
    "1.0 + 0.1 * self.current_epoch",
    "0.5 if self.trainer.is_last_batch else 1.0",
    '1.0 + 0.05 * (getattr(self.trainer, "global_step") % {k})',
    "step_scale(self.trainer, {k})",
    '1.0 + 0.1 * float(self.trainer.callback_metrics.get("val_loss", torch.tensor(0.0)))',
    "1.0 + 0.1 * torch.rand(()).item()",
    "1.0 + 0.1 * batch_idx / max(1, self.trainer.num_training_batches)",
    "1.0 + 0.2 * self.noise",
    '1.0 + 0.05 * len(getattr(self.trainer, "logged_metrics"))',
    "2.0 if self.trainer.estimated_stepping_batches > {big} else 1.0",
)
# the factors a hook without batch_idx may use
NO_BATCH = tuple(f for f in FACTORS if "batch_idx" not in f)
# the factors a data module's hooks may use (it reaches the trainer, not the module's attributes)
DATA_FACTORS = (
    "1.0 + 0.1 * self.trainer.current_epoch",
    '1.0 + 0.05 * (getattr(self.trainer, "global_step") % {k})',
    "step_scale(self.trainer, {k})",
    "1.0 + 0.1 * torch.rand(()).item()",
    "1.0 + 0.05 * len(self.trainer.callback_metrics)",
    "0.5 if self.trainer.sanity_checking else 1.0",
    "1.0 + 0.2 * self.noise",
)

HEADER = '''"""Drawn by tests/fuzz/code.py."""

import torch
from pytorch_lightning.callbacks import Callback
from torch.nn import functional as F

from tests.fuzz.zoo import LitRegression, RegressionData


def step_scale(trainer, k):
    """A helper the hooks hand the trainer to."""
    return 1.0 + 0.1 * (trainer.global_step % k)
'''


@st.composite
def factor(draw: st.DrawFn, batch: bool = True) -> str:
    text = draw(st.sampled_from(FACTORS if batch else NO_BATCH))
    return text.format(k=draw(st.sampled_from((2, 3, 5))), big=draw(st.sampled_from((5, 20, 1000))))


@st.composite
def module_hooks(draw: st.DrawFn) -> list[str]:
    hooks = []
    noise = draw(st.booleans())
    if noise:  # random state drawn in setup, read by a factor
        hooks.append(
            "    def setup(self, stage):\n"
            "        super().setup(stage)\n"
            "        self.noise = torch.rand(()).item()\n"
        )
    uses = [kind for kind in ("step", "log", "before_step", "optimizer_step", "clipping", "batch_start",
                              "transfer", "val_end") if draw(st.integers(0, 2)) == 0]  # fmt: skip

    def f(batch: bool = True) -> str:
        text = draw(factor(batch))
        return text.replace("self.noise", "0.3") if not noise else text

    if "step" in uses:
        hooks.append(
            "    def training_step(self, batch, batch_idx):\n"
            "        x, y = batch\n"
            "        loss = F.mse_loss(self(x), y)\n"
            '        self.log("train_loss", loss)\n'
            f"        return loss * ({f()})\n"
        )
    if "log" in uses:
        hooks.append(
            "    def on_train_batch_end(self, outputs, batch, batch_idx):\n"
            f'        self.log("drawn", torch.tensor({f()}), on_step=True, on_epoch={draw(st.booleans())})\n'
        )
    if "before_step" in uses:
        hooks.append(
            "    def on_before_optimizer_step(self, optimizer):\n"
            f"        scale = {f(batch=False)}\n"
            "        for p in self.parameters():\n"
            "            if p.grad is not None:\n"
            "                p.grad.mul_(scale)\n"
        )
    if "optimizer_step" in uses:
        k, r = draw(st.sampled_from((2, 3))), draw(st.sampled_from((0, 1)))
        hooks.append(
            "    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):\n"
            f"        if batch_idx % {k} == {r}:\n"
            "            optimizer_closure()  # the step skipped\n"
            "        else:\n"
            "            optimizer.step(closure=optimizer_closure)\n"
        )
    if "clipping" in uses:
        hooks.append(
            "    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):\n"
            f"        if self.current_epoch >= {draw(st.sampled_from((0, 1)))}:\n"
            f"            self.clip_gradients(optimizer, gradient_clip_val={draw(st.sampled_from((0.01, 0.1)))},"
            ' gradient_clip_algorithm="value")\n'
            "        else:\n"
            "            self.clip_gradients(optimizer, gradient_clip_val=gradient_clip_val,"
            " gradient_clip_algorithm=gradient_clip_algorithm)\n"
        )
    if "batch_start" in uses:
        hooks.append(
            "    def on_train_batch_start(self, batch, batch_idx):\n"
            f"        if self.current_epoch == {draw(st.sampled_from((0, 1)))} and batch_idx == "
            f"{draw(st.sampled_from((2, 4)))}:\n"
            "            return -1  # the rest of the epoch skipped\n"
            "        return None\n"
        )
    if "transfer" in uses:
        hooks.append(
            "    def on_after_batch_transfer(self, batch, dataloader_idx):\n"
            "        x, y = batch\n"
            "        if self.training:\n"
            f"            x = x + {draw(st.sampled_from((0.01, 0.1)))} * torch.randn_like(x)\n"
            "        return x, y\n"
        )
    if "val_end" in uses:
        hooks.append(
            "    def on_validation_epoch_end(self):\n"
            f'        self.log("val_drawn", torch.tensor({f(batch=False)}))\n'
        )
    return hooks


@st.composite
def data_hooks(draw: st.DrawFn) -> list[str]:
    hooks = []
    noise = draw(st.booleans())

    def f() -> str:
        text = draw(st.sampled_from(DATA_FACTORS)).format(k=draw(st.sampled_from((2, 3, 5))))
        return text.replace("self.noise", "0.3") if not noise else text

    if noise:  # random state drawn in setup (after the module's), read by a factor
        hooks.append(
            "    def setup(self, stage=None):\n"
            "        super().setup(stage)\n"
            "        self.noise = torch.rand(()).item()\n"
        )
    uses = [kind for kind in ("before", "after", "loader") if draw(st.integers(0, 1)) == 0]
    if "before" in uses:
        hooks.append(
            "    def on_before_batch_transfer(self, batch, dataloader_idx):\n"
            "        x, y = batch\n"
            f"        return x * ({f()}), y\n"
        )
    if "after" in uses:
        hooks.append(
            "    def on_after_batch_transfer(self, batch, dataloader_idx):\n"
            "        x, y = batch\n"
            "        if self.trainer.training:\n"
            f"            x = x + {draw(st.sampled_from((0.01, 0.1)))} * torch.randn_like(x) * ({f()})\n"
            "        return x, y\n"
        )
    if "loader" in uses:
        sizes = draw(st.sampled_from(((16, 12), (12, 16), (8, 24))))
        hooks.append(
            "    def train_dataloader(self):\n"
            f"        size = {sizes[0]} if self.trainer.current_epoch % 2 == 0 else {sizes[1]}\n"
            "        return torch.utils.data.DataLoader(self.train_set, batch_size=size, shuffle=True)\n"
        )
    return hooks


@st.composite
def callback_hooks(draw: st.DrawFn) -> list[str]:
    hooks = []
    if draw(st.booleans()):
        gamma = draw(st.sampled_from((0.9, 0.5)))
        every = draw(st.sampled_from((2, 3)))
        hooks.append(
            "    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n"
            f'        if getattr(trainer, "global_step") % {every} == 0:\n'
            "            for group in trainer.optimizers[0].param_groups:\n"
            f'                group["lr"] *= {gamma}\n'
        )
    if draw(st.booleans()):
        hooks.append(
            "    def on_train_epoch_end(self, trainer, pl_module):\n"
            '        loss = trainer.callback_metrics.get("train_loss")\n'
            f"        if loss is not None and loss < {draw(st.sampled_from((0.05, 0.5, 5.0)))}:\n"
            "            with torch.no_grad():\n"
            "                for p in pl_module.parameters():\n"
            "                    p.mul_(0.99)\n"
        )
    if draw(st.booleans()):
        hooks.append(
            "    def on_validation_end(self, trainer, pl_module):\n"
            "        if not trainer.sanity_checking:\n"
            '            pl_module.log_count = getattr(pl_module, "log_count", 0) + len(trainer.logged_metrics)\n'
        )
    return hooks


@st.composite
def drawn_code(draw: st.DrawFn) -> tuple[str, str, str | None, str | None]:
    """(the module file's source, the module's class name, the data module's and the callback's class names or
    None)."""
    module = draw(module_hooks())
    data = draw(data_hooks()) if draw(st.integers(0, 2)) == 0 else None
    callback = draw(callback_hooks())
    text = HEADER + "\n\nclass DrawnModule(LitRegression):\n"
    text += "\n".join(module) if module else "    pass\n"
    if data is not None:
        text += "\n\nclass DrawnData(RegressionData):\n" + ("\n".join(data) if data else "    pass\n")
    if callback:
        text += "\n\nclass DrawnCallback(Callback):\n" + "\n".join(callback)
    return text, "DrawnModule", "DrawnData" if data is not None else None, "DrawnCallback" if callback else None


def module_name(text: str) -> str:
    """The file's module name, from its text: the same code is the same module, other code another."""
    return "drawn_" + hashlib.sha256(text.encode()).hexdigest()[:12]
