"""Test-only LightningModules for the features Lightning 2.x removed, trained by pytorch-lightning 1.9.5.

- `TwoOptimizerGAN`: automatic optimization with two optimizers (generator, discriminator),
  `training_step(batch, batch_idx, optimizer_idx)`, optional `frequency` keys and LR schedulers.
- `TBPTTRegressor`: an RNN trained with truncated backpropagation through time,
  `training_step(batch, batch_idx, hiddens)` returning `{"loss": ..., "hiddens": ...}`.
- `LBFGSRegression`: linear regression with `torch.optim.LBFGS` (a closure optimizer), plus a validation set.

Every model appends plain-Python event dicts to `self.records` (a list): which `optimizer_idx` ran,
each tbptt split's shapes and the hiddens it received, the hooks' order, the outputs structures given to
`on_train_batch_end` / `training_epoch_end` / `validation_epoch_end`. No tensors are kept: losses are
Python floats (`Tensor.item()`, exact), shapes are lists.

Data is synthetic and comes from `torch.Generator` seeds (never the global RNG), so the batches do not
depend on what else consumed random numbers; parameter initialisation uses the global RNG
(`seed_everything`).

The module imports with pytorch_lightning 1.9.5 and with 2.x (`import pytorch_lightning as pl`). The
models train with 1.9.5's Trainer (2.x removed multiple optimizers in automatic optimization, truncated
BPTT, `optimizer_idx` and the `*_epoch_end` hooks) and with loopgen's scripts, which need no Trainer.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def describe(value: Any) -> Any:
    """A plain-Python picture of a hook's `outputs`: the nesting of lists/dicts kept, tensors as floats or shapes."""
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return {"tensor": value.item(), "requires_grad": value.requires_grad, "dtype": str(value.dtype)}
        return {"shape": list(value.shape), "requires_grad": value.requires_grad, "dtype": str(value.dtype)}
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__


def _tensor_info(value: Any) -> Any:
    """Shapes, sums and grad flags of a tensor or a (nested) tuple/list of tensors; None stays None."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return {
            "shape": list(value.shape),
            "sum": value.detach().double().sum().item(),
            "requires_grad": value.requires_grad,
            "grad_fn": value.grad_fn is not None,
        }
    if isinstance(value, (list, tuple)):
        return [_tensor_info(v) for v in value]
    return type(value).__name__


class Recorder(pl.LightningModule):
    """Hook recording shared by the models: appends dicts to `self.records`."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    # -- helpers ---------------------------------------------------------------------------------------

    def _where(self) -> dict[str, Any]:
        trainer = self.trainer
        return {
            "epoch": trainer.current_epoch,
            "global_step": trainer.global_step,
            "sanity": bool(trainer.sanity_checking),
        }

    def _record(self, hook: str, **info: Any) -> None:
        self.records.append({"hook": hook, **self._where(), **info})

    def _opt_index(self, optimizer: Any) -> int:
        raw = getattr(optimizer, "optimizer", optimizer)  # LightningOptimizer -> torch optimizer
        for idx, opt in enumerate(self.trainer.optimizers):
            if opt is raw:
                return idx
        return -1

    def _lrs(self) -> list[float]:
        return [group["lr"] for opt in self.trainer.optimizers for group in opt.param_groups]

    # -- hooks (signatures valid in 1.9.5 and 2.x) ------------------------------------------------------

    def on_train_batch_start(self, batch: Any, batch_idx: int, *args: Any) -> None:
        self._split = 0
        self._record("on_train_batch_start", batch_idx=batch_idx, lrs=self._lrs())

    def on_before_zero_grad(self, optimizer: Any) -> None:
        self._record("on_before_zero_grad", optimizer_idx=self._opt_index(optimizer))

    def on_before_backward(self, loss: torch.Tensor) -> None:
        self._record("on_before_backward", loss=loss.item())

    def on_after_backward(self) -> None:
        grads = [p.grad.double().sum().item() if p.grad is not None else None for p in self.parameters()]
        self._record("on_after_backward", grad_sums=grads)

    def on_before_optimizer_step(self, optimizer: Any, *args: Any) -> None:
        grads = [p.grad.double().norm().item() if p.grad is not None else None for p in self.parameters()]
        self._record("on_before_optimizer_step", optimizer_idx=self._opt_index(optimizer), grad_norms=grads)

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int, *args: Any) -> None:
        self._record("on_train_batch_end", batch_idx=batch_idx, outputs=describe(outputs), lrs=self._lrs())

    def on_train_epoch_end(self) -> None:
        self._record("on_train_epoch_end", lrs=self._lrs())

    def training_epoch_end(self, outputs: Any) -> None:
        self._record("training_epoch_end", outputs=describe(outputs))


