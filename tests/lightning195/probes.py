"""Small experiments behind docs/lightning-1.9.5-semantics.md: each prints the trace quoted there.

    PYTHONPATH=<repo root> <venv195>/bin/python -m tests.lightning195.probes [NAME ...]

Runs under pytorch-lightning 1.9.5 only (CPU). Without NAME, runs every probe.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
import logging

import pytorch_lightning as pl

for _name in ("pytorch_lightning", "lightning_fabric"):
    logging.getLogger(_name).setLevel(logging.ERROR)

from tests.lightning195.models import LBFGSRegression, TBPTTRegressor, TwoOptimizerGAN

PROBES: dict[str, Callable[[], None]] = {}


def probe(fn: Callable[[], None]) -> Callable[[], None]:
    PROBES[fn.__name__] = fn
    return fn


def trainer(**kwargs: Any) -> pl.Trainer:
    base = {
        "accelerator": "cpu",
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
    }
    base.update(kwargs)
    return pl.Trainer(**base)


def loader(n: int = 10, batch_size: int = 2, features: int = 3, seed: int = 0) -> DataLoader:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def events(records: list[dict], *hooks: str) -> list[dict]:
    return [r for r in records if r["hook"] in hooks]


def fmt(x: Any, nd: int = 4) -> str:
    if isinstance(x, float):
        return f"{x:.{nd}g}"
    if isinstance(x, list):
        return "[" + ", ".join(fmt(v, nd) for v in x) + "]"
    return str(x)


# ------------------------------------------------------------------------------------------------------
# 1. multiple optimizers


def seed_active(total_batch_idx: int, freqs: list[int]) -> int:
    """The seed loop's `_get_optimizers_iterable` (0.9): uses total_batch_idx across epochs."""
    cumsum = np.cumsum(freqs)
    return int(np.argmax(cumsum > total_batch_idx % cumsum[-1]))


@probe
def frequencies() -> None:
    """frequencies [2, 1], 5 batches/epoch, 3 epochs, epoch-interval StepLR(gamma=.5) per optimizer."""
    pl.seed_everything(0)
    model = TwoOptimizerGAN(num_samples=40, batch_size=8, frequencies=[2, 1], scheduler_interval="epoch")
    trainer(max_epochs=3).fit(model)
    for total, r in enumerate(events(model.records, "training_step")):
        print(
            f"epoch {r['epoch']} batch_idx {r['batch_idx']} total {total}: optimizer_idx {r['optimizer_idx']}"
            f" ({r['optimizer_idx_type']}), seed loop would pick {seed_active(total, [2, 1])},"
            f" global_step before {r['global_step']}"
        )
    for r in events(model.records, "on_train_epoch_end"):
        print(f"end of epoch {r['epoch']}: lrs {r['lrs']}  (epoch schedulers stepped: only the active optimizer's)")


@probe
def frequencies_step_schedulers() -> None:
    """frequencies [2, 1], step-interval StepLR(gamma=.5): which optimizer's LR moves after each batch."""
    pl.seed_everything(0)
    model = TwoOptimizerGAN(num_samples=40, batch_size=8, frequencies=[2, 1], scheduler_interval="step")
    trainer(max_epochs=2).fit(model)
    ran = {(r["epoch"], r["batch_idx"]): r["optimizer_idx"] for r in events(model.records, "training_step")}
    prev = [0.05, 0.05]
    for total, r in enumerate(events(model.records, "on_train_batch_end")):
        moved = [i for i in range(2) if r["lrs"][i] != prev[i]]
        print(
            f"epoch {r['epoch']} batch_idx {r['batch_idx']} (total {total}): trained optimizer"
            f" {ran[(r['epoch'], r['batch_idx'])]}, scheduler stepped for optimizer {moved}, lrs {r['lrs']}"
        )
        prev = r["lrs"]


