"""The source reader never crashes: any module source that `ast` parses renders a script, or is refused at render
time with a problem naming where; never an internal error.

Hypothesis writes LightningModules whose configure_optimizers and hooks are drawn from the shapes public modules
use and misuse: rebindings of a name around its own value (`scheduler = {"scheduler": scheduler, ...}`), aliases,
tuple targets, subscript and augmented assignments, helper calls, conditionals, loops, nested functions, dict
and list unpacking, f-string keys, comprehensions, and reads of the trainer and the optimizers.
"""

from __future__ import annotations

import ast
import tempfile
import textwrap
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loopgen.errors import LoopgenError
from tests.helpers import render

NAMES = ["opt", "sched", "cfg", "x"]

EXPRESSIONS = [
    "torch.optim.SGD(self.parameters(), lr=0.1)",
    "torch.optim.Adam(self.layer.parameters(), lr=self.hparams.lr)",
    "torch.optim.lr_scheduler.StepLR({a}, 1)",
    "torch.optim.lr_scheduler.LambdaLR({a}, lambda step: 0.9 ** step)",
    "torch.optim.lr_scheduler.ReduceLROnPlateau({a})",
    "{a}",
    "self.{a}",
    "{{'scheduler': {a}, 'interval': 'step', 'frequency': 1}}",
    "{{'scheduler': {a}, 'monitor': 'val_loss', 'name': f'lr-{{1}}'}}",
    "{{'optimizer': {a}, 'lr_scheduler': {b}, 'monitor': 'val_loss'}}",
    "{{'optimizer': {a}, 'lr_scheduler': {b}, 'frequency': self.every}}",
    "{{'optimizer': {a}, **{b}}}",
    "{{f'sched{{0}}': {a}}}",
    "{{k: {a} for k in 'ab'}}",
    "[{a}]",
    "[{a}, {b}]",
    "[*{a}]",
    "({a}, {b})",
    "([{a}], [{b}])",
    "[{a}], [{b}]",
    "self.make({a})",
    "{a} if self.flag else {b}",
    "{a}.param_groups[0]",
    "None",
    "0.1",
]

# a name rebound around its own value comes three times: the shape that once sent the reader into a loop
REBINDINGS = ["{t} = {{'scheduler': {t}, 'interval': 'step', 'frequency': 1}}", "{t} = [{t}]", "{t} = ({t}, {u})"]

STATEMENTS = [
    *REBINDINGS * 3,
    "{t} = {e}",
    "{t} = {u}",
    "{t}: object = {e}",
    "{t} += {e}",
    "{t}, {u} = {e}, {f}",
    "{t} = {u} = {e}",
    "{t}['interval'] = 'step'",
    "{t}['lr_scheduler'] = {e}",
    "{t}.append({e})",
    "{t}.extend([{e}, {f}])",
    "{t} += [{e}]",
    "{t}.update({e})",
    "{t}[0].append({e})",
    "{t} = []",
    "{t}, {u} = [], []",
    "del {t}",
    "self.{t} = {e}",
    "def helper():\n    return {e}",
    "print({e})",
]

# statements with a body (the reader gives up on the shape after one: the script is then general)
COMPOUND = [
    "if self.flag:\n    {t} = {e}",
    "if self.flag:\n    return {e}",
    # tests the spec decides (lr is an init argument, flag a constant set in __init__): the branch taken is read
    "if self.hparams.lr > 0.05 and not self.flag:\n    {t} = {e}\nelif self.hparams['lr'] in (0.1, 1):\n    return {e}",
    "name = 'sgd' if self.flag else 'adam'\nif name.upper() == 'SGD':\n    {t} = {e}\nelse:\n    raise ValueError(name)",
    "for i in range(2):\n    {t} = {e}",
    "with torch.no_grad():\n    {t} = {e}",
    "try:\n    {t} = {e}\nexcept Exception:\n    pass",
]

