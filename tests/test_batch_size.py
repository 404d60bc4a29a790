"""The batch size a script weighs an epoch mean by, when `self.log` is given none, is the one Lightning infers
(`lightning.pytorch.utilities.data.extract_batch_size`): the length of the first tensor found through mappings
(any Mapping, not only a dict), other iterables, and dataclasses' fields."""

from __future__ import annotations

import runpy
from collections import UserDict, namedtuple
from dataclasses import dataclass

import pytest

from tests.helpers import ROOT

torch = pytest.importorskip("torch")
data = pytest.importorskip("pytorch_lightning.utilities.data")


@dataclass
class Graph:
    names: list[str]
    x: torch.Tensor
    edge_index: torch.Tensor


Pair = namedtuple("Pair", ["inputs", "target"])

BATCHES = {
    "tensor": torch.zeros(5, 2),
    "scalar": torch.tensor(3.0),
    "tuple": (torch.zeros(4, 2), torch.zeros(4)),
    "dict": {"input_ids": torch.zeros(6, 3), "labels": torch.zeros(6)},
    "user_dict": UserDict({"input_ids": torch.zeros(7, 3), "labels": torch.zeros(7)}),
    "dataclass": Graph(["a", "b"], torch.zeros(9, 2), torch.zeros(2, 12)),
    "namedtuple": Pair(torch.zeros(3, 1), torch.zeros(3)),
    "strings_first": (["a", "b"], torch.zeros(8, 1)),
    "nested": [{"x": [torch.zeros(2, 2)]}, torch.zeros(5)],
}


@pytest.fixture(scope="module")
def batch_size_of():
    namespace = runpy.run_path(str(ROOT / "generated_examples" / "checkpoint_early_stop.py"), run_name="rendered")
    return namespace["batch_size_of"]


@pytest.mark.parametrize("name", BATCHES)
def test_the_batch_size_is_lightnings(batch_size_of, name: str) -> None:
    batch = BATCHES[name]
    assert batch_size_of(batch) == data.extract_batch_size(batch)