@probe
def two_optimizers() -> None:
    """No frequencies: hook order of one batch, requires_grad during each step, global_step, outputs."""
    pl.seed_everything(0)
    model = TwoOptimizerGAN(num_samples=16, batch_size=8, scheduler_interval="step")
    trainer(max_epochs=1).fit(model)
    for r in model.records:
        if r.get("batch_idx", 0) > 0 or r["hook"] in ("training_epoch_end", "on_train_epoch_end"):
            break
        extra = ""
        if r["hook"] == "training_step":
            extra = f"optimizer_idx={r['optimizer_idx']} requires_grad={r['requires_grad']}"
        elif "optimizer_idx" in r:
            extra = f"optimizer_idx={r['optimizer_idx']}"
        elif r["hook"] == "on_after_backward":
            extra = f"grad sums {fmt(r['grad_sums'], 3)}"
        elif r["hook"] == "on_train_batch_end":
            extra = f"outputs={[{k: (v['tensor'] if isinstance(v, dict) else v) for k, v in o.items()} for o in r['outputs']]} lrs={r['lrs']}"
        print(f"[global_step {r['global_step']}] {r['hook']} {extra}")
    (epoch_end,) = events(model.records, "training_epoch_end")
    out = epoch_end["outputs"]
    print(
        "training_epoch_end outputs: len",
        len(out),
        "x",
        [len(o) for o in out],
        "; outputs[1] =",
        [{"loss": d["loss"]["tensor"], "optimizer_idx": d["optimizer_idx"]} for d in out[1]],
    )


@probe
def toggle() -> None:
    """toggle_optimizer / untoggle_optimizer with a frozen parameter and a parameter in no optimizer."""

    class M(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 1)
            self.b = nn.Linear(3, 1)
            self.c = nn.Linear(3, 1)  # in no optimizer
            self.a.bias.requires_grad_(False)  # frozen but in optimizer 0
            self.seen = []

        def state(self):
            return {n: p.requires_grad for n, p in self.named_parameters()}

        def training_step(self, batch, batch_idx, optimizer_idx):
            self.seen.append((batch_idx, optimizer_idx, self.state()))
            x, y = batch
            return F.mse_loss(self.a(x) + self.b(x) + self.c(x), y)

        def on_train_batch_end(self, *args):
            self.seen.append(("after batch", None, self.state()))

        def configure_optimizers(self):
            return [torch.optim.SGD(self.a.parameters(), lr=0.1), torch.optim.SGD(self.b.parameters(), lr=0.1)]

        def train_dataloader(self):
            return loader(2, 2)

    model = M()
    trainer(max_epochs=1).fit(model)
    for batch_idx, opt, state in model.seen:
        print(batch_idx, opt, state)


