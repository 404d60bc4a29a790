"""The renderer's names: the import block from the names the code reads, and the object variables renamed where
the script binds their name otherwise (loopgen/render/names.py)."""

from __future__ import annotations

import textwrap

import pytest

from loopgen.errors import LoopgenError
from loopgen.render.names import MARKER, free_names, import_block


def script(body: str) -> str:
    return f'"""doc"""\n\n{MARKER}\nfrom pkg.models import Net\n\n' + textwrap.dedent(body)


def test_the_names_read_and_not_defined_at_module_level_are_free() -> None:
    text = script("""\
        LIMIT = 3


        def main(os):
            import json
            data = json.dumps(dist.get_rank())
            with nullcontext():
                return [math.floor(x) for x in range(LIMIT)], Net, os, data


        class Holder:
            field = dataclass
        """)
    # a parameter, a function's own import, module constants and builtins are not free; a class body's reads are
    assert free_names(text) == {"dist", "nullcontext", "math", "dataclass"}


def test_the_block_imports_each_name_once_in_the_scripts_order() -> None:
    text = script("x = (torch, sys, os, dataclass, asdict, tqdm, DistributedDataParallel, DataLoader, dist)\n")
    header = import_block(text).split('"""doc"""\n\n', 1)[1].split("from pkg.models", 1)[0]
    assert header == (
        "import os\nimport sys\nfrom dataclasses import asdict, dataclass\n\n"
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel\n"
        "from torch.utils.data import DataLoader\nfrom tqdm import tqdm\n\n"
    )


def test_a_name_the_code_reads_and_nothing_provides_is_an_error() -> None:
    with pytest.raises(LoopgenError, match="'undefined_helper'"):
        import_block(script("def main():\n    return undefined_helper()\n"))


MODEL = """
import torch
import pytorch_lightning as pl


class Net(pl.LightningModule):
    def __init__(self, checkpoint=None, head=None):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=2)
"""


def test_an_object_variable_the_script_binds_otherwise_is_renamed(tmp_path) -> None:
    """The argument `checkpoint` of the model would be built as `model_checkpoint`, which is ModelCheckpoint's
    variable too: it gets `model_checkpoint_`; `model_head` is free and kept."""
    import yaml

    from loopgen.pipeline import render_spec

    (tmp_path / "namespkg").mkdir()
    (tmp_path / "namespkg" / "__init__.py").write_text("")
    (tmp_path / "namespkg" / "models.py").write_text(MODEL)
    identity = {"class_path": "torch.nn.Identity"}
    spec = {
        "seed_everything": 1,
        "model": {"class_path": "namespkg.models.Net", "init_args": {"checkpoint": identity, "head": identity}},
        "trainer": {"max_epochs": 1, "callbacks": [{"class_path": "ModelCheckpoint"}]},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    text, _ = render_spec(path, tmp_path / "train.py")
    assert "    model_checkpoint_ = torch.nn.Identity()\n    model_head = torch.nn.Identity()\n" in text
    assert "    model = Net(checkpoint=model_checkpoint_, head=model_head)\n" in text
    assert "    model_checkpoint = ModelCheckpoint(" in text


def test_a_renamed_variable_skips_the_names_taken_too() -> None:
    from types import SimpleNamespace

    from loopgen.plan.objects import Built
    from loopgen.render.names import object_names

    objects = {"model": (Built("model_a", None), Built("model_b", None))}
    plan = SimpleNamespace(build=SimpleNamespace(objects=objects))
    text = "def main():\n    model_a = 1\n    model_b = 2\n    return model_a, model_b\n"
    assert object_names(text, plan) == {}
    text += "\n\ndef model_a_():\n    model_a = 3\n"
    assert object_names(text, plan) == {"model_a": "model_a__"}
