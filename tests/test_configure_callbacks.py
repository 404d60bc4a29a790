"""configure_callbacks() at render time: what loopgen reads of its return, how it merges the callbacks into the
spec's as Lightning 2.x's Trainer does, and what it refuses (naming the line). The returned callbacks' training is
compared with Lightning's by the configure_callbacks parity cases (tests/parity/test_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.pipeline import with_configured_callbacks
from loopgen.spec.load import load_spec
from tests.helpers import code_of
from tests.test_manual import render, write

MODEL = """
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar

from pkg.callbacks import Counter, SubCounter


class Gan(pl.LightningModule):
    def __init__(self, patience=3, monitor="loss"):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(2, 1)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).sum()
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def configure_callbacks(self):
BODY
"""

CALLBACKS = """
import pytorch_lightning as pl


class Counter(pl.Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        pass


class SubCounter(Counter):
    pass


class Other(pl.Callback):
    def on_train_start(self, trainer, pl_module):
        pass
"""


def project(tmp_path: Path, body: str, spec: str = "") -> Path:
    path = write(tmp_path, MODEL.replace("BODY", body), spec)
    (tmp_path / "pkg" / "callbacks.py").write_text(CALLBACKS)
    return path


def merged(tmp_path: Path, body: str, spec: str = "") -> list[tuple[str, dict]]:
    """The spec's callbacks after the merge: (class name, init_args) each."""
    path = project(tmp_path, body, spec)
    found = with_configured_callbacks(load_spec(path), [tmp_path])
    return [(ref.name, dict(ref.init_args)) for ref in found.trainer.callbacks]


def refused(tmp_path: Path, body: str, spec: str = "") -> str:
    path = project(tmp_path, body, spec)
    with pytest.raises(LoopgenError) as caught:
        from loopgen.pipeline import render_spec

        render_spec(path, tmp_path / "train.py")
    return " ".join(str(caught.value).split())


SPEC = """
trainer:
  max_epochs: 1
  callbacks:
    - class_path: EarlyStopping
      init_args: {monitor: loss, patience: 9}
    - pkg.callbacks.Counter
    - pkg.callbacks.Other
"""


def test_returned_callbacks_replace_the_trainers_of_their_class_and_come_after_the_others(tmp_path: Path) -> None:
    body = """\
        stop = EarlyStopping(monitor=self.hparams.monitor, patience=self.hparams["patience"], mode="min")
        return [stop, SubCounter()]
"""
    callbacks = merged(tmp_path, body, SPEC)
    names = [name for name, _ in callbacks]
    # the trainer's EarlyStopping and Counter (SubCounter subclasses it) go; Other stays, before the returned
    assert names == ["Other", "EarlyStopping", "SubCounter"]
    assert callbacks[1][1]["patience"] == 3 and callbacks[1][1]["monitor"] == "loss"  # the init defaults


def test_the_spec_gives_the_hparams_its_init_args_set(tmp_path: Path) -> None:
    body = "        return EarlyStopping(monitor='loss', patience=self.hparams.patience)\n"
    spec = "model:\n  class_path: pkg.models.Gan\n  init_args: {patience: 7}\ntrainer: {max_epochs: 1}\n"
    path = project(tmp_path, body)
    path.write_text(spec)
    found = with_configured_callbacks(load_spec(path), [tmp_path])
    assert [(ref.name, ref.init_args["patience"]) for ref in found.trainer.callbacks] == [("EarlyStopping", 7)]


def test_a_returned_model_checkpoint_replaces_the_default_one(tmp_path: Path) -> None:
    body = "        return [ModelCheckpoint(dirpath='mine', save_top_k=-1)]\n"
    script = render(
        tmp_path, MODEL.replace("BODY", body).replace("from pkg.callbacks import Counter, SubCounter\n", "")
    )
    assert script.count("= ModelCheckpoint(") == 1
    assert '"mine"' in script


@pytest.mark.parametrize(
    "body", ["        return None\n", "        return []\n", '        """None."""\n        return []\n']
)
def test_no_callbacks_returned_changes_nothing(tmp_path: Path, body: str) -> None:
    assert [name for name, _ in merged(tmp_path, body, SPEC)] == ["EarlyStopping", "Counter", "Other"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "        if self.hparams.patience:\n            return [Counter()]\n        return []\n",
            "configure_callbacks may only assign names to the callbacks it builds before its return",
        ),
        ("        return [EarlyStopping(*self.args)]\n", "EarlyStopping's argument *self.args is neither a literal"),
        (
            "        return [EarlyStopping(monitor=self.monitor_name)]\n",
            "EarlyStopping(monitor=...) is neither a literal nor self.hparams.NAME",
        ),
        ("        return [make_callback()]\n", "builds a callback whose class loopgen cannot find"),
        ("        return self.callbacks\n", "returns something other than callbacks built in it"),
    ],
    ids=["control_flow", "positional", "attribute", "function", "stored"],
)
def test_a_return_the_source_does_not_show_is_refused_at_its_line(tmp_path: Path, body: str, message: str) -> None:
    found = refused(tmp_path, body)
    assert "configure_callbacks as written is not supported by loopgen" in found
    assert message in found and "pkg/models.py:" in found


