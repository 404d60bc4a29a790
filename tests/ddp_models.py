"""Models for the DDP tests (tests/test_ddp.py): real LightningModules, trained by Lightning's DDPStrategy and by
loopgen's DDP scripts under torchrun.

`on_train_end` saves the weights to $DDP_SAVE/rank$RANK.pt when DDP_SAVE is set, so that a script run as it is (by
torchrun, without a test driver) leaves them too.

Lightning comes through the project's compat module (tests/parity/compat.py: `try:` / `except ImportError:`), as
libraries that support both of its package names import it: every DDP and ModelParallelStrategy case is also a
parity case of that (a reader that missed it took the modules for plain nn.Modules, and ModelParallelStrategy's
processes died setting their read-only device_mesh).
"""

from __future__ import annotations

import json
import os
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, DistributedSampler

from tests.parity.compat import pl
from tests.parity.data import CLASSES, FEATURES, make_classification


class DDPNet(pl.LightningModule):
    """An MLP classifier (dropout), SGD with momentum; 90 training and 30 validation samples in batches of 8
    (uneven shares over 2 processes). `plateau`: validation logs val_loss with sync_dist=True and a
    ReduceLROnPlateau reads it. `log_train`: training logs train_loss with sync_dist=True (step and epoch).
    `fail_at`: the process of rank 1 raises at that training batch. `late_start`: the process of rank 1 sleeps that
    many seconds in on_train_start (after the callbacks' on_train_start: its clock then lags rank 0's).
    """

    def __init__(self, dropout: float = 0.2, shuffle: bool = True, lr: float = 0.1, plateau: bool = False,
                 fail_at: int = -1, log_train: bool = False, late_start: float = 0.0) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Dropout(dropout), nn.Linear(32, CLASSES))
        self.shuffle = shuffle
        self.lr = lr
        self.plateau = plateau
        self.fail_at = fail_at
        self.log_train = log_train
        self.late_start = late_start

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        if batch_idx == self.fail_at and os.environ.get("RANK") == "1":
            with open(os.environ["DDP_SAVE"] + "/failed_at", "w") as out:
                out.write(str(time.time()))
            raise RuntimeError("rank 1 fails on purpose")
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        if self.log_train:
            self.log("train_loss", loss, sync_dist=True, prog_bar=True, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        if self.plateau:
            self.log("val_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        if not self.plateau:
            return optimizer
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.05)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}

    def train_dataloader(self):
        return DataLoader(make_classification(90, seed=0), batch_size=8, shuffle=self.shuffle)

    def val_dataloader(self):
        return DataLoader(make_classification(30, seed=1), batch_size=8)

    def on_train_start(self):
        if self.late_start and os.environ.get("RANK") == "1":
            time.sleep(self.late_start)

    def on_train_end(self):
        if os.environ.get("DDP_SAVE"):  # by the trainer's rank: a cluster's launcher may set no RANK
            torch.save(self.state_dict(), f"{os.environ['DDP_SAVE']}/rank{self.global_rank}.pt")
            # what this process's trainer says of the processes and the devices, to compare with Lightning's
            trainer = self.trainer
            seen = {
                "ranks": [trainer.world_size, trainer.global_rank, trainer.local_rank, trainer.node_rank],
                "device_ids": trainer.device_ids,
                "distributed_sampler_kwargs": trainer.distributed_sampler_kwargs,
                "num_sanity_val_batches": trainer.num_sanity_val_batches,
                "early_stopping_callback": trainer.early_stopping_callback is not None,
                "checkpoint_callbacks": len(trainer.checkpoint_callbacks),
                "scaler": trainer.scaler is not None,
                "signals": [trainer.received_sigterm, trainer.interrupted],
            }
            with open(f"{os.environ['DDP_SAVE']}/rank{self.global_rank}.json", "w") as out:
                json.dump(seen, out)


class DDPManualGAN(pl.LightningModule):
    """Manual optimization under DDP: a small GAN over the classification features (Lightning's documented style),
    the generator then the discriminator, each toggled so that only its parameters get gradients, each backward
    all-reduced by manual_backward; the losses logged with sync_dist=True."""

    def __init__(self, latent: int = 4, lr: float = 0.01) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.latent = latent
        self.lr = lr
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
        self.log("g_loss", g_loss, prog_bar=True, sync_dist=True)
        self.manual_backward(g_loss)
        opt_g.step()
        opt_g.zero_grad()
        self.untoggle_optimizer(opt_g)

        self.toggle_optimizer(opt_d)
        real = F.binary_cross_entropy_with_logits(self.discriminator(x), ones)
        fake = F.binary_cross_entropy_with_logits(self.discriminator(self.generator(z).detach()), zeros)
        d_loss = (real + fake) / 2
        self.log("d_loss", d_loss, sync_dist=True)
        self.manual_backward(d_loss)
        opt_d.step()
        opt_d.zero_grad()
        self.untoggle_optimizer(opt_d)

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=self.lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=self.lr, betas=(0.5, 0.999))
        return [opt_g, opt_d], []

    def train_dataloader(self):
        return DataLoader(make_classification(90, seed=0), batch_size=8, shuffle=True)

    def on_train_end(self):
        if os.environ.get("DDP_SAVE"):
            torch.save(self.state_dict(), f"{os.environ['DDP_SAVE']}/rank{os.environ['RANK']}.pt")


