"""strategy: dp (Lightning 1.9.5's DataParallelStrategy) needs several GPUs, which this machine does not have: the
rendered script runs against recording stand-ins (tests/standins/fake_dp.py: a fake CUDA device and a
DataParallel that runs its two "GPUs" one after the other on the CPU), which check the calls, their order and
the training they make. It has not run on real GPUs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from tests.helpers import ROOT, env_with_root, render
from tests.test_standins import BASE

DP = {"accelerator": "cuda", "strategy": "dp", "devices": 2, "enable_model_summary": False}


def run_dp(
    tmp_path, monkeypatch, model="tests.standins.models.Probe", arguments=(), loop=None, **flags
) -> tuple[list[tuple], object]:
    """The DP script of `model` run with `arguments` on the stand-ins: its calls, and fit's final weights (or what
    a subcommand returned)."""
    monkeypatch.chdir(ROOT)
    spec = {**BASE, "model": model, "trainer": {**BASE["trainer"], **DP, **flags}, **({"loop": loop} if loop else {})}
    script = tmp_path / "train.py"
    script.write_text(render(spec, tmp_path))
    out, returned = tmp_path / "calls.json", tmp_path / "returned.pt"
    result = subprocess.run(
        [sys.executable, "-m", "tests.standins.fake_dp", str(script), str(out), str(returned), "--", *arguments],
        cwd=ROOT,
        env=env_with_root(ROOT / "tests" / "standins"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [tuple(c) for c in json.loads(out.read_text())], torch.load(returned, weights_only=False)


def test_dp_order_of_calls(tmp_path, monkeypatch):
    calls, _ = run_dp(tmp_path, monkeypatch)
    # 1.9.5: the model goes to the first GPU, is wrapped in DataParallel over both, then the optimizers are made
    assert calls[:3] == [("module.to", "cuda"), ("DataParallel", "DataParallelStep", [0, 1]), ("configure_optimizers",)]
    # DataParallel scatters the batches itself: nothing moves them to the device first
    assert not [c for c in calls if c[0] == "tensor.to"]
    first = calls.index(("DataParallel.forward", "training_step", 2))
    assert calls[first : first + 6] == [
        ("DataParallel.forward", "training_step", 2),
        ("training_step",),
        ("training_step",),
        ("optimizer.zero_grad",),
        ("backward",),
        ("optimizer.step",),
    ]
    assert ("DataParallel.forward", "validation_step", 2) in calls


HAND_WRITTEN_DP_LOOP = """
import sys, torch
from torch import nn
from tests.standins.models import Probe
torch.manual_seed(0)
model = Probe()
optimizer = model.configure_optimizers()
for batch_idx, (x, y) in enumerate(model.train_dataloader()):
    # two GPUs, a half of the batch each; Lightning 1.9.5 averages their losses
    losses = [nn.functional.mse_loss(model.layer(xs), ys) for xs, ys in zip(x.chunk(2), y.chunk(2))]
    loss = torch.stack(losses).float().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model.state_dict(), sys.argv[1])
"""


def test_dp_trains_like_a_loop_that_averages_the_gpus_losses(tmp_path, monkeypatch):
    _, ours = run_dp(tmp_path, monkeypatch, num_sanity_val_steps=0)
    reference = subprocess.run(
        [sys.executable, "-c", HAND_WRITTEN_DP_LOOP, str(tmp_path / "ref.pt")],
        cwd=ROOT,
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reference.returncode == 0, reference.stderr[-2000:]
    ref = torch.load(tmp_path / "ref.pt")
    assert all(torch.equal(ref[k], ours[k]) for k in ref)


def test_a_training_step_end_of_the_models_gets_the_gathered_outputs(tmp_path, monkeypatch):
    calls, _ = run_dp(tmp_path, monkeypatch, model="tests.standins.models.ProbeStepEnd")
    assert ("training_step_end", [2]) in calls
    text = (tmp_path / "train.py").read_text()
    assert "mean_over_gpus" not in text and "model.training_step_end(output)" in text


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            {"accelerator": "cpu"},
            (
                r"trainer.accelerator.*accelerator cpu with strategy dp is not supported by loopgen"
                r" \(DataParallel runs its replicas on GPUs\); set `accelerator: cuda`"
            ),
        ),
        ({"precision": "16-mixed"}, r"trainer.precision.*precision 16-mixed with strategy dp"),
        (
            {"precision": "16-true"},
            r"trainer.precision.*16-true with strategy dp is not supported by loopgen \(Lightning 1.9.5 has no true half",
        ),
        ({"num_nodes": 2}, r"trainer.num_nodes.*with strategy dp"),
    ],
)
def test_what_dp_cannot_serve_is_refused_at_render_time(tmp_path, monkeypatch, flags, message):
    from loopgen.errors import LoopgenError

    monkeypatch.chdir(ROOT)
    with pytest.raises(LoopgenError, match=message):
        render({**BASE, "trainer": {**BASE["trainer"], **DP, **flags}}, tmp_path)


def test_self_log_is_refused_under_dp(tmp_path, monkeypatch):
    from loopgen.errors import LoopgenError

    monkeypatch.chdir(ROOT)
    spec = {**BASE, "model": "examples.lightning_models.LitClassifier", "trainer": {**BASE["trainer"], **DP}}
    with pytest.raises(LoopgenError, match=r"self.log in the module with strategy dp"):
        render(spec, tmp_path)


def test_the_header_says_how_a_dp_script_runs(tmp_path, monkeypatch):
    """One process run with python (no torchrun): the header names DataParallel, not DDP's launcher."""
    monkeypatch.chdir(ROOT)
    spec = {**BASE, "model": "tests.standins.models.Probe", "trainer": {**BASE["trainer"], **DP}}
    header = render(spec, tmp_path).split('"""')[1]
    assert "strategy=dp over 2 GPUs" in header and "torch.nn.DataParallel" in header
    assert "Run: `python train.py`" in header
    assert "torchrun" not in header and "strategy=ddp" not in header


