"""A small model that records its hook calls into the stand-ins' shared list."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.standins.calls import CALLS


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 1)

    def _loader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 2, generator=g), torch.randn(8, 1, generator=g)), batch_size=4)

    def train_dataloader(self):
        return self._loader()

    def val_dataloader(self):
        return self._loader()

    def configure_optimizers(self):
        CALLS.append(("configure_optimizers",))
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def training_step(self, batch, batch_idx):
        CALLS.append(("training_step",))
        x, y = batch
        return nn.functional.mse_loss(self.layer(x), y)

    def validation_step(self, batch, batch_idx):
        CALLS.append(("validation_step",))


class ProbeStepEnd(Probe):
    """Probe with a training_step_end that reduces the per-device losses itself (their sum)."""

    def training_step_end(self, output):
        CALLS.append(("training_step_end", list(output.shape)))
        return output.sum()


class ProbeSyncLog(Probe):
    """Probe whose validation loss is logged with sync_dist=True, for a plateau scheduler to read."""

    def configure_optimizers(self):
        CALLS.append(("configure_optimizers",))
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}

    def validation_step(self, batch, batch_idx):
        CALLS.append(("validation_step",))
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.layer(x), y), sync_dist=True)


class ProbeEvaluates(Probe):
    """Probe with test and predict steps over 7 samples (shares of 4 and 3 over two processes): each step records
    its batch's size and whether gradients and inference mode were on; the test loss is logged with
    sync_dist=True."""

    def _seven(self):
        g = torch.Generator().manual_seed(1)
        return DataLoader(TensorDataset(torch.randn(7, 2, generator=g), torch.randn(7, 1, generator=g)), batch_size=2)

    def test_dataloader(self):
        return self._seven()

    def predict_dataloader(self):
        return self._seven()

    def test_step(self, batch, batch_idx):
        x, y = batch
        CALLS.append(("test_step", len(x), torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        self.log("test_loss", nn.functional.mse_loss(self.layer(x), y), sync_dist=True)

    def predict_step(self, batch, batch_idx):
        x, _ = batch
        CALLS.append(("predict_step", len(x), torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        return self.layer(x)


class ProbeEvaluates195(Probe):
    """Probe with validate, test and predict runs over 7 samples in batches of 4 (slices of 2 and 2, then 2 and 1
    over two GPUs), without self.log (refused under dp): each step records its batch's (or slice's) size and
    whether gradients and inference mode were on; test_step returns the loss, which on_test_batch_end and
    test_epoch_end get (under dp gathered over the GPUs). Its training_epoch_end, a hook only Lightning 1.9.5
    has, makes the spec follow 1.9.5 on any engine."""

    def training_epoch_end(self, outputs):
        CALLS.append(("training_epoch_end", len(outputs)))

    def test_dataloader(self):
        return seven_in_fours()

    def predict_dataloader(self):
        return seven_in_fours()

    def test_step(self, batch, batch_idx):
        x, y = batch
        CALLS.append(("test_step", len(x), torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        return nn.functional.mse_loss(self.layer(x), y)

    def on_test_batch_end(self, outputs, batch, batch_idx):
        CALLS.append(("on_test_batch_end", list(outputs.shape), len(batch[0]), batch_idx))

    def test_epoch_end(self, outputs):
        CALLS.append(("test_epoch_end", [list(output.shape) for output in outputs], self.training))

    def on_test_end(self):
        CALLS.append(("on_test_end", self.training))

    def predict_step(self, batch, batch_idx):
        x, _ = batch
        CALLS.append(("predict_step", len(x), torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        return self.layer(x)


def seven_in_fours():
    g = torch.Generator().manual_seed(1)
    return DataLoader(TensorDataset(torch.randn(7, 2, generator=g), torch.randn(7, 1, generator=g)), batch_size=4)


class ProbePredicts(Probe):
    """ProbeEvaluates195's predict run without a predict_step: Lightning's default calls the module on the
    batch."""

    def predict_dataloader(self):
        return seven_in_fours()

    def forward(self, batch):
        x, _ = batch
        CALLS.append(("forward", len(x)))
        return self.layer(x)


class ProbeTransfers(ProbeEvaluates):
    """ProbeEvaluates moving its batches itself (transfer_batch_to_device)."""

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        CALLS.append(("transfer_batch_to_device", str(device), dataloader_idx))
        return [t.to(device) for t in batch]


class RankReader:
    """A callback that records the ranks the trainer gives it when training starts."""

    def on_train_start(self, trainer, pl_module):
        names = ("world_size", "global_rank", "local_rank", "node_rank", "is_global_zero", "num_devices")
        CALLS.append(("ranks", *(getattr(trainer, name) for name in names)))


class DeviceReader:
    """A callback that records what the trainer says of the devices and the data's sharding when training
    starts, and whether it holds a GradScaler."""

    def on_train_start(self, trainer, pl_module):
        scaler = None if trainer.scaler is None else type(trainer.scaler).__name__
        CALLS.append(("devices", trainer.device_ids, trainer.distributed_sampler_kwargs, scaler))
