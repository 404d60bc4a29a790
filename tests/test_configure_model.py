"""configure_model (and configure_sharded_model, its older name): the script calls it where Lightning 2.x does,
once the setup hooks ran and before the precision's conversion, the move to the device and configure_optimizers,
inside the device's context and, in a true precision, its dtype as the default. Training is compared with Lightning
2.6.6's in tests/parity/test_parity.py (configure_model_*: layers, bf16-true, activation checkpointing, a compiled
network) and under DDP in tests/test_ddp.py (configure_model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import render

MODEL = "tests.parity.models.LateBuilt"


def spec(**trainer) -> dict:
    return {"seed_everything": 1, "model": MODEL, "trainer": {"max_epochs": 1, "logger": False, **trainer}}


def test_the_module_builds_its_layers_after_setup_and_before_the_optimizers(tmp_path: Path) -> None:
    text = render(spec(precision="bf16-true", accelerator="cpu"), tmp_path)
    build = text[text.index("def build(") :]
    build = build[: build.index("\ndef ")]
    order = [
        "model._trainer = trainer",
        'with torch.device("cpu"), default_dtype(torch.bfloat16):\n',
        "model.configure_model()",
        "model.to(dtype=torch.bfloat16)",
    ]
    found = [build.find(line) for line in order]
    assert -1 not in found and found == sorted(found), dict(zip(order, found, strict=True))
    main = text[text.index("def main(") :]
    assert main.index("= build(") < main.index("model.configure_optimizers()")


def test_without_configure_model_the_script_has_no_such_call(tmp_path: Path) -> None:
    case = spec()
    case["model"] = "tests.parity.models.MLP"
    assert "configure_model" not in render(case, tmp_path)


@pytest.mark.parametrize(
    ("trainer", "message"),
    [
        ({"track_grad_norm": 2}, "LateBuilt.configure_model in a spec that follows Lightning 1.9.5 is not supported"),
        (
            {"strategy": "dp", "devices": 2, "accelerator": "cuda"},
            "LateBuilt.configure_model with the dp engine is not supported",
        ),
        ({"strategy": "horovod", "devices": 2}, "LateBuilt.configure_model with the horovod engine is not supported"),
    ],
    ids=["1.9.5", "dp", "horovod"],
)
def test_what_configure_model_cannot_serve_is_refused(tmp_path: Path, trainer: dict, message: str) -> None:
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(spec(**trainer), tmp_path)