@probe
def tbptt_two_optimizers() -> None:
    """TBPTT with two optimizers: which hiddens the second optimizer's training_step receives."""

    class M(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.rnn = nn.RNN(2, 3, batch_first=True)
            self.head = nn.Linear(3, 1)
            self.truncated_bptt_steps = 2
            self.seen = []

        def training_step(self, batch, batch_idx, optimizer_idx, hiddens):
            x, y = batch
            out, h = self.rnn(x, hiddens)
            self.seen.append(
                (
                    batch_idx,
                    optimizer_idx,
                    None if hiddens is None else round(hiddens.sum().item(), 4),
                    round(h.sum().item(), 4),
                )
            )
            return {"loss": F.mse_loss(self.head(out), y), "hiddens": h}

        def configure_optimizers(self):
            return [torch.optim.SGD(self.rnn.parameters(), lr=0.1), torch.optim.SGD(self.head.parameters(), lr=0.1)]

        def train_dataloader(self):
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(2, 4, 2, generator=gen)
            return DataLoader(TensorDataset(x, x.sum(2, keepdim=True)), batch_size=2)

    pl.seed_everything(0)
    model = M()
    t = trainer(max_epochs=1)
    t.fit(model)
    for batch_idx, opt, h_in, h_out in model.seen:
        print(f"batch {batch_idx} optimizer {opt}: hiddens in sum {h_in}, hiddens out sum {h_out}")
    print("global_step", t.global_step, "(2 splits x 2 optimizers)")


def _nesting(value: Any) -> Any:
    """Lists kept, each output dict shown as 'b<batch>s<split>o<opt>'."""
    if isinstance(value, list):
        return [_nesting(v) for v in value]
    if isinstance(value, dict):
        return value["tag"]
    return repr(value)


@probe
def outputs_nesting() -> None:
    """on_train_batch_end / training_epoch_end nesting for optimizers x tbptt x number of batches."""

    class M(pl.LightningModule):
        def __init__(self, n_opt: int, tbptt: int, n_batches: int, frequencies: list | None = None):
            super().__init__()
            self.rnn = nn.RNN(2, 3, batch_first=True)
            self.head = nn.Linear(3, 1)
            self.n_opt, self.n_batches, self.frequencies = n_opt, n_batches, frequencies
            self.truncated_bptt_steps = tbptt
            self.batch_end, self.epoch_end = [], None
            self.split = 0

        def on_train_batch_start(self, batch, batch_idx):
            self.split = 0

        def step(self, batch, batch_idx, optimizer_idx=0, hiddens=None):
            x, y = batch
            out, h = self.rnn(x, hiddens)
            tag = f"b{batch_idx}s{self.split // self.n_opt}o{optimizer_idx}"
            self.split += 1
            result = {"loss": F.mse_loss(self.head(out), y), "tag": tag}
            if self.truncated_bptt_steps:
                result["hiddens"] = h
            return result

        def on_train_batch_end(self, outputs, batch, batch_idx):
            self.batch_end.append(_nesting(outputs))

        def training_epoch_end(self, outputs):
            self.epoch_end = _nesting(outputs)

        def configure_optimizers(self):
            opts = [torch.optim.SGD(self.rnn.parameters(), lr=0.01), torch.optim.SGD(self.head.parameters(), lr=0.01)]
            if self.n_opt == 1:
                return torch.optim.SGD(self.parameters(), lr=0.01)
            if self.frequencies:
                return [{"optimizer": o, "frequency": f} for o, f in zip(opts, self.frequencies)]
            return opts

        def train_dataloader(self):
            x = torch.randn(self.n_batches, 4, 2, generator=torch.Generator().manual_seed(0))
            return DataLoader(TensorDataset(x, x.sum(2, keepdim=True)), batch_size=1)

    cases = [
        (1, 0, 3, None),
        (1, 0, 1, None),
        (2, 0, 2, None),
        (2, 0, 3, [2, 1]),
        (1, 2, 2, None),
        (1, 2, 1, None),
        (2, 2, 2, None),
    ]
    for n_opt, tbptt, n_batches, freqs in cases:
        cls = type("M", (M,), {})
        if n_opt == 1 and not tbptt:
            cls.training_step = lambda self, batch, batch_idx: M.step(self, batch, batch_idx)
        elif n_opt == 1:
            cls.training_step = lambda self, batch, batch_idx, hiddens: M.step(self, batch, batch_idx, 0, hiddens)
        elif not tbptt:
            cls.training_step = lambda self, batch, batch_idx, optimizer_idx: M.step(
                self, batch, batch_idx, optimizer_idx
            )
        else:
            cls.training_step = lambda self, batch, batch_idx, optimizer_idx, hiddens: M.step(
                self, batch, batch_idx, optimizer_idx, hiddens
            )
        model = cls(n_opt, tbptt, n_batches, freqs)
        trainer(max_epochs=1).fit(model)
        label = f"{n_opt} optimizer(s){' freq ' + str(freqs) if freqs else ''}, tbptt {tbptt} (4 steps), {n_batches} batch(es)"
        print(f"{label}:\n    on_train_batch_end: {model.batch_end}\n    training_epoch_end: {model.epoch_end}")


# ------------------------------------------------------------------------------------------------------
# accumulation


@probe
def accumulation() -> None:
    """accumulate_grad_batches=2, 5 batches: zero_grad / optimizer_step / scheduler / outputs['loss']."""

    class M(pl.LightningModule):
        def __init__(self, with_batch_idx: bool = True):
            super().__init__()
            self.lin = nn.Linear(3, 1)
            self.log_ = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.mse_loss(self.lin(x), y)
            self.log_.append(f"b{batch_idx}: training_step loss={loss.item():.5f}")
            return loss

        def on_before_zero_grad(self, optimizer):
            self.log_.append("  zero_grad")

        def on_before_optimizer_step(self, optimizer, optimizer_idx):
            self.log_.append(f"  optimizer_step (global_step before={self.trainer.global_step})")

        def on_train_batch_end(self, outputs, batch, batch_idx):
            self.log_.append(
                f"  on_train_batch_end outputs['loss']={outputs['loss'].item():.5f}"
                f" lr={self.trainer.optimizers[0].param_groups[0]['lr']}"
            )

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.1)
            return [opt], [{"scheduler": torch.optim.lr_scheduler.StepLR(opt, 1, 0.5), "interval": "step"}]

        def train_dataloader(self):
            return loader(10, 2)

    pl.seed_everything(0)
    model = M()
    t = trainer(max_epochs=1, accumulate_grad_batches=2)
    t.fit(model)
    print("\n".join(model.log_))
    print("global_step", t.global_step)