# ---------------------------------------------------------------------------------------------------------
# two optimizers


class TwoOptimizerGAN(Recorder):
    """A tiny GAN: optimizer 0 trains the generator, optimizer 1 the discriminator.

    Args:
        latent_dim, data_dim, hidden: layer sizes.
        num_samples, batch_size: the real data (a Gaussian blob, `data_seed`), unshuffled.
        lr_g, lr_d: SGD learning rates (momentum `momentum`).
        frequencies: None, or [f_g, f_d] -> `configure_optimizers` returns dicts with "frequency" keys.
        scheduler_interval: None (no schedulers), "step" or "epoch": a StepLR(step_size=1, gamma) per optimizer.
        noise_seed: the generator's input noise for batch b of epoch e comes from
            `torch.Generator().manual_seed(noise_seed + 1000 * e + b)`, the same for both optimizers.
        skip_discriminator_every: k > 0 -> the discriminator's training_step returns None when batch_idx % k == 0.
        freeze_generator_bias: the generator's first bias does not require grad (toggling must keep it frozen).
        log_losses: self.log each optimizer's loss (`loss_0`, `loss_1`) on step and epoch, for the loggers.
    """

    def __init__(
        self,
        latent_dim: int = 4,
        data_dim: int = 2,
        hidden: int = 8,
        num_samples: int = 40,
        batch_size: int = 8,
        lr_g: float = 0.05,
        lr_d: float = 0.05,
        momentum: float = 0.0,
        frequencies: list[int] | None = None,
        scheduler_interval: str | None = None,
        gamma: float = 0.5,
        data_seed: int = 0,
        noise_seed: int = 1,
        skip_discriminator_every: int = 0,
        freeze_generator_bias: bool = False,
        log_losses: bool = False,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.generator = nn.Sequential(nn.Linear(latent_dim, hidden), nn.Tanh(), nn.Linear(hidden, data_dim))
        self.discriminator = nn.Sequential(nn.Linear(data_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        if freeze_generator_bias:
            self.generator[0].bias.requires_grad_(False)

    def _noise(self, batch_idx: int, n: int) -> torch.Tensor:
        seed = self.hparams.noise_seed + 1000 * self.current_epoch + batch_idx
        return torch.randn(n, self.hparams.latent_dim, generator=_generator(seed))

    def _requires_grad(self) -> dict[str, list[bool]]:
        return {
            "generator": [p.requires_grad for p in self.generator.parameters()],
            "discriminator": [p.requires_grad for p in self.discriminator.parameters()],
        }

    def training_step(self, batch, batch_idx, optimizer_idx):
        (real,) = batch
        z = self._noise(batch_idx, real.shape[0])
        fake = self.generator(z)
        if optimizer_idx == 0:
            logits = self.discriminator(fake)
            loss = F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
        else:
            real_logits = self.discriminator(real)
            fake_logits = self.discriminator(fake.detach())
            loss = 0.5 * (
                F.binary_cross_entropy_with_logits(real_logits, torch.ones_like(real_logits))
                + F.binary_cross_entropy_with_logits(fake_logits, torch.zeros_like(fake_logits))
            )
        self._record(
            "training_step",
            batch_idx=batch_idx,
            optimizer_idx=int(optimizer_idx),
            optimizer_idx_type=type(optimizer_idx).__name__,  # numpy int64 when "frequency" keys are used
            loss=loss.item(),
            requires_grad=self._requires_grad(),
        )
        if self.hparams.log_losses:
            self.log(f"loss_{optimizer_idx}", loss, on_step=True, on_epoch=True, prog_bar=True)
        every = self.hparams.skip_discriminator_every
        if optimizer_idx == 1 and every and batch_idx % every == 0:
            return None
        return {"loss": loss, "optimizer_idx": int(optimizer_idx)}

    def configure_optimizers(self):
        hp = self.hparams
        opt_g = torch.optim.SGD(self.generator.parameters(), lr=hp.lr_g, momentum=hp.momentum)
        opt_d = torch.optim.SGD(self.discriminator.parameters(), lr=hp.lr_d, momentum=hp.momentum)
        optimizers = [opt_g, opt_d]
        schedulers = []
        if hp.scheduler_interval is not None:
            schedulers = [
                {
                    "scheduler": torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=hp.gamma),
                    "interval": hp.scheduler_interval,
                }
                for opt in optimizers
            ]
        if hp.frequencies is None:
            return optimizers, schedulers
        configs = []
        for idx, opt in enumerate(optimizers):
            config = {"optimizer": opt, "frequency": hp.frequencies[idx]}
            if schedulers:
                config["lr_scheduler"] = schedulers[idx]
            configs.append(config)
        return configs

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        real = torch.randn(hp.num_samples, hp.data_dim, generator=_generator(hp.data_seed)) * 0.5 + 2.0
        return DataLoader(TensorDataset(real), batch_size=hp.batch_size, shuffle=False)


# ---------------------------------------------------------------------------------------------------------
# truncated backpropagation through time


class TBPTTRegressor(Recorder):
    """An RNN regressing a per-time-step target; the batch is `[x, y]` with x: (B, T, input_size), y: (B, T, 1).

    `truncated_bptt_steps` is set on the module (1.9.5 reads `LightningModule.truncated_bptt_steps`; the
    Trainer flag of the same name was removed in 1.5). With `seq_len=7, tbptt_steps=3` each batch splits
    into time slices [0:3], [3:6], [6:7].

    Args:
        cell: "rnn", "gru" or "lstm" (an LSTM's hiddens are an (h, c) tuple).
        extra_list_input: also put a list of per-sample (T,) tensors in the batch, to exercise the
            default `tbptt_split_batch` on a Python list (split as x[i][t:t + k] per sample).
        log_losses: self.log each split's loss on step and epoch, for the loggers.
    """

    def __init__(
        self,
        input_size: int = 3,
        hidden_size: int = 5,
        seq_len: int = 7,
        num_samples: int = 12,
        batch_size: int = 4,
        tbptt_steps: int = 3,
        lr: float = 0.1,
        cell: str = "gru",
        extra_list_input: bool = False,
        data_seed: int = 0,
        log_losses: bool = False,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        rnn_cls = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[cell]
        self.rnn = rnn_cls(input_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, 1)
        self.truncated_bptt_steps = tbptt_steps
        self._split = 0

    def training_step(self, batch, batch_idx, hiddens):
        x, y = batch[0], batch[1]
        out, new_hiddens = self.rnn(x, hiddens)
        loss = F.mse_loss(self.head(out), y)
        info = {
            "x_shape": list(x.shape),
            "y_shape": list(y.shape),
            "x_sum": x.double().sum().item(),
            "hiddens_in": _tensor_info(hiddens),
            "hiddens_out": _tensor_info(new_hiddens),
        }
        if len(batch) > 2:
            info["list_input"] = [list(t.shape) for t in batch[2]]
        self._record("training_step", batch_idx=batch_idx, split=self._split, loss=loss.item(), **info)
        if self.hparams.log_losses:
            self.log("loss", loss, on_step=True, on_epoch=True)
        self._split += 1
        return {"loss": loss, "hiddens": new_hiddens}

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        gen = _generator(hp.data_seed)
        x = torch.randn(hp.num_samples, hp.seq_len, hp.input_size, generator=gen)
        y = x.sum(dim=2, keepdim=True).cumsum(dim=1) * 0.1
        tensors = [x, y]
        if hp.extra_list_input:
            tensors.append(torch.arange(hp.num_samples * hp.seq_len, dtype=torch.float32).view(hp.num_samples, -1))
            return DataLoader(TensorDataset(*tensors), batch_size=hp.batch_size, collate_fn=_collate_with_list)
        return DataLoader(TensorDataset(*tensors), batch_size=hp.batch_size, shuffle=False)


def _collate_with_list(items):
    """[x (B, T, F), y (B, T, 1), [t_0 (T,), ..., t_{B-1} (T,)]]: the third element a Python list."""
    xs, ys, ts = zip(*items)
    return [torch.stack(xs), torch.stack(ys), list(ts)]


# ---------------------------------------------------------------------------------------------------------
# LBFGS


class LBFGSRegression(Recorder):
    """Linear regression trained with LBFGS; every closure evaluation calls `training_step` once.

    Args:
        max_iter, history_size, line_search_fn: passed to `torch.optim.LBFGS` (max_eval defaults to
            max_iter * 5 // 4 there).
        num_val_samples: size of the validation set (>= 1; turn validation off with the trainer's
            `limit_val_batches: 0`).
    """

    def __init__(
        self,
        in_features: int = 3,
        num_samples: int = 32,
        num_val_samples: int = 16,
        batch_size: int = 8,
        lr: float = 0.5,
        max_iter: int = 4,
        history_size: int = 10,
        line_search_fn: str | None = None,
        data_seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.linear = nn.Linear(in_features, 1)
        self._evaluation = 0

    def _data(self, n: int, seed: int) -> TensorDataset:
        gen = _generator(seed)
        x = torch.randn(n, self.hparams.in_features, generator=gen)
        w = torch.arange(1, self.hparams.in_features + 1, dtype=torch.float32).unsqueeze(1)
        y = x @ w + 0.3 + 0.05 * torch.randn(n, 1, generator=gen)
        return TensorDataset(x, y)

    def on_train_batch_start(self, batch: Any, batch_idx: int, *args: Any) -> None:
        self._evaluation = 0
        super().on_train_batch_start(batch, batch_idx, *args)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.linear(x), y)
        self._record(
            "training_step",
            batch_idx=batch_idx,
            evaluation=self._evaluation,
            loss=loss.item(),
            weight_sum=self.linear.weight.detach().double().sum().item(),
        )
        self._evaluation += 1
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.linear(x), y)
        # 1.9.5's num_sanity_val_batches: set when its sanity check runs, else []
        sanity = list(self.trainer.num_sanity_val_batches)
        self._record("validation_step", batch_idx=batch_idx, loss=loss.item(), sanity_batches=sanity)
        return {"val_loss": loss}

    def validation_epoch_end(self, outputs: Any) -> None:
        self._record("validation_epoch_end", outputs=describe(outputs))

    def configure_optimizers(self):
        hp = self.hparams
        return torch.optim.LBFGS(
            self.parameters(),
            lr=hp.lr,
            max_iter=hp.max_iter,
            history_size=hp.history_size,
            line_search_fn=hp.line_search_fn,
        )

    def train_dataloader(self) -> DataLoader:
        data = self._data(self.hparams.num_samples, self.hparams.data_seed)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=False)

    def val_dataloader(self) -> DataLoader:
        data = self._data(self.hparams.num_val_samples, self.hparams.data_seed + 1)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=False)


class OneOptimizerWithIndex(LBFGSRegression):
    """A shared GAN-style training_step with `optimizer_idx=0` and one SGD optimizer: Lightning 1.9.5 calls it
    without the argument (its default), as it passes optimizer_idx only when there are several."""

    def training_step(self, batch, batch_idx, optimizer_idx=0):
        x, y = batch
        loss = F.mse_loss(self.linear(x), y) * (1.0 + optimizer_idx)
        self._record("training_step", batch_idx=batch_idx, optimizer_idx=optimizer_idx, loss=loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)
