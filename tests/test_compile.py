"""loop.compile: the script compiles the module as Lightning 2.x fits a `torch.compile(model)` it is given (its
from_compiled: forward and the step methods each run under the compiled module's context). Training is compared
with Lightning's fitting torch.compile(model) in tests/parity/test_parity.py (compile_aot_eager, compile_inductor);
here, that the script's steps did run compiled, and what loop.compile refuses."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import env_with_root, render


def spec(compile_: object, model: str = "tests.parity.models.MLP", **trainer) -> dict:
    flags = {"max_epochs": 1, "logger": False, "enable_checkpointing": False, "accelerator": "cpu", **trainer}
    return {"seed_everything": 3, "model": model, "trainer": flags, "loop": {"compile": compile_}}


def test_the_steps_run_compiled(tmp_path: Path) -> None:
    text = render(spec({"backend": "aot_eager", "dynamic": False}), tmp_path)
    assert 'compile_module(model, backend="aot_eager", dynamic=False)' in text
    script = tmp_path / "train.py"
    script.write_text(text)
    code = textwrap.dedent(f"""
        import runpy
        from torch._dynamo.utils import counters
        model = runpy.run_path({str(script)!r})["main"]()
        wrapped = [n for n in ("forward", "training_step", "validation_step", "test_step", "predict_step")
                   if hasattr(getattr(model, n), "_torchdynamo_orig_callable")]
        print("wrapped", wrapped, "graphs", counters["stats"]["unique_graphs"] > 0)
        """)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env_with_root(), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "wrapped ['forward', 'training_step', 'validation_step', 'test_step', 'predict_step'] graphs True" in (
        result.stdout
    )


def test_without_loop_compile_nothing_is_compiled(tmp_path: Path) -> None:
    assert "torch.compile" not in render(spec(False), tmp_path)


@pytest.mark.parametrize(
    ("compile_", "model", "trainer", "message"),
    [
        ({"mode": "fastest"}, None, {}, "expected default, reduce-overhead, max-autotune"),
        ({"backends": "eager"}, None, {}, "loop.compile.backends (line 10): unknown argument of torch.compile"),
        ("yes", None, {}, "expected true, false or a mapping of torch.compile's arguments, got yes"),
        (True, None, {"track_grad_norm": 2}, "loop.compile in a spec that follows Lightning 1.9.5 is not supported"),
        (
            True,
            None,
            {"strategy": "dp", "devices": 2, "accelerator": "cuda"},
            "loop.compile with the dp engine is not supported",
        ),
        (True, "examples.models.MLP", {}, "examples.models.MLP, which is not a LightningModule is not supported"),
        (
            True,
            "tests.parity.models.LoggingModel",
            {},
            "loop.compile with tests.parity.models.LoggingModel.training_step calling self.log is not supported",
        ),
    ],
    ids=["mode", "unknown", "not_a_mapping", "1.9.5", "dp", "plain_module", "logging_step"],
)
def test_what_loop_compile_cannot_serve_is_refused(
    tmp_path: Path, compile_: object, model: str | None, trainer: dict, message: str
) -> None:
    case = spec(compile_, **trainer)
    if model:
        case["model"] = model
    if model and model.startswith("examples."):  # a plain module, with its data class
        case["data"] = "examples.data.ClassificationData"
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)
