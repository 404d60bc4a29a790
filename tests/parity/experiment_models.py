"""Modules that write through their logger's `experiment`, as public code does: MLflow's MlflowClient with the
logger's run_id; a CSVLogger's writer, reached behind the `hasattr` checks that code written for TensorBoard uses;
and, under fast_dev_run, Lightning's DummyLogger, whose experiment takes any call (compared with Lightning's by
tests/parity/test_metric_attributes.py)."""

import os

from tests.parity.models import MLP


class MlflowExperimentModel(MLP):
    def on_train_batch_end(self, outputs, batch, batch_idx):
        norm = sum(p.detach().pow(2).sum() for p in self.parameters()).sqrt().item()
        self.logger.experiment.log_metric(self.logger.run_id, "weight_norm", norm, step=self.global_step)
        self.logger.experiment.set_tag(self.logger.run_id, "last_batch", str(batch_idx))


class CsvExperimentModel(MLP):
    """TensorBoard's add_scalar where the experiment has it, else a row through the CSV writer (with a step, and
    one without: Lightning's counts the rows since its last save); the writer's paths recorded."""

    def on_train_batch_end(self, outputs, batch, batch_idx):
        experiment = self.logger.experiment
        norm = sum(p.detach().pow(2).sum() for p in self.parameters()).sqrt()
        if hasattr(experiment, "add_scalar"):
            experiment.add_scalar("weight_norm", norm, self.global_step)
        elif hasattr(experiment, "log_metrics"):
            experiment.log_metrics({"weight_norm": norm}, step=self.global_step)
            if batch_idx == 0:
                experiment.log_metrics({"first_batch_norm": norm.item()})

    def on_train_end(self):
        super().on_train_end()
        experiment = self.logger.experiment
        self.events.append(os.path.relpath(experiment.metrics_file_path, experiment.log_dir))
        self.events.append(hasattr(experiment, "add_image"))


class DummyLoggerModel(MLP):
    """Under fast_dev_run: the logger's experiment called as TensorBoard's, the logger's own methods called, and
    what Lightning gives for the trainer's log_dir and the logger's name, version and save_dir recorded."""

    def on_train_start(self):
        self.logger.experiment.add_text("note", "fast dev run")
        self.logger.log_hyperparams({"lr": 0.1})
        self.logger.log_metrics({"start": 1.0}, step=0)
        self.loggers[0].experiment.add_scalar("x", 1.0, 0)
        self.events.append(
            [self.trainer.log_dir, self.logger.name, self.logger.version, self.logger.save_dir, len(self.loggers)]
        )
        self.events.append(hasattr(self.logger.experiment, "add_histogram"))

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.logger.experiment.add_histogram("weights", self.net[0].weight, self.global_step)
