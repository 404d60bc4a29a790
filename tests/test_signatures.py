"""init_args checked at render time against the signatures of the classes they go to: user classes read with
the standard library's ast, torch's optimizers and schedulers from loopgen's table (checked here against the installed torch),
Lightning's callbacks, loggers and profilers from the flag tables (checked against the installed Lightning)."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.pipeline import render_spec
from loopgen.source.signatures import TORCH_OPTIMIZERS, TORCH_SCHEDULERS
from tests.helpers import write_spec


def _keyword_parameters(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[2:]  # self, params / optimizer
    named = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = tuple(p.name for p in named if p.default is p.empty)
    return tuple(p.name for p in named), required, any(p.kind == p.VAR_KEYWORD for p in parameters)


def test_the_optimizer_table_is_the_installed_torchs():
    import torch.optim

    installed = {
        name: cls
        for name, cls in vars(torch.optim).items()
        if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) and cls is not torch.optim.Optimizer
    }
    assert set(TORCH_OPTIMIZERS) == set(installed)
    for name, cls in installed.items():
        assert _keyword_parameters(cls) == (TORCH_OPTIMIZERS[name], (), False), name


def test_the_scheduler_table_is_the_installed_torchs():
    from torch.optim import lr_scheduler

    bases = (lr_scheduler.LRScheduler, lr_scheduler.ReduceLROnPlateau)
    installed = {
        name: cls
        for name, cls in vars(lr_scheduler).items()
        if isinstance(cls, type) and issubclass(cls, bases) and not name.startswith("_") and name != "LRScheduler"
    }
    assert set(TORCH_SCHEDULERS) | {"ChainedScheduler"} == set(installed)
    for name, (names, required) in TORCH_SCHEDULERS.items():
        assert _keyword_parameters(installed[name]) == (names, required, False), name


# Lightning's arguments that loopgen's tables leave out, on purpose (each refused as unknown)
_NOT_IN_TABLES = {"ModelSummary": {"summarize_kwargs"}, "TensorBoardLogger": {"kwargs"}, "WandbLogger": {"kwargs"}}


def test_lightnings_classes_take_every_argument_of_loopgens_tables():
    import pytorch_lightning.callbacks
    import pytorch_lightning.loggers
    import pytorch_lightning.profilers

    from loopgen.spec.flags import CALLBACK_ARGS, LOGGER_ARGS, PROFILER_ARGS

    for module, table in (
        (pytorch_lightning.callbacks, CALLBACK_ARGS),
        (pytorch_lightning.loggers, LOGGER_ARGS),
        (pytorch_lightning.profilers, PROFILER_ARGS),
    ):
        for name, args in table.items():
            parameters = dict(list(inspect.signature(getattr(module, name).__init__).parameters.items())[1:])
            takes_more = any(p.kind == p.VAR_KEYWORD for p in parameters.values())
            ours = {arg.name for arg in args}
            assert takes_more or ours <= set(parameters), (name, ours - set(parameters))
            named = {n for n, p in parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
            assert named - ours <= _NOT_IN_TABLES.get(name, set()) | {"profiler_kwargs"}, (name, named - ours)


MODELS = """
import dataclasses
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self, hidden: int, lr: float = 0.1):
        super().__init__()
        self.layer = nn.Linear(2, hidden)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def train_dataloader(self):
        return [torch.zeros(2)]

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Child(Base):
    pass


class Open(Base):
    def __init__(self, depth=1, **kwargs):
        super().__init__(**kwargs)


class NoInit(nn.Module):
    def training_step(self, batch, batch_idx):
        return batch.sum()

    def train_dataloader(self):
        return [torch.zeros(2)]

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@dataclasses.dataclass(eq=False)
class Fields(NoInit):
    width: int = 3

    def __post_init__(self):
        super().__init__()


class Positional(NoInit):
    def __init__(self, size, /, scale=1.0):
        super().__init__()


class MyOptimizer(torch.optim.Optimizer):
    def __init__(self, params, lr, decay=0.0):
        super().__init__(params, {"lr": lr})
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "models.py").write_text(textwrap.dedent(MODELS))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def problems(project: Path, spec: dict) -> list[str]:
    spec = {**spec, "trainer": spec.get("trainer", {"max_epochs": 1, "logger": False})}
    try:
        render_spec(write_spec(project, spec))
    except LoopgenError as error:
        return [str(problem) for problem in error.problems]
    return []


def model(name: str, **init_args) -> dict:
    return {"model": {"class_path": f"proj.models.{name}", "init_args": init_args}}


