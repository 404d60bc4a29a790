"""Parity of trainer.progress_bar_metrics, trainer.lr_scheduler_configs (and callback_metrics, logged_metrics: tests/parity/live_metrics.py) with pytorch_lightning.Trainer: a
callback (tests/parity/metric_attributes.py) records both at every hook, under Lightning and under the script,
and the records (with the weights, as in tests/parity/test_parity.py) must be equal.

    pytest tests/parity/test_metric_attributes.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Case, case_ids
from tests.parity.test_parity import Runner, case, differences, logger, train_both

pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

RECORDER = [{"class_path": "tests.parity.metric_attributes.MetricAttributesRecorder"}]


def spec_optimizer(built: Case, scheduler: dict) -> Case:
    """The spec's optimizer and lr_scheduler (LightningCLI's configure_optimizers)."""
    built.spec["optimizer"] = {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.05}}
    built.spec["lr_scheduler"] = scheduler
    built.spec["model"]["class_path"] = "tests.parity.metric_attributes.SpecOptimizerModel"
    return built


def manual(built: Case, model: str) -> Case:
    built.spec["model"]["class_path"] = f"tests.parity.manual_models.{model}"
    return built


def experiment(built: Case, model: str) -> Case:
    built.spec["model"]["class_path"] = f"tests.parity.experiment_models.{model}"
    return built


def live(built: Case) -> Case:
    built.spec["model"]["class_path"] = "tests.parity.live_metrics.LiveMetricsModel"
    return built


LIVE = [{"class_path": "tests.parity.live_metrics.LiveMetricsCallback"}]
PLATEAU = {"class_path": "torch.optim.lr_scheduler.ReduceLROnPlateau", "init_args": {"monitor": "val_loss"}}
CASES = [
    # prog_bar values on step and on epoch, in training and validation (with the sanity check); a plateau
    # scheduler in a dict with its monitor
    case(
        "pbar_logging_plateau",
        "LoggingModel",
        max_epochs=2,
        limit_train_batches=5,
        val_check_interval=2,
        callbacks=RECORDER,
    ),
    # two schedulers in dicts, one named, of interval "step" and "epoch"
    case("pbar_param_groups_two_schedulers", "ParamGroupsModel", max_epochs=2, callbacks=RECORDER),
    # configure_optimizers built by a helper: the configs the script unpacks at run time
    case(
        "pbar_helper_schedulers",
        "HelperSchedulersModel",
        max_epochs=2,
        loop={"lr_schedulers": True},
        callbacks=RECORDER,
    ),
    # the spec's optimizer and ReduceLROnPlateau (LightningCLI's {"scheduler", "monitor"}), and a bare StepLR
    spec_optimizer(case("spec_plateau_configs", "LoggingModel", max_epochs=2, callbacks=RECORDER), PLATEAU),
    spec_optimizer(
        case("spec_step_lr_configs", "LoggingModel", max_epochs=2, callbacks=RECORDER),
        {"class_path": "torch.optim.lr_scheduler.StepLR", "init_args": {"step_size": 1}},
    ),
    # manual optimization: prog_bar values logged in training_step; the schedulers the module steps
    manual(case("manual_gan_progress_bar", max_epochs=2, limit_train_batches=3, callbacks=RECORDER), "ManualGAN"),
    manual(case("manual_scheduler_configs", max_epochs=2, callbacks=RECORDER), "ManualAccumulateClip"),
    # the bar drawn too (the bar and the attribute read the same values)
    case("pbar_with_bar", "LoggingModel", max_epochs=1, enable_progress_bar=True, callbacks=RECORDER),
    # a module writing through its logger's experiment: MLflow's client
    experiment(
        case("experiment_mlflow_client", max_epochs=2, logger=logger("MLFlowLogger", tracking_uri="file:./mlruns")),
        "MlflowExperimentModel",
    ),
    # ... a CSVLogger's writer, behind hasattr checks; its rows beside the logger's own
    experiment(
        case(
            "experiment_csv_writer", max_epochs=2, logger=logger("CSVLogger", save_dir=".", flush_logs_every_n_steps=3)
        ),
        "CsvExperimentModel",
    ),
    # ... fast_dev_run's DummyLogger, standing in for the spec's TensorBoardLogger
    experiment(
        case("experiment_fast_dev_run_dummy", fast_dev_run=2, logger=logger("TensorBoardLogger", save_dir=".")),
        "DummyLoggerModel",
    ),
    # callback_metrics and logged_metrics brought up to date when read, in every hook: the step values within a
    # loop's batches, the epoch values before the first and after the last; what the epoch-start hooks log
    live(case("live_metrics_mid_epoch_validation", max_epochs=2, val_check_interval=3, callbacks=LIVE)),
    # ... within accumulation windows, without the sanity check, with the bar reading them too
    live(
        case(
            "live_metrics_accumulate_bar",
            max_epochs=2,
            accumulate_grad_batches=2,
            num_sanity_val_steps=0,
            enable_progress_bar=True,
            callbacks=LIVE,
        )
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_metric_attributes_match_lightning(case: Case, runner: Runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script differs from Lightning ({tmp_path}):\n" + "\n".join(found)
