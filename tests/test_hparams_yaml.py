"""hparams.yaml without PyYAML: the script's emitter, checked against PyYAML on generated data.

A script that writes hyperparameters carries its own small YAML writer (it depends on nothing but torch). Whatever
`save_hyperparameters` keeps (None, booleans, numbers, strings, lists, tuples, dicts of them) must load back
equal with PyYAML, and for the common case (plain names and numbers) the text must be what Lightning's
`yaml.dump` writes.
"""

from __future__ import annotations

import math
import runpy
import string

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import render, write_spec

MODEL = """
import pytorch_lightning as pl
import torch


class Saver(pl.LightningModule):
    def __init__(self, width: int = 3):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(2, width)

    def train_dataloader(self):
        return [torch.ones(4, 2)]

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""


@pytest.fixture(scope="module")
def to_yaml(tmp_path_factory):
    """The to_yaml function of a script whose model saves its hyperparameters to the (default) logger."""
    root = tmp_path_factory.mktemp("hparams")
    (root / "saver.py").write_text(MODEL, encoding="utf-8")
    spec = write_spec(root, {"model": {"class_path": "saver.Saver"}, "trainer": {"enable_progress_bar": False}})
    script = root / "train.py"
    script.write_text(render(spec), encoding="utf-8")
    import sys

    sys.path.insert(0, str(root))
    try:
        return runpy.run_path(str(script), run_name="hparams_yaml")["to_yaml"]
    finally:
        sys.path.remove(str(root))


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4)
    | st.lists(children, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


def same(a, b) -> bool:
    """Equality with nan equal to nan, and a tuple equal only to a tuple."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), values, max_size=6))
def test_anything_save_hyperparameters_keeps_loads_back_equal(to_yaml, hparams) -> None:
    text = to_yaml(hparams)
    assert same(yaml.load(text, Loader=yaml.FullLoader), hparams), text


names = st.text(string.ascii_lowercase + "_", min_size=1, max_size=12).filter(
    lambda s: s not in ("y", "n", "yes", "no", "on", "off", "true", "false", "null")
)
plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, width=32) | names,
    lambda children: st.lists(children, min_size=1, max_size=3)
    | st.dictionaries(names, children, min_size=1, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(names, plain, max_size=6))
def test_plain_hyperparameters_are_written_as_lightnings_yaml_dump_writes_them(to_yaml, hparams) -> None:
    assert to_yaml(hparams) == yaml.dump(hparams)


def test_the_examples_hparams_file_is_pyyamls(to_yaml) -> None:
    hparams = {"features": 16, "hidden": 64, "lr": 0.05, "sizes": [32, 16], "schedule": {"warmup": 2}, "name": None}
    assert to_yaml(hparams) == yaml.dump(hparams)
    assert to_yaml({}) == yaml.dump({})


def test_classes_and_functions_are_named_as_pyyaml_names_them(to_yaml) -> None:
    """save_hyperparameters keeps a class or function given to __init__ (darts' optimizer_cls): yaml.dump names
    it with a python/name tag, which Lightning's hparams.yaml holds."""
    import torch

    hparams = {
        "optimizer_cls": torch.optim.Adam,
        "activation": torch.tanh,
        "loss": math.sqrt,
        "layers": [torch.nn.ReLU],
    }
    assert to_yaml(hparams) == yaml.dump(hparams)
    assert yaml.unsafe_load(to_yaml(hparams)) == hparams