def test_a_lightning_callback_s_arguments_may_be_given_by_position(tmp_path: Path) -> None:
    """Any form Python accepts: Lightning's callbacks' parameters in their order (held to Lightning's signatures by
    test_positional_names_are_lightnings), self.hparams among them; Python's errors where it would raise."""
    body = "        return [EarlyStopping('loss', 0.01, self.hparams.patience, mode='max')]\n"
    assert merged(tmp_path, body)[-1] == (
        "EarlyStopping",
        {**merged(tmp_path, "        return [EarlyStopping(monitor='loss')]\n")[-1][1],
         "min_delta": 0.01, "patience": 3, "mode": "max"},
    )  # fmt: skip
    found = refused(tmp_path, "        return [EarlyStopping('loss', monitor='loss')]\n")
    assert "EarlyStopping() got multiple values for argument 'monitor'" in found and "pkg/models.py:" in found
    found = refused(tmp_path, "        return [ModelCheckpoint(" + ", ".join(["None"] * 16) + ")]\n")
    assert "ModelCheckpoint() takes 15 positional arguments but 16 were given" in found
    found = refused(tmp_path, "        return [Counter(1)]\n")
    assert "pass Counter's arguments by keyword" in found


def test_positional_names_are_lightnings() -> None:
    import inspect

    import pytorch_lightning.callbacks as lightning

    from loopgen.spec.configured import positional_names
    from loopgen.spec.flags import CALLBACK_ARGS

    for name in CALLBACK_ARGS:
        parameters = inspect.signature(getattr(lightning, name).__init__).parameters.values()
        by_position = [p.name for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD and p.name != "self"]
        assert positional_names(name) == tuple(by_position), name


def test_a_progress_bar_returned_is_refused(tmp_path: Path) -> None:
    found = refused(tmp_path, "        return [TQDMProgressBar(refresh_rate=2)]\n")
    assert "TQDMProgressBar returned by configure_callbacks is not supported by loopgen" in found
    assert "depends on whether rich is installed" in found and "pkg/models.py:" in found


def test_an_hparam_the_module_does_not_save_is_refused(tmp_path: Path) -> None:
    body = "        return [EarlyStopping(monitor='loss', patience=self.hparams.patience)]\n"
    path = project(tmp_path, body)
    source = path.parent / "pkg" / "models.py"
    source.write_text(source.read_text().replace("        self.save_hyperparameters()\n", ""))
    with pytest.raises(LoopgenError) as caught:
        with_configured_callbacks(load_spec(path), [tmp_path])
    assert "never calls self.save_hyperparameters()" in str(caught.value)


def test_a_returned_callback_is_checked_as_a_spec_entry(tmp_path: Path) -> None:
    found = refused(tmp_path, "        return [EarlyStopping(monitor='loss', mode='middle')]\n")
    assert "mode" in found and "pkg/models.py:" in found


def test_a_returned_class_that_subclasses_two_of_the_trainers_is_refused(tmp_path: Path) -> None:
    spec = "trainer:\n  max_epochs: 1\n  callbacks: [pkg.callbacks.Counter, pkg.callbacks.SubCounter]\n"
    body = "        return [SubCounter()]\n"
    # SubCounter is one of them and subclasses the other: Lightning replaces one, by a set's order
    with pytest.raises(LoopgenError) as caught:
        merged(tmp_path, body, spec)
    assert "subclasses several of trainer.callbacks' classes" in str(caught.value)


def test_configure_callbacks_in_a_spec_that_follows_lightning_1_9_5_is_refused(tmp_path: Path) -> None:
    source = MODEL.replace("BODY", "        return [Counter()]\n").replace(
        "    def configure_optimizers(self):", "    def training_epoch_end(self, outputs):\n        pass\n\n"
        "    def configure_optimizers(self):"
    )  # fmt: skip
    path = write(tmp_path, source)
    (tmp_path / "pkg" / "callbacks.py").write_text(CALLBACKS)
    with pytest.raises(LoopgenError) as caught:
        with_configured_callbacks(load_spec(path), [tmp_path])
    assert "configure_callbacks in a spec that follows Lightning 1.9.5 is not supported" in str(caught.value)


def test_the_script_builds_the_returned_callbacks_and_calls_their_hooks(tmp_path: Path) -> None:
    body = "        return [Counter()]\n"
    path = project(tmp_path, body, "trainer: {max_epochs: 1, enable_checkpointing: false}\n")
    from loopgen.pipeline import render_spec

    script, _ = render_spec(path, tmp_path / "train.py")
    assert "callback = Counter()" in script and "callback.on_train_batch_end(trainer, model, " in script
    assert "configure_callbacks" not in code_of(script)  # built from the source, never called


def test_configure_model_beside_configure_callbacks_is_called_and_configure_callbacks_is_not(tmp_path: Path) -> None:
    source = MODEL.replace("BODY", "        return []\n").replace(
        "    def configure_optimizers(self):", "    def configure_model(self):\n        pass\n\n"
        "    def configure_optimizers(self):"
    ).replace("from pkg.callbacks import Counter, SubCounter\n", "")  # fmt: skip
    script = render(tmp_path, source)
    assert "model.configure_model()" in script and "model.configure_callbacks()" not in script