class DDPManualAccumulate(pl.LightningModule):
    """Manual optimization under DDP: gradients accumulated by hand over `accumulate` batches (each backward
    all-reduced, no no_sync), clipped with self.clip_gradients, a StepLR the module steps at each epoch's end;
    train and validation losses logged with sync_dist=True."""

    def __init__(self, accumulate: int = 4, lr: float = 0.1) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.accumulate = accumulate
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.manual_backward(loss / self.accumulate)
        if (batch_idx + 1) % self.accumulate == 0:
            self.clip_gradients(opt, gradient_clip_val=0.5, gradient_clip_algorithm="norm")
            opt.step()
            opt.zero_grad()
        self.log("train_loss", loss, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self(x), y), sync_dist=True)

    def on_train_epoch_end(self):
        self.lr_schedulers().step()

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]

    def train_dataloader(self):
        return DataLoader(make_classification(90, seed=0), batch_size=8, shuffle=True)

    def val_dataloader(self):
        return DataLoader(make_classification(30, seed=1), batch_size=8)

    def on_train_end(self):
        if os.environ.get("DDP_SAVE"):
            torch.save(self.state_dict(), f"{os.environ['DDP_SAVE']}/rank{os.environ['RANK']}.pt")


class DDPLateBuilt(DDPNet):
    """DDPNet whose network is built in configure_model (on each process's device, before DDP wraps the module),
    with torch's activation checkpointing over its Linear layers."""

    def configure_model(self):
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing

        self.net = nn.Sequential(nn.Linear(FEATURES, 24), nn.ReLU(), nn.Dropout(0.1), nn.Linear(24, CLASSES))
        apply_activation_checkpointing(self.net, check_fn=lambda module: isinstance(module, nn.Linear))


class DDPCompiled(DDPNet):
    """DDPNet whose steps log nothing (Lightning cannot fit a torch.compile(model) whose compiled steps log), for
    loop.compile; its validation loss is still returned."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y)


class DDPLBFGSNet(DDPNet):
    """DDPNet stepped by LBFGS: the optimizer calls the closure (training_step and backward) several times a step."""

    def configure_optimizers(self):
        return torch.optim.LBFGS(self.parameters(), lr=self.lr, max_iter=5)


class FullWeights:
    """A sharded module's on_train_end: its full weights, gathered from every process, saved by rank 0 to
    $DDP_SAVE/rank0.pt with what its trainer says of the processes, the mesh and the steps (rank0.json)."""

    def on_train_end(self):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full = get_model_state_dict(self, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if os.environ.get("DDP_SAVE") and self.global_rank == 0:
            torch.save(full, f"{os.environ['DDP_SAVE']}/rank0.pt")
            trainer = self.trainer
            seen = {
                "ranks": [trainer.world_size, trainer.global_rank, trainer.local_rank, trainer.node_rank],
                "distributed_sampler_kwargs": trainer.distributed_sampler_kwargs,
                "mesh": [self.device_mesh["data_parallel"].size(), self.device_mesh["tensor_parallel"].size()],
                "global_step": trainer.global_step,
            }
            with open(f"{os.environ['DDP_SAVE']}/rank0.json", "w") as out:
                json.dump(seen, out)


class ShardedNet(FullWeights, DDPNet):
    """DDPNet sharded by its own configure_model on Lightning's device mesh (ModelParallelStrategy): each Linear and
    the network with FSDP2's fully_shard over the data-parallel dimension; `tensor_parallel`: the two Linear layers
    first split over the tensor-parallel dimension (column-wise, then row-wise); `activation_checkpointing`: the
    first Linear's activations recomputed in the backward pass; `compiled`: each sharded Linear compiled."""

    def __init__(self, tensor_parallel: bool = False, activation_checkpointing: bool = False, compiled: bool = False,
                 **kwargs) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.tensor_parallel = tensor_parallel
        self.activation_checkpointing = activation_checkpointing
        self.compiled = compiled

    def configure_model(self):
        from torch.distributed.fsdp import fully_shard

        if self.activation_checkpointing:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing

            apply_activation_checkpointing(self.net, check_fn=lambda module: module is self.net[0])

        if self.tensor_parallel:
            from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

            plan = {"0": ColwiseParallel(), "3": RowwiseParallel()}
            parallelize_module(self.net, self.device_mesh["tensor_parallel"], plan)
        mesh = self.device_mesh["data_parallel"]
        for layer in self.net:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
                if self.compiled:  # each sharded layer compiled in place (its parameters keep their names)
                    layer.compile(backend="aot_eager")
        fully_shard(self.net, mesh=mesh)


