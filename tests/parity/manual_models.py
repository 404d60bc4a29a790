"""Test-only LightningModules that optimize manually (`self.automatic_optimization = False`, Lightning 2.x), in
the styles of Lightning's documentation: a GAN with two optimizers and toggle_optimizer, accumulation and
clipping done by hand with a scheduler the module steps, truncated backpropagation through time done in
training_step. They record what tests.parity.models.Recorder records."""

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from tests.parity.data import FEATURES
from tests.parity.models import MLP


class ManualGAN(MLP):
    """A small GAN over the classification features: the generator, then the discriminator, each step with its
    own optimizer, each toggled so that only its parameters get gradients."""

    def __init__(self, latent: int = 4, lr: float = 0.01) -> None:
        super().__init__(lr=lr)
        self.automatic_optimization = False
        self.latent = latent
        self.generator = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, FEATURES))
        self.discriminator = nn.Sequential(nn.Linear(FEATURES, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, _ = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(x.shape[0], self.latent, device=self.device)
        ones = torch.ones(x.shape[0], 1, device=self.device)
        zeros = torch.zeros(x.shape[0], 1, device=self.device)

        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(self.generator(z)), ones)
        self.log("g_loss", g_loss, prog_bar=True)
        self.manual_backward(g_loss)
        opt_g.step()
        opt_g.zero_grad()
        self.untoggle_optimizer(opt_g)

        self.toggle_optimizer(opt_d)
        real = F.binary_cross_entropy_with_logits(self.discriminator(x), ones)
        fake = F.binary_cross_entropy_with_logits(self.discriminator(self.generator(z).detach()), zeros)
        d_loss = (real + fake) / 2
        self.log("d_loss", d_loss)
        self.manual_backward(d_loss)
        opt_d.step()
        opt_d.zero_grad()
        self.untoggle_optimizer(opt_d)

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.lr, betas=(0.5, 0.999))
        self.remember(opt_g)
        return [opt_g, opt_d], []


class ManualAccumulateClip(MLP):
    """Gradients accumulated over `accumulate` batches by hand, clipped with self.clip_gradients before each step;
    a StepLR the module steps at each epoch's end; training_step returns the loss (on_train_batch_end gets it)."""

    def __init__(self, accumulate: int = 3, clip_val: float = 0.05, clip_algorithm: str = "norm") -> None:
        super().__init__()
        self.automatic_optimization = False
        self.accumulate = accumulate
        self.clip_val = clip_val
        self.clip_algorithm = clip_algorithm

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        if batch_idx == 0:  # Lightning's wrapper is an instance of the optimizer's class
            self.events.append(("optimizer", type(opt).__name__, isinstance(opt, torch.optim.SGD)))
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.manual_backward(loss / self.accumulate)
        if (batch_idx + 1) % self.accumulate == 0:
            self.clip_gradients(opt, gradient_clip_val=self.clip_val, gradient_clip_algorithm=self.clip_algorithm)
            opt.step()
            opt.zero_grad()
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        return {"loss": loss, "size": x.shape[0]}

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.events.append(("batch_end", batch_idx, sorted(outputs), bool(outputs["loss"].requires_grad)))

    def on_train_epoch_end(self):
        self.lr_schedulers().step()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        self.remember(optimizer)
        return [optimizer], [scheduler]


def make_sequences(n: int, seed: int, steps: int = 12) -> TensorDataset:
    """Sequences of FEATURES-vectors; the target at each time is the running sign of the first feature's sum."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, steps, FEATURES, generator=g)
    y = (x[..., 0].cumsum(dim=1) > 0).long()
    return TensorDataset(x, y)


class ManualTBPTT(MLP):
    """Truncated backpropagation through time in training_step: the sequence split into chunks of `split` steps,
    an optimizer step per chunk, the LSTM's state carried (detached) from chunk to chunk."""

    def __init__(self, split: int = 4, hidden: int = 16) -> None:
        super().__init__(lr=0.05)
        self.automatic_optimization = False
        self.split = split
        self.lstm = nn.LSTM(FEATURES, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        hiddens = None
        for start in range(0, x.shape[1], self.split):
            out, hiddens = self.lstm(x[:, start : start + self.split], hiddens)
            logits = self.head(out)
            loss = F.cross_entropy(logits.reshape(-1, 2), y[:, start : start + self.split].reshape(-1))
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            hiddens = tuple(h.detach() for h in hiddens)
            self.log("train_loss", loss, prog_bar=True)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        out, _ = self.lstm(x)
        loss = F.cross_entropy(self.head(out).reshape(-1, 2), y.reshape(-1))
        self.log("val_loss", loss)

    def train_dataloader(self):
        self.loads["train"] += 1
        return DataLoader(make_sequences(96, seed=0), batch_size=16, shuffle=True)

    def val_dataloader(self):
        self.loads["val"] += 1
        return DataLoader(make_sequences(32, seed=1), batch_size=16)

    def configure_optimizers(self):
        return self.remember(torch.optim.Adam(self.parameters(), lr=self.lr))


class ClipHookModel(MLP):
    """Automatic optimization with a configure_gradient_clipping override (Lightning's documented style): no
    clipping for the first `start` steps, then the Trainer's clipping, or `own_val` by norm when it has none."""

    def __init__(self, start: int = 5, own_val: float = 0.05) -> None:
        super().__init__()
        self.start = start
        self.own_val = own_val

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        # Lightning passes the Trainer's flags: None where the spec gives none, else a GradClipAlgorithmType
        algorithm = (
            None
            if gradient_clip_algorithm is None
            else (str(gradient_clip_algorithm), gradient_clip_algorithm == "value")
        )
        self.events.append(("clip", self.global_step, gradient_clip_val, algorithm))
        if self.global_step < self.start:
            return
        if gradient_clip_val is None:
            self.clip_gradients(optimizer, gradient_clip_val=self.own_val, gradient_clip_algorithm="norm")
        else:
            self.clip_gradients(
                optimizer, gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm
            )


class SkippingStepModel(MLP):
    """An optimizer_step override that skips every third step by calling the closure itself (its gradients add to
    the next step's): Lightning runs on_before_optimizer_step and the clipping only when the optimizer's step calls
    the closure, so neither runs for a skipped step."""

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
        if batch_idx % 3 == 2:
            optimizer_closure()
            self.events.append(("skipped", epoch, batch_idx))
            return
        optimizer.step(closure=optimizer_closure)

    def on_before_optimizer_step(self, optimizer):
        super().on_before_optimizer_step(optimizer)
        total = torch.stack([p.grad.norm() for p in self.parameters() if p.grad is not None]).norm()
        self.events.append(("before_step", self.global_step, round(total.item(), 6)))


class OneCycleModel(MLP):
    """OneCycleLR sized by trainer.estimated_stepping_batches (Lightning's documented way), stepped every step."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        self.remember(optimizer)
        total_steps = self.trainer.estimated_stepping_batches
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.5, total_steps=total_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class ExperimentScalarsGAN(ManualGAN):
    """The GAN writing its own scalars through self.logger.experiment (TensorBoard's SummaryWriter), as public
    GAN code does, beside what it logs with self.log."""

    def on_train_batch_end(self, outputs, batch, batch_idx):
        norm = sum(p.detach().pow(2).sum() for p in self.generator.parameters()).sqrt()
        self.logger.experiment.add_scalar("generator_norm", norm.item(), self.global_step)
        for logger in self.loggers:
            logger.log_metrics({"batch_idx": float(batch_idx)}, step=self.global_step)
