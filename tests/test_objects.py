"""Objects as init args (nested class_path entries): how the spec reads them, how the script builds them, and
that tests/harness.py builds them as LightningCLI does (the parity runner's Lightning side relies on it)."""

from __future__ import annotations

import copy
import os
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.spec.load import load_spec
from loopgen.spec.model import ClassRef, ObjectSpec

OBJECTS = "tests.parity.objects"

BACKBONE_MODEL = {
    "class_path": f"{OBJECTS}.BackboneClassifier",
    "init_args": {
        "lr": 0.05,
        "loss": {"class_path": f"{OBJECTS}.WeightedCrossEntropy", "init_args": {"smoothing": 0.1}},
        "backbone": {
            "class_path": f"{OBJECTS}.Backbone",
            "init_args": {
                "hidden": 16,
                "blocks": [
                    {"class_path": f"{OBJECTS}.Residual", "init_args": {"width": 16}},
                    {"class_path": f"{OBJECTS}.Residual"},
                ],
                "encoder": {"class_path": f"{OBJECTS}.Encoder", "init_args": {"width": 10}},
            },
            "dict_kwargs": {"note": "hello"},
        },
    },
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_nested_entries_are_object_specs(tmp_path: Path) -> None:
    spec = load_spec(
        write(
            tmp_path,
            """\
            model:
              class_path: pkg.Model
              init_args:
                width: 3
                backbone:
                  class_path: pkg.Backbone
                  init_args:
                    encoder: {class_path: pkg.Encoder, init_args: {w: 2}}
                    blocks: [{class_path: pkg.Block}, 3]
                  dict_kwargs: {z: {class_path: kept.As.Data}}
                name: pkg.NotAnObject
              dict_kwargs: {extra: 1}
            """,
        )
    )
    model = spec.model
    assert type(model) is ClassRef and model.init_args["extra"] == 1  # top level: dict_kwargs merged, as before
    backbone = model.init_args["backbone"]
    assert isinstance(backbone, ObjectSpec) and backbone.class_path == "pkg.Backbone" and backbone.line == 5
    assert backbone.init_args["encoder"] == ObjectSpec("pkg.Encoder", {"w": 2}, 8)
    assert backbone.init_args["blocks"] == [ObjectSpec("pkg.Block", {}, 9), 3]
    # jsonargparse passes dict_kwargs as they are: not objects
    assert backbone.dict_kwargs == {"z": {"class_path": "kept.As.Data"}}
    assert model.init_args["name"] == "pkg.NotAnObject"  # a bare string stays a string


@pytest.mark.parametrize(
    "entry, message",
    [
        ("{class_path: pkg.B, init_args: {1: 2}}", "argument names must be Python identifiers"),
        ("{class_path: B}", "needs its module"),
        ("{class_path: pkg.B, init_args: 3}", "expected a mapping of argument names to values"),
        ("{class_path: pkg.B, typo: 1}", "unknown key"),
        ("{class_path: pkg.B, init_args: {a: 1}, dict_kwargs: {a: 2}}", "also given in init_args"),
    ],
)
def test_bad_nested_entries_name_their_key(tmp_path: Path, entry: str, message: str) -> None:
    path = write(tmp_path, f"model:\n  class_path: pkg.Model\n  init_args:\n    backbone: {entry}\n")
    with pytest.raises(LoopgenError) as error:
        load_spec(path)
    assert "model.init_args.backbone" in str(error.value) and message in str(error.value)
    assert "(line 4)" in str(error.value)


def test_lightning_callbacks_take_no_objects(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        model: pkg.Model
        trainer:
          callbacks:
            - class_path: ModelCheckpoint
              init_args: {monitor: {class_path: pkg.X}}
        """,
    )
    with pytest.raises(LoopgenError, match=r"trainer.callbacks\[0\].init_args.monitor"):
        load_spec(path)


def test_script_builds_objects_before_their_owner_in_init_order(tmp_path: Path) -> None:
    """The model's objects as variables, in the order of BackboneClassifier's parameters (backbone, loss), not the
    spec's; inside one, the arguments in Backbone's parameter order (encoder, hidden, blocks); dict_kwargs last."""
    import yaml

    from loopgen.pipeline import render_spec

    path = tmp_path / "objects.yaml"
    spec = {"model": BACKBONE_MODEL, "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False}}
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    text, _ = render_spec(path, tmp_path / "train.py")
    built = text[text.index("    # model\n") : text.index("model = BackboneClassifier(")]
    assert built.index("model_backbone = Backbone(") < built.index("model_loss = WeightedCrossEntropy(")
    backbone = built[built.index("Backbone(") : built.index("model_loss")]
    order = [backbone.index(word) for word in ("encoder=Encoder(width=10)", "hidden=16", "blocks=[", 'note="hello"')]
    assert order == sorted(order), backbone
    assert "blocks=[Residual(width=16), Residual()]" in backbone
    assert "model = BackboneClassifier(lr=0.05, loss=model_loss, backbone=model_backbone)" in text
    assert "from tests.parity.objects import (" in text and "    Encoder,\n" in text and "    Residual,\n" in text
    assert "class_path" not in text


def test_a_missing_class_of_the_project_is_refused(tmp_path: Path) -> None:
    import yaml

    from loopgen.pipeline import render_spec

    model = copy.deepcopy(BACKBONE_MODEL)
    model["init_args"]["loss"]["class_path"] = f"{OBJECTS}.NoSuchLoss"
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump({"model": model, "trainer": {"max_epochs": 1}}, sort_keys=False), encoding="utf-8")
    with pytest.raises(LoopgenError, match="defines no class 'NoSuchLoss'"):
        render_spec(path, tmp_path / "train.py")


@pytest.mark.slow
def test_harness_builds_objects_as_lightning_cli_does() -> None:
    """tests/harness.py's `instantiate` (the parity runner's Lightning side) and LightningCLI build the same model
    (the same weights: each object draws from the global generator, so the order counts) from the same config."""
    torch = pytest.importorskip("torch")
    pl = pytest.importorskip("pytorch_lightning")
    from pytorch_lightning.cli import LightningCLI

    from tests.harness import instantiate

    cli = LightningCLI(
        pl.LightningModule,
        subclass_mode_model=True,
        run=False,
        args={"seed_everything": 7, "model": copy.deepcopy(BACKBONE_MODEL), "trainer": {"logger": False}},
        save_config_callback=None,
    )
    pl.seed_everything(7)
    ours = instantiate(copy.deepcopy(BACKBONE_MODEL))
    theirs = cli.model.state_dict()
    assert ours.state_dict().keys() == theirs.keys()
    assert all(torch.equal(ours.state_dict()[k], theirs[k]) for k in theirs)
    assert ours.backbone.options == cli.model.backbone.options == {"note": "hello"}


def _render(tmp_path: Path, spec: dict, name: str = "train.py") -> str:
    import yaml

    from loopgen.pipeline import render_spec

    path = tmp_path / f"{Path(name).stem}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    text, _ = render_spec(path, tmp_path / name)
    (tmp_path / name).write_text(text, encoding="utf-8")
    return text


METRIC_SPEC = {
    "seed_everything": 1,
    "model": {"class_path": "tests.parity.metric_models.MetricClassifier"},
    "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False, "accelerator": "cpu"},
}


def test_torchmetrics_only_when_the_module_uses_it(tmp_path: Path) -> None:
    """A module whose source imports torchmetrics and logs: the collector computes and resets its Metric objects,
    even with nothing reading the logged values; a module that does not: no trace of torchmetrics."""
    text = _render(tmp_path, METRIC_SPEC, "metrics.py")
    assert "import torchmetrics\n" in text
    for trace in ("isinstance(value, torchmetrics.Metric)", "entry.metric.reset()", "self.metric.compute()",
                  "torchmetrics.MetricCollection"):  # fmt: skip
        assert trace in text, trace
    plain = _render(tmp_path, {**METRIC_SPEC, "model": {"class_path": "tests.parity.models.MLP"}}, "plain.py")
    assert "torchmetrics" not in plain and "metric" not in plain.lower().replace("callback_metrics", "")


def test_rendered_objects_and_metrics_scripts_are_clean_under_ruff(tmp_path: Path) -> None:
    import subprocess
    import sys

    _render(tmp_path, METRIC_SPEC, "metrics.py")
    _render(tmp_path, {**METRIC_SPEC, "model": BACKBONE_MODEL}, "objects.py")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E,F,W,B,ARG",
         "--line-length", "88", str(tmp_path / "metrics.py"), str(tmp_path / "objects.py")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_resuming_a_torchmetrics_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LoopgenError, match="ckpt_path.*torchmetrics"):
        _render(tmp_path, {**METRIC_SPEC, "ckpt_path": "last.ckpt"})


STREAM_MODEL = """
import torch
import pytorch_lightning as pl
from torch.utils.data import DataLoader, IterableDataset


class Stream(IterableDataset):
    def __iter__(self):
        for _ in range(10):
            yield torch.randn(4)


class StreamModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(Stream(), batch_size=2)
"""


def _stream_package(tmp_path: Path) -> dict:
    (tmp_path / "streampkg").mkdir()
    (tmp_path / "streampkg" / "__init__.py").write_text("")
    (tmp_path / "streampkg" / "models.py").write_text(STREAM_MODEL)
    return {"class_path": "streampkg.models.StreamModel"}


@pytest.mark.parametrize(
    "given",
    [{"trainer": {"overfit_batches": 2}}, {"trainer": {"reload_dataloaders_every_n_epochs": 1}},
     {"trainer": {"profiler": "simple"}}, {"ckpt_path": "last.ckpt"}],
    ids=["overfit_batches", "reload_dataloaders_every_n_epochs", "profiler", "ckpt_path"],
)  # fmt: skip
def test_what_a_loader_without_length_does_not_serve_is_refused_at_render_time(tmp_path: Path, given: dict) -> None:
    """A module whose source uses IterableDataset renders a script that decides at run time; the flags that script
    does not serve yet are refused, naming the flag and the class."""
    model = _stream_package(tmp_path)
    spec = {"model": model, "trainer": {"max_steps": 3, **given.get("trainer", {})}}
    spec.update({key: value for key, value in given.items() if key != "trainer"})
    flag = next(iter(given["trainer"])) if "trainer" in given else "ckpt_path"
    refused = rf"{flag}.*StreamModel's source uses IterableDataset.*not supported by loopgen \(.*\); give the dataset"
    with pytest.raises(LoopgenError, match=refused):
        _render(tmp_path, spec)


def test_a_loader_without_length_has_code_only_where_the_source_uses_iterable_dataset(tmp_path: Path) -> None:
    text = _render(tmp_path, {"model": _stream_package(tmp_path), "trainer": {"max_steps": 3}}, "stream.py")
    for trace in ("def loader_length(loader):", "class Fetcher:", "while not train_iter.done:"):
        assert trace in text, trace
    plain = _render(tmp_path, {"model": {"class_path": "tests.parity.models.MLP"}, "trainer": {"max_steps": 3}})
    assert "Fetcher" not in plain and "loader_length" not in plain and "train_iter.done" not in plain


@pytest.mark.parametrize(
    ("trainer", "message"),
    [({"val_check_interval": 0.5}, "`Trainer(val_check_interval)` must be time based, `1.0` or an int"),
     ({"limit_train_batches": 0.5}, "`Trainer(limit_train_batches)` must be `1.0` or an int")],
    ids=["val_check_interval", "limit_train_batches"],
)  # fmt: skip
def test_a_float_fraction_of_a_loader_without_length_raises_lightnings_error(
    tmp_path: Path, trainer: dict, message: str
) -> None:
    """The spec cannot tell whether the loader has a length: the script raises Lightning's error when it loads it."""
    import subprocess
    import sys

    spec = {"model": _stream_package(tmp_path), "trainer": {"max_steps": 3, "logger": False, **trainer}}
    _render(tmp_path, spec)
    result = subprocess.run(
        [sys.executable, str(tmp_path / "train.py")], cwd=tmp_path, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode != 0 and message in result.stderr, result.stderr[-2000:]


def test_data_and_callbacks_take_objects_too(tmp_path: Path) -> None:
    spec = {
        "seed_everything": 1,
        "model": {"class_path": "tests.parity.models.MLP"},
        "data": {"class_path": "tests.parity.data.ShuffledData", "init_args": {"jitter": {"class_path": f"{OBJECTS}.Encoder"}}},
        "trainer": {
            "max_epochs": 1,
            "callbacks": [
                {"class_path": "tests.parity.callbacks.StopRequest", "init_args": {"at_step": {"class_path": "torch.nn.Identity"}}}
            ],
        },
    }  # fmt: skip
    text = _render(tmp_path, spec)
    assert "    data_jitter = Encoder()\n    data = ShuffledData(jitter=data_jitter)\n" in text
    assert "    callback_at_step = torch.nn.Identity()\n    callback = StopRequest(at_step=callback_at_step)\n" in text


IMPORTED_MODEL = """
from typing import Callable, Optional

import torch
import pytorch_lightning as pl


def scaled_tanh(x):
    return 0.5 * torch.tanh(x)


class Configurable(pl.LightningModule):
    def __init__(self, optimizer_cls: Callable = torch.optim.SGD, activation: Optional[Callable] = None,
                 name: str = "m", layers: Optional[list[Callable]] = None):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return self.hparams.optimizer_cls(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(4, 2), batch_size=2)
"""


def _configurable(tmp_path: Path, **init_args) -> dict:
    (tmp_path / "confpkg").mkdir(exist_ok=True)
    (tmp_path / "confpkg" / "__init__.py").write_text("")
    (tmp_path / "confpkg" / "models.py").write_text(IMPORTED_MODEL)
    return {"class_path": "confpkg.models.Configurable", "init_args": init_args}


def test_a_string_for_a_function_or_class_parameter_is_imported(tmp_path: Path) -> None:
    """LightningCLI imports a string given for a parameter typed Callable: torch's by their dotted path, the
    project's imported by name; a string for a `str` parameter stays a string."""
    model = _configurable(
        tmp_path,
        optimizer_cls="torch.optim.AdamW",
        activation="confpkg.models.scaled_tanh",
        name="torch.optim.SGD",
        layers=["torch.nn.ReLU", "confpkg.models.scaled_tanh"],
    )
    text = _render(tmp_path, {"model": model, "trainer": {"max_steps": 1}})
    built = " ".join(text[text.index("model = Configurable(") :].split("\n    )")[0].split())
    assert built == (
        'model = Configurable( optimizer_cls=torch.optim.AdamW, activation=scaled_tanh, name="torch.optim.SGD",'
        " layers=[torch.nn.ReLU, scaled_tanh],"
    )
    assert "from confpkg.models import Configurable, scaled_tanh" in text


def test_a_string_that_is_no_import_path_for_a_callable_is_refused(tmp_path: Path) -> None:
    model = _configurable(tmp_path, optimizer_cls="AdamW")
    with pytest.raises(LoopgenError, match=r"optimizer_cls.*typed as a function or class.*'AdamW' is not an import"):
        _render(tmp_path, {"model": model, "trainer": {"max_steps": 1}})
