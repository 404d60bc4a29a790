"""trainer.progress_bar_metrics, trainer.lr_scheduler_configs and loggers' `experiment` at render time: what the
script gets for them, and the reads it refuses (with the line that reads). Their values are compared with
Lightning's by tests/parity/test_metric_attributes.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from loopgen.plan.common import UNSERVED_TRAINER_ATTRIBUTES
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
    assert "trainer = Trainer(" in script
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
    for absent in ("class Trainer", "LRSchedulerConfig", "progress_bar_metrics"):
        assert absent not in script


def test_an_unserved_experiment_is_refused_at_its_line(tmp_path: Path) -> None:
    line = "        self.logger.experiment.log({'x': 1.0})\n"
    source = reading(GAN, line)
    message = refusal(tmp_path, source, "trainer:\n  max_epochs: 1\n  logger: WandbLogger\n")
    number = source.splitlines().index(line.rstrip("\n")) + 1
    assert f"models.py:{number}: reads a logger's `experiment`, but the spec has a WandbLogger" in message


def test_served_experiments_render(tmp_path: Path) -> None:
    source = reading(GAN, "        self.logger.experiment.set_tag(self.logger.run_id, 'a', 'b')\n")
    script = render(tmp_path, source, "trainer:\n  max_epochs: 1\n  logger: {class_path: MLFlowLogger}\n")
    assert "def experiment(self):" in script and "return self.client" in script
    csv = "trainer:\n  max_epochs: 1\n  logger: {class_path: CSVLogger, init_args: {save_dir: logs}}\n"
    assert "class CSVExperiment:" in render(tmp_path, source, csv)
    assert "class CSVExperiment:" not in render(tmp_path, GAN, csv)


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


PLAIN = """
import torch

NAMES = ["estimated_stepping_batches", "global_step", "accelerator", "val_check_batch"]


class Gan(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.ones(12, 2), batch_size=4)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Watch:
    def on_train_start(self, trainer, pl_module):
        for name in NAMES:
            try:
                print(name, "=", getattr(trainer, name))
            except AttributeError as error:
                print(name, "raises", type(error).__name__, error)
"""
WATCHED = "trainer:\n  max_epochs: 2\n  logger: false\n  callbacks: [{class_path: pkg.models.Watch}]\n"


def run_script(tmp_path: Path, source: str, spec: str) -> str:
    script = tmp_path / "train.py"
    script.write_text(render(tmp_path, source, spec), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_trainer_read_by_name_serves_lightnings_attributes_and_says_why_it_cannot_serve_one(tmp_path: Path) -> None:
    """getattr(trainer, name) over a list: the render cannot list the reads, so the script's trainer has every
    attribute of Lightning's; one it cannot serve raises, when read (the run goes on), an AttributeError that names
    it, why, and what to read instead (the values are compared with Lightning's by
    tests/parity/test_every_attribute.py)."""
    output = run_script(tmp_path, PLAIN, WATCHED)
    assert "estimated_stepping_batches = 6\n" in output  # 3 batches, 2 epochs
    assert "global_step = 0\n" in output and "val_check_batch = 3\n" in output
    reason = UNSERVED_TRAINER_ATTRIBUTES["accelerator"]
    assert (
        f"accelerator raises TrainerAttributeError this script's trainer does not provide trainer.accelerator: {reason}"
        in (output)
    )
    assert "Training stopped after 2 epochs" in output


def test_what_the_source_reads_by_name_is_refused_or_served_whatever_else_reads_the_trainer(tmp_path: Path) -> None:
    """A callback passing the trainer on does not hide the module's own reads: an unservable one is still refused at
    its line, and the estimate is computed from the training data, loaded where it is first read."""
    source = reading(PLAIN, "        print(self.trainer.accelerator)\n")
    assert "reads trainer.accelerator, which the script's trainer does not provide" in refusal(
        tmp_path, source, WATCHED
    )
    source = PLAIN.replace("lr=0.1)", "lr=0.1 / self.trainer.estimated_stepping_batches)")
    for spec in (WATCHED, "trainer: {max_epochs: 2, logger: false}\n"):  # with or without the passed-on trainer
        script = render(tmp_path, source, spec)
        assert "def load_training_data():" in script and "= trainer.training_data()" in script
        assert "class Unserved" in script if spec == WATCHED else "class Unserved" not in script
    found = refusal(tmp_path, source.replace("0.1 /", "0.1 * self.trainer.model.training /"),
                    "seed_everything: 1\n" + WATCHED + "  strategy: ddp\n  devices: 2\n  accelerator: cpu\n")  # fmt: skip
    assert "trainer.model with strategy ddp is not supported by loopgen" in found


def test_a_long_reason_is_written_as_adjacent_literals_that_join_into_it() -> None:
    """The reasons the script's trainer gives are user-facing text: each is written as literals of at most a
    line's width (within black's line length), which Python joins back into the reason."""
    import ast

    from loopgen.render.values import text

    reason = UNSERVED_TRAINER_ATTRIBUTES["callbacks"]
    lines = text(reason).splitlines()
    assert len(lines) > 1 and all(len(line) <= 76 for line in lines)
    assert ast.literal_eval(" ".join(lines)) == reason
    assert text("short") == "'short'"


def test_the_strategy_is_served_on_one_device_and_under_ddp_and_refused_elsewhere(tmp_path: Path) -> None:
    """trainer.strategy (and self.all_gather, which goes through it): Lightning's SingleDeviceStrategy and
    DDPStrategy, as the script's classes of those names (their collectives are compared with Lightning's by the
    collectives cases of tests/parity and tests/test_ddp.py); under another engine, refused at the read's line."""
    source = reading(PLAIN, "        print(self.trainer.strategy.root_device)\n")
    assert "strategy=SingleDeviceStrategy(model, device)," in render(tmp_path, source)
    ddp = "seed_everything: 1\ntrainer:\n  strategy: ddp\n  devices: 2\n  accelerator: cpu\n"
    assert "class DDPStrategy:" in render(tmp_path, source, ddp)
    gathered = reading(AUTOMATIC, "        print(self.all_gather(torch.ones(1)))\n")
    assert "class SingleDeviceStrategy:" in render(tmp_path, gathered)
    parallel = "seed_everything: 1\ntrainer:\n  accelerator: tpu\n  devices: 1\n"
    found = refusal(tmp_path, source, parallel)
    assert "models.py:" in found and "reads trainer.strategy, which the script's trainer does not provide" in found
    assert "with strategy xla the script serves no strategy object" in found


def test_a_read_after_a_return_is_never_refused(tmp_path: Path) -> None:
    """What a return, raise, continue or break keeps from running reads nothing: an unservable read there renders
    (Lightning never reaches it either); the same read where it runs is refused."""
    dead = "        return\n        print(self.trainer.fit_loop)\n"
    assert "def main():" in render(tmp_path, reading(AUTOMATIC, dead))  # renders, where the read is refused:
    found = refusal(tmp_path, reading(AUTOMATIC, "        if self.current_epoch:\n            return\n" + dead[15:]))
    assert "reads trainer.fit_loop" in found