@probe
def accumulation_without_batch_idx() -> None:
    """training_step(self, batch) without batch_idx: Lightning passes batch_idx=0 to the zero_grad logic."""

    class M(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 1)
            self.log_ = []

        def training_step(self, batch):
            x, y = batch
            return F.mse_loss(self.lin(x), y)

        def on_train_batch_start(self, batch, batch_idx):
            self.log_.append(f"b{batch_idx}:")

        def on_before_zero_grad(self, optimizer):
            self.log_.append("  zero_grad")

        def on_before_optimizer_step(self, optimizer, optimizer_idx):
            self.log_.append("  optimizer_step")

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return loader(8, 2)

    model = M()
    trainer(max_epochs=1, accumulate_grad_batches=2).fit(model)
    print(" ".join(model.log_))


@probe
def accumulation_schedule() -> None:
    """accumulate_grad_batches={1: 2}: epoch 0 steps every batch (factor 1 added for epoch 0), epoch 1 every 2."""
    pl.seed_everything(0)
    model = TwoOptimizerGAN(num_samples=40, batch_size=8)
    t = trainer(max_epochs=2, accumulate_grad_batches={1: 2})
    t.fit(model)
    print("accumulation_scheduler.scheduling:", t.accumulation_scheduler.scheduling)
    for r in events(model.records, "on_train_batch_end"):
        print(f"epoch {r['epoch']} batch {r['batch_idx']}: global_step after batch {r['global_step']}")


@probe
def tbptt_accumulation() -> None:
    """TBPTT (3 splits) with accumulate_grad_batches=2, 3 batches: zero_grad runs in every split's closure."""
    pl.seed_everything(0)
    model = TBPTTRegressor(seq_len=7, num_samples=12, batch_size=4, tbptt_steps=3, cell="rnn")
    trainer(max_epochs=1, accumulate_grad_batches=2).fit(model)
    for r in model.records:
        if r["hook"] == "training_step":
            print(f"b{r['batch_idx']} split {r['split']}: training_step loss={r['loss']:.5f}")
        elif r["hook"] == "on_before_zero_grad":
            print("   zero_grad")
        elif r["hook"] == "on_after_backward":
            print(f"   backward -> head.bias.grad sum {r['grad_sums'][-1]:.6f}")
        elif r["hook"] == "on_before_optimizer_step":
            print(f"   optimizer_step (global_step before {r['global_step']})")


# ------------------------------------------------------------------------------------------------------
# TBPTT


@probe
def tbptt() -> None:
    """seq_len 7, truncated_bptt_steps 3, LSTM, a list element in the batch: splits and hiddens."""
    pl.seed_everything(0)
    model = TBPTTRegressor(seq_len=7, num_samples=8, batch_size=4, tbptt_steps=3, cell="lstm", extra_list_input=True)
    t = trainer(max_epochs=1)
    t.fit(model)
    for r in model.records:
        if r["hook"] == "training_step":
            h_in = (
                None
                if r["hiddens_in"] is None
                else [(fmt(h["sum"]), "requires_grad" if h["requires_grad"] else "detached") for h in r["hiddens_in"]]
            )
            h_out = [fmt(h["sum"]) for h in r["hiddens_out"]]
            print(
                f"b{r['batch_idx']} split {r['split']}: x {r['x_shape']} y {r['y_shape']} list {r['list_input']}"
                f" hiddens_in {h_in} hiddens_out {h_out} global_step {r['global_step']}"
            )
        elif r["hook"] in ("on_train_batch_start", "on_train_batch_end"):
            extra = ""
            if r["hook"] == "on_train_batch_end":
                extra = " outputs=" + str([fmt(o["loss"]["tensor"]) for o in r["outputs"]])
            print(f"  {r['hook']} b{r['batch_idx']}{extra}")
        elif r["hook"] == "training_epoch_end":
            print("training_epoch_end outputs shape:", [len(o) for o in r["outputs"]], "(batches x splits)")
    print("global_step", t.global_step)


