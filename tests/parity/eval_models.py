"""Test-only modules for the evaluation parity cases (tests/parity/test_evaluation.py): a LightningModule with
every step of LightningCLI's subcommands, a LightningDataModule with one or two loaders per stage, and a callback.
Each appends what it is called with to `CALLS`, identically under Lightning's Trainer and under a generated script;
the runner reads it after each call.
"""

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import BasePredictionWriter
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from tests.parity.data import BATCH_SIZE, CLASSES, FEATURES, make_classification
from tests.parity.trainer_attributes import describe_loaders

CALLS = []


def _record(name, *args):
    """A call, with its batch_idx / dataloader_idx where it has them (ints), and whether gradients are on."""
    CALLS.append(
        [name, *(a for a in args if isinstance(a, int)), torch.is_grad_enabled(), torch.is_inference_mode_enabled()]
    )


def _stage(stage):
    """setup's and teardown's stage as text: Lightning passes its TrainerFn (a str enum), the script a str."""
    return getattr(stage, "value", stage)


def _stage_flags(trainer):
    """The trainer's stage flags that are true, as text: e.g. " [validating evaluating]"."""
    names = ("training", "validating", "testing", "predicting", "sanity_checking", "evaluating")
    return " [" + " ".join(name for name in names if getattr(trainer, name)) + "]"


class EvalModel(pl.LightningModule):
    """Logs in every evaluation step with several reductions, on_step and on_epoch; records every hook."""

    def __init__(self, hidden: int = 16, lr: float = 0.1, dropout: float = 0.2, sync_dist: bool = False):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, CLASSES)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def _evaluate(self, batch, prefix):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        # with several processes: the loss, max and count reduced over them when sync_dist, the accuracy each one's
        sync = self.hparams.sync_dist
        self.log(f"{prefix}_loss", loss, sync_dist=sync)
        self.log(f"{prefix}_acc", (logits.argmax(dim=1) == y).float().mean(), on_step=True)
        self.log(f"{prefix}_max", logits.max(), reduce_fx="max", sync_dist=sync)
        self.log(f"{prefix}_count", float(len(y)), reduce_fx="sum", logger=False, sync_dist=sync)
        # the training flag of the module and of its dropout: eval mode while evaluating
        self.log(f"{prefix}_training", float(self.training or self.net[2].training))
        return loss

    def validation_step(self, batch, batch_idx):
        return self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        return self._evaluate(batch, "test")

    def predict_step(self, batch, batch_idx):
        x, _ = batch
        return self(x).softmax(dim=1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    def setup(self, stage):
        _record(f"model.setup:{_stage(stage)}")

    def teardown(self, stage):
        _record(f"model.teardown:{_stage(stage)}")

    def on_load_checkpoint(self, checkpoint):
        _record(f"model.on_load_checkpoint:{checkpoint['global_step']}")


class HookedEvalModel(EvalModel):
    """EvalModel with every evaluation hook recorded (the epoch-end hooks of validation and test log too)."""

    def on_validation_start(self):
        _record("model.on_validation_start")

    def on_validation_epoch_start(self):
        _record("model.on_validation_epoch_start")

    def on_validation_batch_start(self, batch, batch_idx, dataloader_idx=0):
        _record("model.on_validation_batch_start", batch_idx, dataloader_idx)

    def on_validation_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        _record("model.on_validation_batch_end", batch_idx, dataloader_idx)

    def on_validation_epoch_end(self):
        _record("model.on_validation_epoch_end")
        self.log("val_epoch_hook", 2.0)

    def on_validation_end(self):
        _record("model.on_validation_end")

    def on_test_start(self):
        _record("model.on_test_start")

    def on_test_epoch_start(self):
        _record("model.on_test_epoch_start")

    def on_test_batch_start(self, batch, batch_idx, dataloader_idx=0):
        _record("model.on_test_batch_start", batch_idx, dataloader_idx)

    def on_test_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        _record("model.on_test_batch_end", batch_idx, dataloader_idx)

    def on_test_epoch_end(self):
        _record("model.on_test_epoch_end")
        self.log("test_epoch_hook", 3.0)

    def on_test_end(self):
        _record("model.on_test_end")

    def on_predict_start(self):
        _record("model.on_predict_start")

    def on_predict_epoch_start(self):
        _record("model.on_predict_epoch_start")

    def on_predict_batch_start(self, batch, batch_idx, dataloader_idx=0):
        _record("model.on_predict_batch_start", batch_idx, dataloader_idx)

    def on_predict_batch_end(self, outputs, batch, batch_idx, dataloader_idx=0):
        _record("model.on_predict_batch_end", batch_idx, dataloader_idx)

    def on_predict_epoch_end(self):
        _record("model.on_predict_epoch_end")

    def on_predict_end(self):
        _record("model.on_predict_end")


class PartlyFrozen(HookedEvalModel):
    """Its dropout in eval mode from the start (a frozen part), the training flags recorded at teardown: after a
    run, Lightning 2.x restores each submodule's mode; 1.9.5 puts every one in train mode after validate and test
    (its default on_*_model_train) and leaves the module in eval mode after predict."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.net[2].eval()

    def teardown(self, stage):
        _record(f"model.teardown:{_stage(stage)}", self.training, self.net[2].training)

    def on_predict_epoch_end(self, *results):
        """Lightning 1.9.5 passes the predictions (a list per loader), 2.x nothing: their number of batches."""
        _record("model.on_predict_epoch_end", *(len(loader) for loader in (results[0] if results else [])))


class EpochEndModel(EvalModel):
    """EvalModel with Lightning 1.9.5's training_epoch_end (its fit, and its evaluation loops, follow 1.9.5)."""

    def training_epoch_end(self, outputs):
        _record("model.training_epoch_end", len(outputs))


class OutputsModel(EpochEndModel):
    """Lightning 1.9.5's evaluation outputs: the step_end hooks (test's replaces the output, validation's returns
    None and keeps it) and the epoch-end hooks given the steps' outputs, logging from them."""

    def test_step_end(self, output):
        _record("model.test_step_end")
        return {"loss": output, "double": 2 * output}

    def test_epoch_end(self, outputs):
        _record("model.test_epoch_end", len(outputs))
        self.log("test_mean_double", torch.stack([output["double"] for output in outputs]).mean())

    def validation_step_end(self, output):
        _record("model.validation_step_end")

    def validation_epoch_end(self, outputs):
        _record("model.validation_epoch_end", len(outputs))
        self.log("val_sum", torch.stack(outputs).sum())


class TwoLoaderModel(EvalModel):
    """Steps that take dataloader_idx: each loader's values are logged under their own names."""

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        return self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self._evaluate(batch, "test")
        if dataloader_idx == 1:  # a name of its own: no suffix
            self.log("second_loader_size", float(len(batch[1])), add_dataloader_idx=False)
        return loss

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        x, _ = batch
        return self(x)[:, dataloader_idx]


class TwoLoaderOutputsModel(TwoLoaderModel):
    """Lightning 1.9.5's test_epoch_end with two loaders: a list of the steps' outputs per loader."""

    def training_epoch_end(self, outputs):
        _record("model.training_epoch_end", len(outputs))

    def test_epoch_end(self, outputs):
        _record("model.test_epoch_end", *(len(loader) for loader in outputs))
        self.log("test_first_losses", torch.stack(outputs[0]).sum(), add_dataloader_idx=False)


class EvalData(pl.LightningDataModule):
    """Train, validation, test and predict loaders (`loaders` of each evaluation stage: a loader, or a list of
    them, or a dict with `named`); records its hooks."""

    def __init__(self, loaders: int = 1, n_eval: int = 40, drop_last: bool = False, named: bool = False):
        super().__init__()
        self.loaders = loaders
        self.n_eval = n_eval
        self.drop_last = drop_last
        self.named = named

    def prepare_data(self):
        _record("data.prepare_data")

    def setup(self, stage):
        _record(f"data.setup:{_stage(stage)}")
        self.train_set = make_classification(96, seed=0)
        self.eval_sets = [make_classification(self.n_eval + 8 * i, seed=10 + i) for i in range(self.loaders)]

    def teardown(self, stage):
        _record(f"data.teardown:{_stage(stage)}")

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=BATCH_SIZE, shuffle=True)

    def _loaders(self):
        loaders = [DataLoader(s, batch_size=BATCH_SIZE, drop_last=self.drop_last) for s in self.eval_sets]
        if self.named:
            return {f"set_{i}": loader for i, loader in enumerate(loaders)}
        return loaders[0] if self.loaders == 1 else loaders

    def val_dataloader(self):
        return self._loaders()

    def test_dataloader(self):
        return self._loaders()

    def predict_dataloader(self):
        return self._loaders()