# a module without a step of its own to evaluate has the subcommands listed
PREDICTS = {"subcommands": ["fit", "predict"]}


def run_dp_command(tmp_path, monkeypatch, model: str, *arguments: str, loop=PREDICTS) -> tuple[list[tuple], object]:
    """run_dp with a subcommand: the calls but the batches' moves, and what it returned."""
    calls, returned = run_dp(tmp_path, monkeypatch, model, arguments, loop)
    return [call for call in calls if call[0] != "tensor.to"], returned


def test_dp_tests_through_dataparallel_and_its_hooks_get_the_gathered_outputs(tmp_path, monkeypatch):
    """Lightning 1.9.5's DataParallelStrategy runs test_step through DataParallel on each GPU's slice of the
    batch, under inference mode; its test_step_end leaves the gathered outputs (a loss per GPU) as they are, and
    on_test_batch_end and test_epoch_end get them; the hooks get the whole batch, never moved (DataParallel
    scatters it)."""
    model = "tests.standins.models.ProbeEvaluates195"
    calls, results = run_dp_command(tmp_path, monkeypatch, model, "test", loop={"subcommands": ["fit", "test"]})
    assert calls == [
        ("module.to", "cuda"),
        ("DataParallel", "DataParallelStep", [0, 1]),
        ("DataParallel.forward", "test_step", 2),
        ("test_step", 2, False, True),
        ("test_step", 2, False, True),
        ("on_test_batch_end", [2], 4, 0),
        ("DataParallel.forward", "test_step", 2),
        ("test_step", 2, False, True),
        ("test_step", 1, False, True),
        ("on_test_batch_end", [2], 3, 1),
        ("test_epoch_end", [[2], [2]], False),
        ("on_test_end", False),
    ]
    assert results == [{}]  # nothing logged (self.log is refused under dp)


@pytest.mark.parametrize("model", ["ProbeEvaluates195", "ProbePredicts"])
def test_dp_predictions_are_the_gathered_slices_of_each_batch(tmp_path, monkeypatch, model):
    """predict through DataParallel: each batch's predictions gathered from the GPUs' slices, on the CPU, as one
    device predicts them; without a predict_step, the module itself on each slice (Lightning's default)."""
    calls, predictions = run_dp_command(tmp_path, monkeypatch, f"tests.standins.models.{model}", "predict")
    step = "predict_step" if model == "ProbeEvaluates195" else "__call__"
    assert [c for c in calls if c[0] == "DataParallel.forward"] == [("DataParallel.forward", step, 2)] * 2
    sizes = [c[1] for c in calls if c[0] in ("predict_step", "forward")]
    assert sizes == [2, 2, 2, 1]
    one_device = tmp_path / "one_device"
    one_device.mkdir()
    flags = {"accelerator": "cpu"}
    spec = {
        **BASE,
        "model": f"tests.standins.models.{model}",
        "trainer": {**BASE["trainer"], **flags},
        "loop": PREDICTS,
    }
    script = one_device / "train.py"
    script.write_text(render(spec, one_device))
    out = one_device / "predictions.pt"
    code = f"import runpy, sys, torch; sys.argv = [{str(script)!r}, 'predict']; torch.save(runpy.run_path(sys.argv[0])['main'](), {str(out)!r})"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env_with_root(), capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    expected = torch.load(out, weights_only=False)
    assert [p.shape for p in predictions] == [torch.Size([4, 1]), torch.Size([3, 1])]
    for ours, theirs in zip(predictions, expected, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-7)


def test_the_trainer_gives_dp_ranks_as_lightnings_data_parallel_strategy(tmp_path, monkeypatch):
    """Lightning 1.9.5's DataParallelStrategy: one process, rank 0 of 1 on node 0, over the two GPUs (a trainer
    read through getattr gets every attribute)."""
    calls, _ = run_dp(tmp_path, monkeypatch, callbacks=["tests.standins.models.RankReader"])
    assert ("ranks", 1, 0, 0, 0, True, 2) in calls


def test_the_trainer_gives_dp_devices_as_lightnings_data_parallel_strategy(tmp_path, monkeypatch):
    """trainer.device_ids: both GPUs; distributed_sampler_kwargs: Lightning's ParallelStrategy's, one replica per
    device, rank 0."""
    calls, _ = run_dp(tmp_path, monkeypatch, callbacks=["tests.standins.models.DeviceReader"])
    assert ("devices", [0, 1], {"num_replicas": 2, "rank": 0}, None) in calls