@probe
def tbptt_errors() -> None:
    """The errors for a wrong training_step under truncated_bptt_steps (and hiddens without it)."""

    def make(step, tbptt_steps):
        class M(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.rnn = nn.RNN(2, 3, batch_first=True)
                self.truncated_bptt_steps = tbptt_steps

            training_step = step

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

            def train_dataloader(self):
                x = torch.zeros(2, 4, 2)
                return DataLoader(TensorDataset(x, x), batch_size=2)

        return M()

    def no_hiddens_arg(self, batch, batch_idx):
        out, h = self.rnn(batch[0])
        return {"loss": out.sum(), "hiddens": h}

    def no_hiddens_returned(self, batch, batch_idx, hiddens):
        out, _ = self.rnn(batch[0], hiddens)
        return out.sum()

    def hiddens_without_tbptt(self, batch, batch_idx):
        out, h = self.rnn(batch[0])
        return {"loss": out.sum(), "hiddens": h}

    for name, step, steps in [
        ("training_step(batch, batch_idx) with truncated_bptt_steps=2", no_hiddens_arg, 2),
        ("training_step returns a tensor with truncated_bptt_steps=2", no_hiddens_returned, 2),
        ("training_step returns hiddens with truncated_bptt_steps=0", hiddens_without_tbptt, 0),
    ]:
        try:
            trainer(max_epochs=1).fit(make(step, steps))
            print(f"{name}: no error")
        except Exception as error:  # noqa: BLE001
            print(f"{name}: {type(error).__name__}: {error}")
    for flag in ("truncated_bptt_steps", "terminate_on_nan"):
        try:
            trainer(**{flag: 2 if flag == "truncated_bptt_steps" else True})
        except TypeError as error:
            print(f"Trainer({flag}=...): TypeError: {error}")


# ------------------------------------------------------------------------------------------------------
# LBFGS / closures / optimizer_step overrides


@probe
def lbfgs() -> None:
    """LBFGS max_iter=4 with gradient_clip_val: closure evaluations per batch and where clipping happens."""
    lbfgs_state: list[str] = []

    class State(pl.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            opt = trainer.optimizers[0]
            state = opt.state[opt.param_groups[0]["params"][0]]
            lbfgs_state.append(
                f"func_evals {state['func_evals']}, n_iter {state['n_iter']},"
                f" |prev_flat_grad| {state['prev_flat_grad'].norm().item():.4f} (the clipped gradient LBFGS used)"
            )

    pl.seed_everything(0)
    model = LBFGSRegression(num_samples=16, batch_size=8, max_iter=4, lr=0.1)
    t = trainer(max_epochs=1, gradient_clip_val=1.0, limit_val_batches=0, callbacks=[State()])
    t.fit(model)
    for r in model.records:
        if r["hook"] == "training_step":
            print(f"b{r['batch_idx']} evaluation {r['evaluation']}: training_step loss {fmt(r['loss'])}")
        elif r["hook"] in ("on_before_zero_grad", "on_before_backward", "on_after_backward"):
            print(f"    {r['hook']}")
        elif r["hook"] == "on_before_optimizer_step":
            print(f"    on_before_optimizer_step (pre-clip grad norms {fmt(r['grad_norms'])}), then clip to 1.0")
        elif r["hook"] == "on_train_batch_end":
            print(
                f"  on_train_batch_end outputs loss {fmt(r['outputs']['loss']['tensor'])}"
                f" (the last evaluation's), global_step {r['global_step']}"
            )
            print(f"  LBFGS state after step: {lbfgs_state.pop(0)}")


@probe
def optimizer_hook_arguments() -> None:
    """What overridden optimizer_step / optimizer_zero_grad receive (two optimizers, using_native_amp declared)."""

    class M(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 1)
            self.b = nn.Linear(3, 1)
            self.log_ = []

        def training_step(self, batch, batch_idx, optimizer_idx):
            x, y = batch
            self.log_.append(f"    training_step(batch_idx={batch_idx}, optimizer_idx={optimizer_idx})")
            return F.mse_loss((self.a if optimizer_idx == 0 else self.b)(x), y)

        def optimizer_step(
            self,
            epoch,
            batch_idx,
            optimizer,
            optimizer_idx=0,
            optimizer_closure=None,
            on_tpu=False,
            using_native_amp=False,
            using_lbfgs=False,
        ):
            self.log_.append(
                f"optimizer_step(epoch={epoch}, batch_idx={batch_idx}, optimizer={type(optimizer).__name__},"
                f" optimizer_idx={optimizer_idx}, optimizer_closure={type(optimizer_closure).__name__},"
                f" on_tpu={on_tpu}, using_native_amp={using_native_amp}, using_lbfgs={using_lbfgs})"
            )
            optimizer.step(closure=optimizer_closure)

        def optimizer_zero_grad(self, epoch, batch_idx, optimizer, optimizer_idx):
            self.log_.append(
                f"    optimizer_zero_grad(epoch={epoch}, batch_idx={batch_idx},"
                f" optimizer={type(optimizer).__name__}, optimizer_idx={optimizer_idx})"
            )
            optimizer.zero_grad()

        def configure_optimizers(self):
            return [torch.optim.SGD(self.a.parameters(), lr=0.1), torch.optim.Adam(self.b.parameters(), lr=0.1)]

        def train_dataloader(self):
            return loader(2, 2)

    model = M()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer(max_epochs=1).fit(model)
    print("\n".join(model.log_))
    for w in caught:
        if "using_native_amp" in str(w.message):
            print("warning:", str(w.message)[:200], "...")
            break


@probe
def outputs_extras() -> None:
    """Extra keys of the training_step dict are passed through undetached; 'loss' is detached and normalized."""

    class M(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            pred = self.lin(x)
            loss = F.mse_loss(pred, y)
            self.raw = loss.item()
            return {"loss": loss, "pred": pred}

        def training_step_end(self, out):
            out["step_end_saw"] = "loss" in out
            return out

        def on_train_batch_end(self, outputs, batch, batch_idx):
            print(
                f"b{batch_idx}: training_step loss {self.raw:.6f}; outputs keys {sorted(outputs)};"
                f" outputs['loss'] {outputs['loss'].item():.6f} requires_grad {outputs['loss'].requires_grad};"
                f" outputs['pred'].requires_grad {outputs['pred'].requires_grad}"
            )

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return loader(4, 2)

    pl.seed_everything(0)
    trainer(max_epochs=1, accumulate_grad_batches=2).fit(M())


# ------------------------------------------------------------------------------------------------------
# precision, grad norms


class _PrecisionProbe(pl.LightningModule):
    def __init__(self, optimizer: str = "sgd"):
        super().__init__()
        self.lin = nn.Linear(3, 1)
        self.optimizer = optimizer
        self.log_ = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        pred = self.lin(x)
        loss = F.mse_loss(pred, y)
        if batch_idx == 0 and not self.log_:
            self.log_.append(
                f"training_step: batch x {x.dtype}, param {self.lin.weight.dtype}, pred {pred.dtype}, loss {loss.dtype},"
                f" autocast cpu enabled {torch.is_autocast_enabled('cpu')}"
                f" dtype {torch.get_autocast_dtype('cpu')}, torch.zeros(1).dtype {torch.zeros(1).dtype}"
            )
        return loss

    def on_before_optimizer_step(self, optimizer, optimizer_idx):
        if len(self.log_) == 1:
            self.log_.append(f"grad dtype {self.lin.weight.grad.dtype}")

    def configure_optimizers(self):
        if self.optimizer == "lbfgs":
            return torch.optim.LBFGS(self.parameters(), lr=0.1, max_iter=2)
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return loader(4, 2)


@probe
def precision() -> None:
    """precision 16 / bf16 / 64 on CPU: plugin, scaler, autocast, dtypes; apex errors."""
    for precision in (16, "bf16", 64):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = trainer(max_epochs=1, precision=precision)
        plugin = t.precision_plugin
        notes = [str(w.message) for w in caught if "precision" in str(w.message)]
        print(
            f"precision={precision!r}: {type(plugin).__name__}(precision={plugin.precision!r},"
            f" device={getattr(plugin, 'device', None)!r}, scaler={getattr(plugin, 'scaler', None)})"
            + (f"; warning: {notes[0]}" if notes else "")
        )
        model = _PrecisionProbe()
        t.fit(model)
        print("   ", "; ".join(model.log_))
    model = _PrecisionProbe("lbfgs")
    trainer(max_epochs=1, precision=16).fit(model)
    print(f"LBFGS with precision=16 on CPU (bf16, no scaler): trains; {model.log_[0][:60]}...")
    for kwargs in (
        {"precision": 16, "amp_backend": "apex"},
        {"precision": "bf16", "amp_backend": "apex"},
        {"precision": 32, "amp_level": "O2"},
    ):
        try:
            trainer(max_epochs=1, **kwargs)
            print(kwargs, "no error")
        except Exception as error:  # noqa: BLE001
            print(f"{kwargs}: {type(error).__name__}: {error}")


@probe
def native_amp_scaler_lbfgs() -> None:
    """The 16-bit scaler path, forced on CPU with an explicit MixedPrecisionPlugin('16', 'cpu', GradScaler)."""
    from pytorch_lightning.plugins import MixedPrecisionPlugin

    plugin = MixedPrecisionPlugin("16", "cpu", scaler=torch.amp.GradScaler("cpu"))
    try:
        trainer(max_epochs=1, plugins=[plugin]).fit(_PrecisionProbe("lbfgs"))
        print("LBFGS + 16-bit scaler: no error")
    except Exception as error:  # noqa: BLE001
        print(f"LBFGS + MixedPrecisionPlugin('16', 'cpu', GradScaler): {type(error).__name__}: {error}")


@probe
def scaler_path() -> None:
    """The 16-bit GradScaler path (what precision=16 does on CUDA), forced on CPU: scale, unscale_, skip on inf."""
    from pytorch_lightning.plugins import MixedPrecisionPlugin

    class M(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 1)
            self.log_ = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.mse_loss(self.lin(x), y)
            if batch_idx == 1:
                loss = loss * float("inf")
            self.log_.append(
                f"b{batch_idx}: training_step loss {loss.item():.4f} (dtype {self.lin(x).dtype} in autocast)"
            )
            return loss

        def on_before_backward(self, loss):
            self.log_.append(f"    on_before_backward loss {loss.item():.4f} (already multiplied by the scale)")

        def on_after_backward(self):
            self.log_.append(f"    on_after_backward |grad| {self.lin.weight.grad.norm().item():.4f} (scaled)")

        def on_before_optimizer_step(self, optimizer, optimizer_idx):
            self.log_.append(f"    on_before_optimizer_step |grad| {self.lin.weight.grad.norm().item():.4f} (unscaled)")

        def on_train_batch_end(self, outputs, batch, batch_idx):
            scaler = self.trainer.precision_plugin.scaler
            self.log_.append(
                f"    after step: weight sum {self.lin.weight.sum().item():.6f}, scale {scaler.get_scale()},"
                f" global_step {self.trainer.global_step}"
            )

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

        def train_dataloader(self):
            return loader(6, 2)

    pl.seed_everything(0)
    model = M()
    plugin = MixedPrecisionPlugin("16", "cpu", scaler=torch.amp.GradScaler("cpu", init_scale=1024.0))
    trainer(max_epochs=1, plugins=[plugin]).fit(model)
    print("\n".join(model.log_))


@probe
def track_grad_norm() -> None:
    """track_grad_norm=2 with gradient_clip_val=0.01, two optimizers: key names, when, pre-clip values."""
    pl.seed_everything(0)
    model = TwoOptimizerGAN(num_samples=16, batch_size=8)
    seen = []

    class Spy(pl.Callback):
        def on_before_optimizer_step(self, trainer, pl_module, optimizer, opt_idx):
            total = torch.norm(torch.stack([p.grad.norm(2) for p in pl_module.parameters() if p.grad is not None]), 2)
            seen.append((trainer.global_step, opt_idx, round(total.item(), 4)))

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            keys = {k: round(v.item(), 4) for k, v in trainer.callback_metrics.items() if "norm_total" in k}
            seen.append(("after batch", batch_idx, keys))

    t = trainer(max_epochs=1, track_grad_norm=2, gradient_clip_val=0.01, log_every_n_steps=50, callbacks=[Spy()])
    t.fit(model)
    for item in seen:
        print(item)
    print("callback_metrics keys:", sorted(t.callback_metrics))


def main(argv: list[str]) -> None:
    names = argv or list(PROBES)
    for name in names:
        print(f"### {name}: {PROBES[name].__doc__.strip().splitlines()[0]}")
        PROBES[name]()
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