class TransferEvalData(EvalData):
    """EvalData with the three batch-transfer hooks, which Lightning calls instead of the module's: each records
    its loader index and the trainer's stage flags, and changes the batch (the training batches get noise drawn
    from the global generator, as device-side augmentation does; the others are scaled)."""

    def on_before_batch_transfer(self, batch, dataloader_idx):
        _record(f"data.on_before_batch_transfer{_stage_flags(self.trainer)}", dataloader_idx)
        x, y = batch
        return [x * 0.5, y]

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        _record(f"data.transfer_batch_to_device:{device}{_stage_flags(self.trainer)}", dataloader_idx)
        return [tensor.to(device) for tensor in batch]

    def on_after_batch_transfer(self, batch, dataloader_idx):
        _record(f"data.on_after_batch_transfer{_stage_flags(self.trainer)}", dataloader_idx)
        x, y = batch
        if self.trainer.training:
            return [x + 0.3 * torch.randn_like(x), y]
        return [x * 2.0, y]


class AfterTransferModel(HookedEvalModel):
    """A module overriding on_after_batch_transfer beside a data module that overrides it too: Lightning calls the
    data module's, never this one."""

    def on_after_batch_transfer(self, batch, dataloader_idx):
        _record("model.on_after_batch_transfer", dataloader_idx)
        return [batch[0] * 100.0, batch[1]]


