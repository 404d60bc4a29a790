"""trainer.progress_bar_metrics, trainer.lr_scheduler_configs and loggers' `experiment` at render time: what the
script gets for them, and the reads it refuses (with the line that reads). Their values are compared with
Lightning's by tests/parity/test_metric_attributes.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_manual import GAN, refusal, render

AUTOMATIC = """
import pytorch_lightning as pl
import torch


class Gan(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
        return {"optimizer": optimizer, "lr_scheduler": plateau, "monitor": "loss"}
"""
READS = "        print(self.trainer.progress_bar_metrics, self.trainer.lr_scheduler_configs)\n"


def reading(source: str, line: str = READS) -> str:
    return source.replace("    def configure_optimizers(self):", f"    def on_train_start(self):\n{line}\n"
                          "    def configure_optimizers(self):")  # fmt: skip


def test_progress_bar_metrics_and_configs_are_served(tmp_path: Path) -> None:
    script = render(tmp_path, reading(AUTOMATIC))
    assert "trainer = ProgressBarTrainer(" in script
    assert "return self.metric_log.progress_bar()" in script
    # a bare ReduceLROnPlateau in the dict form takes its monitor from the dict (Lightning's rule)
    assert 'LRSchedulerConfig(scheduler, reduce_on_plateau=True, monitor="loss"),' in script
    # what self.log(prog_bar=True) logs is kept, though no bar shows it
    assert "self.progress_bar_metrics = {}" in script


def test_manual_optimization_configs_drop_what_lightning_ignores(tmp_path: Path) -> None:
    source = reading(GAN).replace(
        ", []",
        ', [{"scheduler": torch.optim.lr_scheduler.StepLR(opt, 1), "interval": "step", "monitor": "x", "strict": False}]',
    ).replace("        return [torch.optim.SGD(self.g", "        opt = torch.optim.SGD(self.g.parameters(), lr=0.1)\n"
              "        return [opt, torch.optim.SGD(self.g")  # fmt: skip
    script = render(tmp_path, source)
    assert 'LRSchedulerConfig(scheduler, interval="step"),' in script


def test_nothing_for_them_when_unread(tmp_path: Path) -> None:
    script = render(tmp_path, AUTOMATIC)
    for absent in ("ProgressBarTrainer", "LRSchedulerConfig", "progress_bar_metrics"):
        assert absent not in script


@pytest.mark.parametrize(
    "logger, named",
    [("{class_path: CSVLogger, init_args: {save_dir: logs}}", "CSVLogger"), ("WandbLogger", "WandbLogger")],
)
def test_an_unserved_experiment_is_refused_at_its_line(tmp_path: Path, logger: str, named: str) -> None:
    line = "        self.logger.experiment.log_metrics({'x': 1.0})\n"
    source = reading(GAN, line)
    message = refusal(tmp_path, source, f"trainer:\n  max_epochs: 1\n  logger: {logger}\n")
    number = source.splitlines().index(line.rstrip("\n")) + 1
    assert f"models.py:{number}: reads a logger's `experiment`, but the spec has a {named}" in message


def test_served_experiments_render(tmp_path: Path) -> None:
    source = reading(GAN, "        self.logger.experiment.set_tag(self.logger.run_id, 'a', 'b')\n")
    script = render(tmp_path, source, "trainer:\n  max_epochs: 1\n  logger: {class_path: MLFlowLogger}\n")
    assert "def experiment(self):" in script and "return self.client" in script


def test_unknown_scheduler_name_is_refused_where_read(tmp_path: Path) -> None:
    source = reading(AUTOMATIC).replace(
        '"lr_scheduler": plateau,', '"lr_scheduler": {"scheduler": plateau, "name": self.name(), "monitor": "loss"},'
    ).replace("    def configure_optimizers(self):", "    def name(self):\n        return 'a'\n\n"
              "    def configure_optimizers(self):")  # fmt: skip
    message = refusal(tmp_path, source)
    assert "reads trainer.lr_scheduler_configs, which the script cannot serve" in message
    assert 'gives a scheduler a "name" its source does not show' in message


def test_trainer_model_is_the_module_and_refused_where_lightning_wraps_it(tmp_path: Path) -> None:
    """trainer.model: on one device Lightning's strategy.model is the module itself (compared with Lightning by
    the TrainerAttributesRecorder parity cases); under ddp and dp it is Lightning's own wrapper, which the script
    does not have: refused, at the line that reads it."""
    source = reading(AUTOMATIC, "        print(self.trainer.model.training)\n")
    assert "    model=model,  # Lightning's strategy.model: here the module itself" in render(tmp_path, source)
    found = refusal(
        tmp_path, source, "seed_everything: 1\ntrainer:\n  strategy: ddp\n  devices: 2\n  accelerator: cpu\n"
    )
    assert "models.py:" in found and "trainer.model with strategy ddp is not supported by loopgen" in found
    assert "read trainer.lightning_module" in found
