"""configure_optimizers is read as it runs with the spec's init_args (loopgen/source/fixed.py): an `if` (or a
conditional expression) whose test reads only attributes and hyperparameters the spec's literals fix is read as
the branch taken; anything the source leaves open keeps the decision for run time. The trained results of such
modules are compared with Lightning's by the parity cases `optimizer_chosen_by_init_args_*`."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from loopgen.source.facts import OptimizersFacts
from loopgen.source.reader import inspect_class
from tests.helpers import render

HEADER = """
import torch
import pytorch_lightning as pl


class Base(pl.LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.lr = lr
        self.layer = torch.nn.Linear(2, 1)
"""


def read(tmp_path: Path, body: str, init: str, args: dict[str, Any] | None, extra: str = "") -> OptimizersFacts | str:
    """configure_optimizers' facts (or why they are not known) for a Model(Base) with `init` as its __init__
    body (after super().__init__()), `body` as configure_optimizers', `args` as the spec's init_args."""
    indent = lambda text, by: textwrap.indent(textwrap.dedent(text).strip("\n"), " " * by)
    source = "\n".join(
        [
            HEADER,
            "class Model(Base):",
            '    def __init__(self, optimizer="adam", scheduler=None, warmup=0, **kwargs):',
            "        super().__init__(**kwargs)",
            indent(init, 8),
            "",
            "    def configure_optimizers(self):",
            indent(body, 8),
            "",
            indent(extra, 4),
            "",
        ]
    )
    (tmp_path / "m.py").write_text(source)
    found = inspect_class("m.Model", [tmp_path], where="model.class_path", init_args=args)
    return found.optimizers or found.optimizers_unknown


CHOICE = """
if self.hparams.optimizer == "adam":
    optimizer = torch.optim.Adam(self.parameters())
elif self.hparams.optimizer in ("sgd", "nesterov"):
    optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
else:
    raise ValueError(self.hparams.optimizer)
if self.hparams["scheduler"] is None:
    return optimizer
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
return [optimizer], [{"scheduler": scheduler, "interval": "step" if self.hparams.warmup else "epoch"}]
"""


@pytest.mark.parametrize(
    ("args", "optimizer", "scheduler"),
    [
        ({}, "Adam", None),  # the defaults decide
        ({"optimizer": "nesterov"}, "SGD", None),
        ({"scheduler": "step"}, "Adam", {"interval": "epoch"}),
        ({"optimizer": "sgd", "scheduler": "step", "warmup": 5}, "SGD", {"interval": "step"}),
    ],
)
def test_the_branch_the_spec_selects_is_read(tmp_path: Path, args: dict, optimizer: str, scheduler: dict) -> None:
    facts = read(tmp_path, CHOICE, "self.save_hyperparameters()", args)
    assert isinstance(facts, OptimizersFacts), facts
    assert facts.optimizers == (optimizer,)
    assert [s.config for s in facts.schedulers] == ([scheduler] if scheduler else [])


def test_a_value_no_branch_takes_is_a_run_time_decision(tmp_path: Path) -> None:
    facts = read(tmp_path, CHOICE, "self.save_hyperparameters()", {"optimizer": "rmsprop"})
    line = re.fullmatch(
        r"configure_optimizers raises \(line (\d+)\) with the init_args the spec gives its module", facts
    )
    assert line, facts
    assert (tmp_path / "m.py").read_text().splitlines()[
        int(line[1]) - 1
    ].strip() == "raise ValueError(self.hparams.optimizer)"


ATTRIBUTE = """
name = self.optimizer_name.lower()
if name.startswith("sgd") and self.warmup > 0:
    return torch.optim.SGD(self.parameters(), lr=0.1)
return {"optimizer": torch.optim.Adam(self.parameters()), "lr_scheduler": torch.optim.lr_scheduler.StepLR(torch.optim.Adam(self.parameters()), 1)}
"""


@pytest.mark.parametrize(
    ("args", "form"), [({"optimizer": "SGD_momentum", "warmup": 1}, "optimizer"), ({"optimizer": "SGD"}, "dict")]
)
def test_attributes_set_from_arguments_and_local_names(tmp_path: Path, args: dict, form: str) -> None:
    init = "self.optimizer_name = optimizer\nself.warmup = warmup"
    facts = read(tmp_path, ATTRIBUTE, init, args)
    assert isinstance(facts, OptimizersFacts) and facts.form == form, facts


@pytest.mark.parametrize(
    ("init", "extra", "args"),
    [
        # set again outside __init__: its value when configure_optimizers runs is not the spec's
        (
            "self.optimizer_name = optimizer\nself.warmup = warmup",
            "def setup(self, stage):\n    self.warmup = 1",
            {"optimizer": "sgd"},
        ),
        # only under a condition
        ("if warmup:\n    self.warmup = warmup\nself.optimizer_name = optimizer", "", {"optimizer": "sgd"}),
        # the parameter rebound before it is kept
        (
            "optimizer = optimizer.upper()\nself.optimizer_name = optimizer\nself.warmup = warmup",
            "",
            {"optimizer": "sgd"},
        ),
        # a property of the name
        ("self.optimizer_name = optimizer", "@property\ndef warmup(self):\n    return 1", {"optimizer": "sgd"}),
        # the value is a class, not a literal
        (
            "self.optimizer_name = optimizer\nself.warmup = warmup",
            "",
            {"optimizer": "sgd", "warmup": {"class_path": "x.Y"}},
        ),
        # written through setattr
        ("self.optimizer_name = optimizer\nsetattr(self, 'warmup', warmup)", "", {"optimizer": "sgd"}),
    ],
)
def test_what_the_spec_does_not_fix_is_decided_at_run_time(tmp_path: Path, init: str, extra: str, args: dict) -> None:
    facts = read(tmp_path, ATTRIBUTE, init, args, extra)
    assert isinstance(facts, str), facts  # no shape: unpacked when the script runs


@pytest.mark.parametrize(
    ("init", "extra"),
    [
        ('self.save_hyperparameters(ignore=["optimizer"])', ""),  # not saved
        ("self.save_hyperparameters()", "def on_fit_start(self):\n    self.hparams.optimizer = 'sgd'"),
        ("self.save_hyperparameters()", "def setup(self, stage):\n    self.hparams.update(optimizer='sgd')"),
        ("self.save_hyperparameters({'optimizer': optimizer})", ""),  # a dict: not read
        ("if True:\n    self.save_hyperparameters()", ""),  # not at __init__'s top level
    ],
)
def test_hyperparameters_the_spec_does_not_fix(tmp_path: Path, init: str, extra: str) -> None:
    facts = read(tmp_path, CHOICE, init, {"optimizer": "sgd"}, extra)
    assert isinstance(facts, str), facts


def test_without_init_args_nothing_is_fixed(tmp_path: Path) -> None:
    """The facts read for other purposes (configure_callbacks, the module's root) keep the decision open."""
    assert isinstance(read(tmp_path, CHOICE, "self.save_hyperparameters()", None), str)


def test_the_script_unpacks_the_shape_the_spec_selects(tmp_path: Path) -> None:
    """The rendered script: the plateau branch's dict unpacked as it is, what the module logs collected for
    the plateau only (no run-time decision); the StepLR branch steps it without collecting anything."""
    spec = {
        "seed_everything": 1,
        "model": {
            "class_path": "tests.parity.models.OptimizerChoiceModel",
            "init_args": {"optimizer": "SGD", "scheduler": "plateau"},
        },
        "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False},
    }
    plateau = render(spec, tmp_path)
    assert "unpack_optimizers" not in plateau and "config = model.configure_optimizers()" in plateau
    assert 'scheduler.step(monitored(metrics, "val_loss"))' in plateau
    spec["model"]["init_args"] = {"per_step": True}
    step = render(spec, tmp_path)
    assert "[optimizer], [scheduler_config] = model.configure_optimizers()" in step
    assert "unpack_optimizers" not in step and "monitored(" not in step