class EvalCallback(pl.Callback):
    """Records the hooks a user's callback gets, with their batch_idx / dataloader_idx and the trainer's stage
    flags at each."""

    def setup(self, trainer, pl_module, stage):
        _record(f"callback.setup:{_stage(stage)}{_stage_flags(trainer)}")

    def teardown(self, trainer, pl_module, stage):
        _record(f"callback.teardown:{_stage(stage)}{_stage_flags(trainer)}")

    def on_validation_start(self, trainer, pl_module):
        _record(f"callback.on_validation_start{_stage_flags(trainer)}")

    def on_validation_epoch_start(self, trainer, pl_module):
        _record(f"callback.on_validation_epoch_start{_stage_flags(trainer)}")

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        _record(f"callback.on_validation_batch_start{_stage_flags(trainer)}", batch_idx, dataloader_idx)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        _record(f"callback.on_validation_batch_end{_stage_flags(trainer)}", batch_idx, dataloader_idx)

    def on_validation_epoch_end(self, trainer, pl_module):
        _record(f"callback.on_validation_epoch_end{_stage_flags(trainer)}")

    def on_validation_end(self, trainer, pl_module):
        _record(f"callback.on_validation_end{_stage_flags(trainer)}")

    def on_test_start(self, trainer, pl_module):
        _record(f"callback.on_test_start{_stage_flags(trainer)}")

    def on_test_epoch_start(self, trainer, pl_module):
        _record(f"callback.on_test_epoch_start{_stage_flags(trainer)}")

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        _record(f"callback.on_test_batch_start{_stage_flags(trainer)}", batch_idx, dataloader_idx)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        _record(f"callback.on_test_batch_end{_stage_flags(trainer)}", batch_idx, dataloader_idx)

    def on_test_epoch_end(self, trainer, pl_module):
        _record(f"callback.on_test_epoch_end{_stage_flags(trainer)}")

    def on_test_end(self, trainer, pl_module):
        _record(f"callback.on_test_end{_stage_flags(trainer)}")

    def on_predict_start(self, trainer, pl_module):
        _record(f"callback.on_predict_start{_stage_flags(trainer)}")

    def on_predict_epoch_start(self, trainer, pl_module):
        _record(f"callback.on_predict_epoch_start{_stage_flags(trainer)}")

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        _record(f"callback.on_predict_batch_start{_stage_flags(trainer)}", batch_idx, dataloader_idx)

    def on_predict_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        _record(f"callback.on_predict_batch_end{_stage_flags(trainer)}", batch_idx, dataloader_idx)

    def on_predict_epoch_end(self, trainer, pl_module):
        _record(f"callback.on_predict_epoch_end{_stage_flags(trainer)}")

    def on_predict_end(self, trainer, pl_module):
        _record(f"callback.on_predict_end{_stage_flags(trainer)}")


class MetricsCallback(pl.Callback):
    """Records the names in trainer.callback_metrics and logged_metrics as the test starts and ends: a test after
    fit starts with none of fit's (Lightning resets them as each run starts)."""

    def _seen(self, trainer, where):
        _record(f"metrics.{where} {sorted(trainer.callback_metrics)} {sorted(trainer.logged_metrics)}")

    def on_test_start(self, trainer, pl_module):
        self._seen(trainer, "on_test_start")

    def on_test_end(self, trainer, pl_module):
        self._seen(trainer, "on_test_end")

    def on_validation_start(self, trainer, pl_module):
        self._seen(trainer, "on_validation_start")


class LoadersCallback(pl.Callback):
    """Records the trainer's loaders and numbers of batches of each stage when it starts (and of fit's when
    validation starts; predict's numbers only: the script refuses trainer.predict_dataloaders)."""

    def on_validation_start(self, trainer, pl_module):
        loaders = describe_loaders(trainer.val_dataloaders)
        _record(f"loaders.on_validation_start {trainer.num_val_batches} {loaders} {trainer.enable_validation}")
        _record(f"loaders.train {trainer.num_training_batches} {describe_loaders(trainer.train_dataloader)}")

    def on_test_start(self, trainer, pl_module):
        _record(f"loaders.on_test_start {trainer.num_test_batches} {describe_loaders(trainer.test_dataloaders)}")
        _record(f"loaders.val {trainer.num_val_batches} {describe_loaders(trainer.val_dataloaders)}")

    def on_predict_start(self, trainer, pl_module):
        _record(f"loaders.on_predict_start {trainer.num_predict_batches}")


def _plain(value):
    """Predictions as nested lists of numbers: compared with == across the two sides."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


class RecordingWriter(BasePredictionWriter):
    """A prediction writer that records what Lightning gives it: the batch's prediction and sample indices, or the
    run's predictions and indices per loader."""

    def write_on_batch_end(self, trainer, pl_module, prediction, batch_indices, batch, batch_idx, dataloader_idx):
        CALLS.append(["writer.batch", _plain(prediction), list(batch_indices), batch_idx, dataloader_idx])

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices):
        CALLS.append(["writer.epoch", _plain(predictions), _plain(batch_indices)])
