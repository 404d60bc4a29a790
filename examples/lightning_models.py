"""The example classifier as a real `LightningModule` subclass: loopgen runs it without Lightning's Trainer.

Importing this module needs `pytorch_lightning` installed; the generated script needs nothing else from it.
"""

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from examples.data import make_classification


class LitClassifier(pl.LightningModule):
    def __init__(self, features: int = 16, hidden: int = 64, classes: int = 4, lr: float = 0.05, batch_size: int = 32):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(dim=1) == y).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        return [optimizer], [scheduler]

    def train_dataloader(self) -> DataLoader:
        data = make_classification(512, self.hparams.features, self.hparams.classes, seed=0)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        data = make_classification(128, self.hparams.features, self.hparams.classes, seed=1)
        return DataLoader(data, batch_size=self.hparams.batch_size)


class LitShardedClassifier(LitClassifier):
    """LitClassifier sharded over the processes by its own configure_model, for Lightning's ModelParallelStrategy:
    its two Linear layers split over the tensor-parallel dimension of the device mesh (column-wise, then
    row-wise), then each sharded with FSDP2 over the data-parallel dimension, as the network is."""

    def configure_model(self):
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        tensor_parallel, data_parallel = self.device_mesh["tensor_parallel"], self.device_mesh["data_parallel"]
        if tensor_parallel.size() > 1:
            parallelize_module(self.net, tensor_parallel, {"0": ColwiseParallel(), "3": RowwiseParallel()})
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=data_parallel)
        fully_shard(self.net, mesh=data_parallel)


class LitGAN(pl.LightningModule):
    """A small GAN over the classification features, optimized manually (Lightning 2.x's way): the generator
    step, then the discriminator's, each with its own optimizer toggled so that only its parameters get
    gradients; the discriminator's learning rate decays by a scheduler the module steps each epoch."""

    def __init__(self, features: int = 16, latent: int = 8, hidden: int = 32, lr: float = 0.002, batch_size: int = 32):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.Linear(latent, hidden), nn.ReLU(), nn.Linear(hidden, features))
        self.discriminator = nn.Sequential(nn.Linear(features, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, 1))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.generator(z)

    def training_step(self, batch, batch_idx):
        x, _ = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(x.shape[0], self.hparams.latent, device=self.device)
        real_label = torch.ones(x.shape[0], 1, device=self.device)
        fake_label = torch.zeros(x.shape[0], 1, device=self.device)

        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(self(z)), real_label)
        self.manual_backward(g_loss)
        opt_g.step()
        opt_g.zero_grad()
        self.untoggle_optimizer(opt_g)

        self.toggle_optimizer(opt_d)
        real = F.binary_cross_entropy_with_logits(self.discriminator(x), real_label)
        fake = F.binary_cross_entropy_with_logits(self.discriminator(self(z).detach()), fake_label)
        d_loss = (real + fake) / 2
        self.manual_backward(d_loss)
        self.clip_gradients(opt_d, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt_d.step()
        opt_d.zero_grad()
        self.untoggle_optimizer(opt_d)
        self.log_dict({"g_loss": g_loss, "d_loss": d_loss}, prog_bar=True)

    def on_train_epoch_end(self):
        self.lr_schedulers().step()

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr, betas=(0.5, 0.999))
        scheduler = torch.optim.lr_scheduler.StepLR(opt_d, step_size=1, gamma=0.8)
        return [opt_g, opt_d], [scheduler]

    def train_dataloader(self) -> DataLoader:
        data = make_classification(512, self.hparams.features, 4, seed=0)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=True)


class LitEvaluated(pl.LightningModule):
    """A classifier with every step LightningCLI's subcommands run: fit (training_step, validation_step),
    test (test_step) and predict (predict_step: class probabilities). Its data comes from `ClassificationDataModule`."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4, lr: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test")

    def _evaluate(self, batch, stage: str) -> None:
        x, y = batch
        logits = self(x)
        self.log(f"{stage}_loss", F.cross_entropy(logits, y))
        self.log(f"{stage}_acc", (logits.argmax(dim=1) == y).float().mean())

    def predict_step(self, batch, batch_idx):
        x, _ = batch
        return self(x).softmax(dim=1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


class ClassificationDataModule(pl.LightningDataModule):
    """Train, validation, test and predict splits of the synthetic classification data (the predict split is the
    test split's inputs)."""

    def __init__(self, batch_size: int = 32, features: int = 16, classes: int = 4):
        super().__init__()
        self.batch_size = batch_size
        self.features = features
        self.classes = classes

    def setup(self, stage: str) -> None:
        if stage == "fit":
            self.train_set = make_classification(512, self.features, self.classes, seed=0)
        if stage in ("fit", "validate"):
            self.val_set = make_classification(128, self.features, self.classes, seed=1)
        if stage in ("test", "predict"):
            self.test_set = make_classification(96, self.features, self.classes, seed=2)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, batch_size=self.batch_size)

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, batch_size=self.batch_size)
