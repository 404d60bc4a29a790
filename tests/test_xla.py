"""accelerator: tpu (Lightning 2.6.6's SingleDeviceXLAStrategy and XLAStrategy with torch_xla) needs TPUs and
torch_xla, neither of which this machine has: the rendered script runs against a recording stand-in of torch_xla
(tests/standins/torch_xla: the "XLA device" is the CPU, xmp.spawn runs the function here as ordinal 0), which
checks the calls, their order and their arguments, and, on one device, the training against the CPU script of
the same spec. It has not run on real TPUs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from tests.helpers import ROOT, env_with_root, render
from tests.test_standins import BASE

TPU = {"accelerator": "tpu", "enable_model_summary": False}


def spec_of(model="tests.standins.models.Probe", **flags) -> dict:
    return {**BASE, "model": model, "trainer": {**BASE["trainer"], **TPU, **flags}}


def run_xla(tmp_path, monkeypatch, world_size, model="tests.standins.models.Probe", args=(), **flags):
    monkeypatch.chdir(ROOT)
    script = tmp_path / "train.py"
    script.write_text(render(spec_of(model, **flags), tmp_path))
    out, weights = tmp_path / "calls.json", tmp_path / "weights.pt"
    command = [sys.executable, "-m", "tests.standins.fake_xla", str(script), str(out), str(weights), str(world_size)]
    result = subprocess.run(
        [*command, "--", *args],
        cwd=ROOT,
        env=env_with_root(ROOT / "tests" / "standins"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [tuple(c) for c in json.loads(out.read_text())], torch.load(weights), script.read_text()


def steps_are_xla_steps(calls: list[tuple]) -> None:
    """Every optimizer.step comes right after xm.reduce_gradients and right before xm.mark_step."""
    steps = [i for i, c in enumerate(calls) if c == ("optimizer.step",)]
    assert steps
    for i in steps:
        assert calls[i - 1] == ("xm.reduce_gradients", "SGD") and calls[i + 1] == ("xm.mark_step",)
    assert calls.count(("xm.mark_step",)) == len(steps)


def test_several_devices_spawn_and_feed_the_device(tmp_path, monkeypatch):
    calls, _, text = run_xla(tmp_path, monkeypatch, 2, devices=2)
    # _XLALauncher: xmp.spawn without nprocs (PJRT starts one process per device); the ranks from the runtime,
    # the model on the XLA device before configure_optimizers
    assert calls[:6] == [
        ("xmp.spawn", None),
        ("xr.global_ordinal",),
        ("xr.world_size",),
        ("xm.xla_device",),
        ("module.to", "cpu"),
        ("configure_optimizers",),
    ]
    # the sanity check's and the training's loaders are MpDeviceLoaders over DistributedSamplers
    assert [c for c in calls if c[0] == "MpDeviceLoader"] == [("MpDeviceLoader", "cpu", "DistributedSampler")] * 2
    first = calls.index(("training_step",))
    assert calls[first : first + 5] == [
        ("training_step",),
        ("optimizer.zero_grad",),
        ("xm.reduce_gradients", "SGD"),
        ("optimizer.step",),
        ("xm.mark_step",),
    ]
    steps_are_xla_steps(calls)
    # ordinal 0 of 2 reads half of the 8 samples: one batch of 4
    assert calls.count(("training_step",)) == 1
    # every process waits for the others before exiting (Lightning's _rank_teardown)
    assert calls[-1] == ("xm.rendezvous", "end-process")
    assert "xm.optimizer_step" not in text and "PJRT_DEVICE=TPU python train.py" in text


def test_test_and_predict_on_several_devices(tmp_path, monkeypatch):
    """XLAStrategy's evaluation: each loader re-created with this process's share (test: a DistributedSampler,
    padded; predict: unrepeated) and fed through an MpDeviceLoader; torch.no_grad (never inference mode on
    XLA); sync_dist through the mesh reduce; ordinal 0 prints the table; every process waits at the end."""
    model = "tests.standins.models.ProbeEvaluates"
    calls, _, text = run_xla(tmp_path, monkeypatch, 2, model=model, args=["test"], devices=2)
    assert [c for c in calls if c[0] == "MpDeviceLoader"] == [("MpDeviceLoader", "cpu", "DistributedSampler")]
    # ordinal 0 of 2: 4 of the 7 samples (padded to 8), in batches of 2
    assert [c for c in calls if c[0] == "test_step"] == [("test_step", 2, False, False)] * 2
    assert [c[1] for c in calls if c[0] == "xm.mesh_reduce"] == ["reduce", "reduce"]  # the loss and its weight
    assert calls[-1] == ("xm.rendezvous", "end-process")
    assert not [c for c in calls if c[0] in ("training_step", "configure_optimizers", "optimizer.step")]
    assert "inference_mode" not in text
    calls, _, _ = run_xla(tmp_path, monkeypatch, 2, model=model, args=["predict"], devices=2)
    assert [c for c in calls if c[0] == "MpDeviceLoader"] == [("MpDeviceLoader", "cpu", "UnrepeatedShards")]
    assert [c for c in calls if c[0] == "predict_step"] == [("predict_step", 2, False, False)] * 2


def test_lightning_1_9_5_evaluation_on_several_devices(tmp_path, monkeypatch):
    """A module with Lightning 1.9.5's test_epoch_end: the runs follow 1.9.5 (its TPUSpawnStrategy's
    DistributedSamplerWrapper over the loader's own sampler, the outputs to test_epoch_end, every submodule in
    train mode after the run) with the XLA engine's processes, loaders and no_grad."""
    model = "tests.standins.models.ProbeEvaluates195"
    calls, _, text = run_xla(tmp_path, monkeypatch, 2, model=model, args=["test"], devices=2)
    assert [c for c in calls if c[0] == "MpDeviceLoader"] == [("MpDeviceLoader", "cpu", "SamplerShards")]
    # ordinal 0 of 2: 4 of the 7 samples (padded to 8), one batch of 4
    assert [c for c in calls if c[0].startswith(("test_", "on_test_"))] == [
        ("test_step", 4, False, False),
        ("on_test_batch_end", [], 4, 0),
        ("test_epoch_end", [[]], False),
        ("on_test_end", False),
    ]
    assert "Lightning 1.9.5's on_test_model_train" in text
    calls, _, _ = run_xla(tmp_path, monkeypatch, 2, model=model, devices=2)  # fit: the train loader wrapped too
    assert [c[2] for c in calls if c[0] == "MpDeviceLoader"] == ["SamplerShards", "SamplerShards"]
    calls, _, _ = run_xla(tmp_path, monkeypatch, 2, model=model, args=["predict"], devices=2)
    assert [c for c in calls if c[0] == "MpDeviceLoader"] == [("MpDeviceLoader", "cpu", "UnrepeatedShards")]
    assert [c for c in calls if c[0] == "predict_step"] == [("predict_step", 4, False, False)]


