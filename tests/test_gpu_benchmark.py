"""benchmarks/gpu.py cannot measure anything without CUDA; here it must at least say so, and render its specs."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.helpers import ROOT

torch = pytest.importorskip("torch")


def gpu_benchmark():
    """benchmarks/gpu.py of this checkout, loaded from its file (`benchmarks` need not be a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_benchmark", ROOT / "benchmarks" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the benchmark would run")
def test_without_cuda_it_says_so_and_exits_2():
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu.py")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "needs a CUDA GPU" in result.stderr and "nothing was measured" in result.stderr


def test_its_specs_render_on_cpu(tmp_path, monkeypatch):
    render_specs = gpu_benchmark().render_specs
    monkeypatch.chdir(ROOT)
    rendered = render_specs(tmp_path, devices=2, epochs=1, hidden=8)
    assert sorted(rendered) == [
        "cuda-16-mixed", "cuda-32", "cuda-bf16-mixed", "cuda-compiled", "ddp-2gpu", "fsdp1-2gpu", "fsdp2-2gpu"
    ]  # fmt: skip
    texts = {name: script.read_text() for name, (_, script) in rendered.items()}
    for text in texts.values():
        ast.parse(text)
    assert 'torch.device("cuda")' in texts["cuda-32"] and "autocast" not in texts["cuda-32"]
    assert "torch.float16" in texts["cuda-16-mixed"] and "GradScaler" in texts["cuda-16-mixed"]
    assert "torch.bfloat16" in texts["cuda-bf16-mixed"] and "GradScaler" not in texts["cuda-bf16-mixed"]
    assert "DistributedDataParallel" in texts["ddp-2gpu"] and '"nccl"' in texts["ddp-2gpu"]
    assert "FullyShardedDataParallel(model, **fsdp_options)" in texts["fsdp1-2gpu"] and '"nccl"' in texts["fsdp1-2gpu"]
    assert "ModuleWrapPolicy({torch.nn.Linear})" in texts["fsdp1-2gpu"]
    assert "init_device_mesh(" in texts["fsdp2-2gpu"] and "DATA_PARALLEL_SIZE = 2" in texts["fsdp2-2gpu"]
    assert "torch.compile(" in texts["cuda-compiled"]


def test_syncs_are_allowed_on_logging_steps_and_epoch_ends_only():
    benchmark = gpu_benchmark()
    LOG_EVERY_N_STEPS, unexpected_syncs = benchmark.LOG_EVERY_N_STEPS, benchmark.unexpected_syncs
    syncs = [{"after_step": s} for s in (LOG_EVERY_N_STEPS, 16, 3)]
    assert unexpected_syncs({"steps": 20, "syncs": syncs}) == [{"after_step": 3}]
    assert unexpected_syncs({"steps": 20, "syncs": [{"after_step": 8}]}, world_size=2) == []