RETURNS = ["[opt], [sched]", "{'optimizer': opt, 'lr_scheduler': sched}", "opt", "([opt], [sched])"]

HOOK_LINES = [
    "self.log('val_loss', loss)",
    "self.log_dict({{'a': loss, 'b': loss}}, prog_bar=True)",
    "trainer = self.trainer",
    "n = self.trainer.{attr}",
    "t = self.trainer\n        n = t.{attr}",
    "opt = self.optimizers()",
    "sch = self.lr_schedulers()",
    "self.{attr} = batch_idx",
    "loss = loss * self.current_epoch",
    "getattr(self.trainer, '{attr}')",
]

ATTRIBUTES = ["model", "is_last_batch", "global_step", "current_epoch", "strategy", "max_epochs", "lr", "opt"]


@st.composite
def expressions(draw, depth: int = 0) -> str:
    template = draw(st.sampled_from(EXPRESSIONS))
    operand = st.sampled_from(NAMES) if depth >= 2 else st.one_of(st.sampled_from(NAMES), expressions(depth + 1))
    return template.format(a=draw(operand), b=draw(operand))


@st.composite
def statements(draw, templates: list[str] = STATEMENTS) -> str:
    template = draw(st.sampled_from(templates))
    return template.format(
        t=draw(st.sampled_from(NAMES)), u=draw(st.sampled_from(NAMES)), e=draw(expressions()), f=draw(expressions())
    )


@st.composite
def modules(draw) -> str:
    # most modules build an optimizer and a scheduler first, as public ones do
    prelude = ["opt = torch.optim.SGD(self.parameters(), lr=0.1)", "sched = torch.optim.lr_scheduler.StepLR(opt, 1)"]
    body = prelude[: draw(st.integers(0, 2))] + draw(st.lists(statements(), max_size=5))
    if draw(st.integers(0, 3)) == 0:
        body.insert(draw(st.integers(0, len(body))), draw(statements(COMPOUND)))
    returned = draw(st.one_of(st.sampled_from(RETURNS), expressions()))
    optimizers = "\n".join([*body, f"return {returned}"])
    hook = [draw(st.sampled_from(HOOK_LINES)).format(attr=draw(st.sampled_from(ATTRIBUTES))) for _ in range(2)]
    return module_source(optimizers, hook)


def module_source(optimizers: str, hook: list[str]) -> str:
    """A LightningModule with `optimizers` as configure_optimizers' body, and a line of `hook` in its training
    and validation steps each."""
    return f"""
import torch
import pytorch_lightning as pl
from torch.utils.data import DataLoader, TensorDataset


class Drawn(pl.LightningModule):
    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(2, 1)
        self.flag = True
        self.every = 1

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=4)

    def val_dataloader(self):
        return self.train_dataloader()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        {hook[0]}
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        {hook[1]}

    def configure_optimizers(self):
{textwrap.indent(optimizers, " " * 8)}
"""


# the rebinding Hugging Face-style modules use, which once sent the reader into endless recursion
REBOUND_SCHEDULER = """\
optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.9 ** step)
scheduler = {"scheduler": scheduler, "interval": "step", "frequency": 1}
return [optimizer], [scheduler]"""


def parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(modules())
@example(module_source(REBOUND_SCHEDULER, ["pass", "self.log('val_loss', loss)"]))
def test_any_parsed_source_renders_or_is_refused_with_a_place(source: str) -> None:
    if not parses(source):
        return
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "drawn").mkdir()
        (root / "drawn" / "__init__.py").write_text("")
        (root / "drawn" / "model.py").write_text(source)
        spec = {
            "seed_everything": 1,
            "model": {"class_path": "drawn.model.Drawn"},
            "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False},
        }
        try:
            render(spec, root)
        except LoopgenError as error:  # a refusal: each problem names where
            assert error.problems and all(problem.where for problem in error.problems), error