def test_test_on_one_device(tmp_path, monkeypatch):
    """SingleDeviceXLAStrategy: the loader as it is, the batches moved to the device, torch.no_grad."""
    calls, _, text = run_xla(tmp_path, monkeypatch, 1, model="tests.standins.models.ProbeEvaluates", args=["test"])
    assert "MpDeviceLoader" not in text and not [c for c in calls if c[0] in ("xmp.spawn", "MpDeviceLoader")]
    assert [c for c in calls if c[0] == "test_step"] == [("test_step", 2, False, False)] * 3 + [
        ("test_step", 1, False, False)
    ]


def test_the_script_checks_the_number_of_processes(tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="xmp.spawn started 4 processes"):
        run_xla(tmp_path, monkeypatch, 4, devices=2)


def test_sync_dist_reduces_with_mesh_reduce(tmp_path, monkeypatch):
    calls, _, text = run_xla(tmp_path, monkeypatch, 2, model="tests.standins.models.ProbeSyncLog", devices=2)
    assert [c[1] for c in calls if c[0] == "xm.mesh_reduce"] and all(
        c[1] == "reduce" for c in calls if c[0] == "xm.mesh_reduce"
    )
    assert 'xm.mesh_reduce("reduce", value, sum)' in text


def test_one_device_trains_as_the_cpu_script(tmp_path, monkeypatch):
    flags = {"max_epochs": 3, "accumulate_grad_batches": 2, "gradient_clip_val": 0.05}
    calls, ours, text = run_xla(tmp_path, monkeypatch, 1, devices=1, **flags)
    # SingleDeviceXLAStrategy: one process, no spawn, the loaders as they are
    assert "xmp" not in text and "MpDeviceLoader" not in text and "torch_xla.runtime" not in text
    assert not [c for c in calls if c[0] in ("xmp.spawn", "MpDeviceLoader", "xm.rendezvous")]
    steps_are_xla_steps(calls)
    assert calls.count(("optimizer.step",)) == 3  # one per epoch: 2 batches, accumulated over 2
    cpu_dir = tmp_path / "cpu"
    cpu_dir.mkdir()
    cpu_script = cpu_dir / "train.py"
    spec = spec_of(**flags, devices=1)
    spec["trainer"]["accelerator"] = "cpu"
    cpu_script.write_text(render(spec, cpu_dir))
    code = (
        "import runpy, sys, torch\n"
        f"model = runpy.run_path({str(cpu_script)!r})['main']()\n"
        f"torch.save(model.state_dict(), {str(cpu_dir / 'w.pt')!r})\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env_with_root(), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    reference = torch.load(cpu_dir / "w.pt")
    assert reference.keys() == ours.keys()
    assert all(torch.equal(reference[k], ours[k]) for k in reference)
    assert not all(torch.equal(reference[k], torch.zeros_like(reference[k])) for k in reference)


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            {"precision": "16-mixed"},
            (
                r"trainer.precision.*16-mixed with accelerator tpu is not supported by loopgen \(the float16"
                r" GradScaler is CUDA's; .*\); use precision 32"
            ),
        ),
        (
            {"precision": "16-mixed", "amp_backend": "apex"},
            r"apex with accelerator tpu is not supported by loopgen \(apex is CUDA's",
        ),
        ({"precision": "bf16-mixed"}, r"trainer.precision.*bf16-mixed .*with accelerator tpu"),
        (
            {"precision": "bf16-true"},
            r"trainer.precision.*bf16-true with accelerator tpu is not supported by loopgen \(XLAPrecision sets",
        ),
        ({"num_nodes": 2}, r"trainer.num_nodes.*with accelerator tpu"),
        ({"strategy": "ddp", "devices": 2}, r"trainer.strategy.*strategy ddp .*with accelerator tpu"),
        ({"profiler": "simple"}, r"trainer.profiler.*a profiler with accelerator tpu"),
        (
            {"devices": 2, "logger": {"class_path": "MLFlowLogger"}},
            r"trainer.logger.*a mlflow logger on several devices .*with accelerator tpu",
        ),
        (
            {
                "devices": 2,
                "enable_checkpointing": True,
                "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"train_time_interval": 60}}],
            },
            r"train_time_interval=...\) on several devices with accelerator tpu",
        ),
        ({"truncated_bptt_steps": 2}, r"truncated_bptt_steps"),
    ],
)
def test_what_tpu_cannot_serve_is_refused_at_render_time(tmp_path, monkeypatch, flags, message):
    from loopgen.errors import LoopgenError

    monkeypatch.chdir(ROOT)
    with pytest.raises(LoopgenError, match=message):
        render(spec_of(**flags), tmp_path)


def test_nothing_of_xla_in_a_cpu_script(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    spec = spec_of()
    spec["trainer"]["accelerator"] = "cpu"
    text = render(spec, tmp_path)
    assert "xla" not in text.lower() and "xm." not in text