class ShardedManual(FullWeights, DDPManualAccumulate):
    """DDPManualAccumulate sharded with FSDP2 over the data-parallel dimension (ModelParallelStrategy): each
    manual_backward reduces the shards' gradients, self.clip_gradients clips them."""

    def configure_model(self):
        from torch.distributed.fsdp import fully_shard

        for layer in self.net:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=self.device_mesh["data_parallel"])
        fully_shard(self.net, mesh=self.device_mesh["data_parallel"])


class ShardedCompiledNet(ShardedNet):
    """ShardedNet whose sharded network is wrapped by torch.compile in configure_model: its parameters are named
    under the wrapper's `_orig_mod`, which the optimizer's full state must map back to."""

    def configure_model(self):
        super().configure_model()
        self.net = torch.compile(self.net, backend="aot_eager")


class StepProbe(pl.LightningModule):
    """A child LightningModule (an online evaluator's head): Lightning's trainer setter gives it the trainer, whose
    counters it reads."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(CLASSES, CLASSES)

    def forward(self, logits):
        return self.head(logits.detach()) * (1.0 + self.trainer.global_step / 100.0 + self.current_epoch)


def collectives_loss(module, batch, batch_idx):
    """A training loss through the strategy's collectives, as self-supervised and contrastive modules call them:
    self.all_gather with the gradients kept (a term over every process's batch), trainer.strategy.reduce /
    broadcast / barrier / reduce_boolean_decision, self.print, and a child LightningModule's (`module.probe`)."""
    x, y = batch
    logits = module(x)
    everyone = module.all_gather(logits, sync_grads=True)
    loss = F.cross_entropy(logits, y) + 0.01 * everyone.pow(2).mean()
    probe_loss = F.cross_entropy(module.probe(logits), y)
    strategy = module.trainer.strategy
    mean = strategy.reduce(loss.detach().clone(), reduce_op="mean")
    count = strategy.reduce(torch.tensor(float(batch_idx + 1)), reduce_op="sum")
    scale = strategy.broadcast(1.0 + 0.001 * batch_idx + 0.01 * module.global_rank)  # rank 0's, everywhere
    strategy.barrier()
    agreed = strategy.reduce_boolean_decision(bool(mean < 10.0))
    if batch_idx == 0:
        module.print(f"rank {module.global_rank}: {count.item()} batches so far")
    return (loss + probe_loss) * scale * (1.0 if agreed else 0.5)


class DDPCollectives(DDPNet):
    """collectives_loss's module: on one process the collectives give back what they get."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.probe = StepProbe()

    def training_step(self, batch, batch_idx):
        return collectives_loss(self, batch, batch_idx)


class DDPWorkerNet(DDPNet):
    """Loaders read by two workers per process whose samples draw noise (tests/parity/worker_models.py): Lightning
    seeds each worker from the seed, its id and the process's global rank."""

    def train_dataloader(self):
        from tests.parity.worker_models import NoisySamples

        return DataLoader(NoisySamples(make_classification(90, seed=0)), batch_size=8, shuffle=True, num_workers=2)

    def val_dataloader(self):
        from tests.parity.worker_models import NoisySamples

        return DataLoader(NoisySamples(make_classification(30, seed=1)), batch_size=8, num_workers=2)


class DDPOwnSampler(DDPNet):
    """For use_distributed_sampler: false: the training loader's own DistributedSampler (shuffled by a seed of its
    own, its epoch set by Lightning), and the validation loader read whole by each process."""

    def train_dataloader(self):
        data = make_classification(90, seed=0)
        return DataLoader(data, batch_size=8, sampler=DistributedSampler(data, shuffle=True, seed=7))


class DDPBatchNormNet(DDPNet):
    """For sync_batchnorm: BatchNorm layers in the network. On the CPU (where torch's SyncBatchNorm cannot
    synchronise) they normalise by their running statistics in training too; the layers' classes at the training's
    start and at fit's end (after Lightning's revert) go to $DDP_SAVE/rank$RANK.layers.json."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, CLASSES))
        self.layers = {}

    def training_step(self, batch, batch_idx):
        self.net[1].eval()
        return super().training_step(batch, batch_idx)

    def on_train_start(self):
        self.layers["train_start"] = [type(module).__name__ for module in self.net]
        self.layers["optimized"] = sum(p.numel() for group in self.optimizers().param_groups for p in group["params"])

    def on_fit_end(self):
        self.layers["fit_end"] = [type(module).__name__ for module in self.net]
        if os.environ.get("DDP_SAVE"):
            with open(f"{os.environ['DDP_SAVE']}/rank{os.environ['RANK']}.layers.json", "w") as out:
                json.dump(self.layers, out)


class ClusterNet(DDPNet):
    """DDPNet that also records where its process group met (MASTER_ADDR, MASTER_PORT as the process has them at
    the end of training): under a cluster environment both come from the cluster's variables
    (tests/test_clusters.py)."""

    def on_train_end(self):
        super().on_train_end()
        if os.environ.get("DDP_SAVE"):
            with open(f"{os.environ['DDP_SAVE']}/address{self.global_rank}.json", "w") as out:
                json.dump([os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")], out)