@pytest.mark.parametrize(
    "spec, expected",
    [
        (model("Base", hiden=3), ["model.init_args (line 3): Base needs `hidden` (it has no default)",
                                  "model.init_args.hiden (line 4): unknown argument of Base (did you mean 'hidden'?)"]),
        (model("Child", hidden=3, lrr=1), ["model.init_args.lrr (line 5): unknown argument of Child (did you mean 'lr'?)"]),
        (model("NoInit", x=1), ["model.init_args.x (line 4): unknown argument of NoInit (it takes no arguments)"]),
        (model("Positional", size=2), ["model.init_args.size (line 4): Positional's `size` is positional-only: it cannot be given by name"]),
        ({**model("Base", hidden=2), "optimizer": {"class_path": "torch.optim.SGDD"}},
         ["optimizer.class_path (line 6): torch.optim has no optimizer 'SGDD' (did you mean 'SGD' or 'ASGD'?)"]),
        ({**model("Base", hidden=2), "optimizer": {"class_path": "torch.optim.Adam", "init_args": {"lrr": 1, "params": 2}}},
         ["optimizer.init_args.lrr (line 8): unknown argument of Adam (did you mean 'lr'?)",
          "optimizer.init_args.params (line 9): Adam's `params` is not set in the spec: the script passes the model's parameters"]),
        ({**model("Base", hidden=2), "optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 1}},
          "lr_scheduler": {"class_path": "torch.optim.lr_scheduler.LambdaLR"}},
         ["lr_scheduler.init_args (line 9): LambdaLR takes a function, which a spec cannot give"]),
        ({**model("Base", hidden=2), "optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 1}},
          "lr_scheduler": {"class_path": "torch.optim.lr_scheduler.StepLR", "init_args": {"gama": 0.5}}},
         ["lr_scheduler.init_args (line 11): StepLR needs `step_size` (it has no default)",
          "lr_scheduler.init_args.gama (line 12): unknown argument of StepLR (did you mean 'gamma'?)"]),
        ({**model("Base", hidden=2), "optimizer": {"class_path": "proj.models.MyOptimizer", "init_args": {"decay": 1}}},
         ["optimizer.init_args (line 7): MyOptimizer needs `lr` (it has no default)"]),
    ],
    ids=["typo-and-required", "base-class", "no-init", "positional-only", "torch-optimizer", "optimizer-args",
         "lambda-scheduler", "scheduler-args", "user-optimizer"],
)  # fmt: skip
def test_bad_init_args_are_reported_together(project, spec, expected):
    assert problems(project, spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        model("Base", hidden=2, lr=0.5),
        model("Open", hidden=2, anything=1),  # **kwargs takes any name
        model("Fields", width=2, unknown=1),  # a dataclass's __init__ is not in its source: not checked
        model("Base", hidden={"class_path": "proj.models.NoInit"}),  # an object: its own class, checked apart
        {**model("Base", hidden=2), "optimizer": {"class_path": "proj.models.MyOptimizer", "init_args": {"lr": 1}}},
        {**model("Base", hidden=2), "optimizer": "torch.optim.SGD",
         "lr_scheduler": {"class_path": "torch.optim.lr_scheduler.ReduceLROnPlateau", "init_args": {"monitor": "x"}}},
    ],
    ids=["plain", "kwargs", "dataclass", "nested-object", "user-optimizer", "plateau-monitor"],
)  # fmt: skip
def test_good_init_args_pass_the_check(project, spec):
    assert not [p for p in problems(project, spec) if "init_args" in p or "class_path" in p], problems(project, spec)


def test_an_object_argument_of_a_user_class_is_checked_too(project):
    inner = {"class_path": "proj.models.Base", "init_args": {"hiddn": 2}}
    found = problems(project, model("Open", hidden=2, depth=inner))
    assert found == [
        "model.init_args.depth.init_args (line 7): Base needs `hidden` (it has no default)",
        "model.init_args.depth.init_args.hiddn (line 8): unknown argument of Base (did you mean 'hidden'?)",
    ], found


def test_every_class_problem_is_reported_at_once(project):
    spec = {
        **model("Bse", hidden=2),
        "trainer": {"max_epochs": 1, "callbacks": [{"class_path": "proj.models.Nope"}]},
        "optimizer": {"class_path": "torch.optim.SGDD"},
    }
    found = problems(project, spec)
    assert [p.split(" (line")[0] for p in found] == [
        "model.class_path",
        "trainer.callbacks[0].class_path",
        "optimizer.class_path",
    ], found
    assert all("(line " in p for p in found)
