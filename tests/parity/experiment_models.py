"""A module that writes through its logger's `experiment`, as public code does: MLflow's MlflowClient, with the
logger's run_id (compared with Lightning's by tests/parity/test_metric_attributes.py)."""

from tests.parity.models import MLP


class MlflowExperimentModel(MLP):
    def on_train_batch_end(self, outputs, batch, batch_idx):
        norm = sum(p.detach().pow(2).sum() for p in self.parameters()).sqrt().item()
        self.logger.experiment.log_metric(self.logger.run_id, "weight_norm", norm, step=self.global_step)
        self.logger.experiment.set_tag(self.logger.run_id, "last_batch", str(batch_idx))
