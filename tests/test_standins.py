"""What cannot run on this machine (CUDA, apex) runs against recording stand-ins: the rendered script must make
the right calls in the right order. tests/standins/fake_cuda.py makes torch believe CUDA is there."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT, env_with_root, render

PROBE_EVALUATES = "tests.standins.models.ProbeEvaluates"
BASE = {
    "seed_everything": 0,
    "model": "tests.standins.models.Probe",
    "trainer": {
        "max_epochs": 1,
        "num_sanity_val_steps": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
    },
}


def run_with_stand_ins(
    tmp_path, monkeypatch, trainer: dict, weights=None, arguments=(), model: str | None = None
) -> list[tuple]:
    """Render a spec with `trainer`'s flags (and `model`, else BASE's) and run it as if CUDA were there: the calls
    it made, in order."""
    monkeypatch.chdir(ROOT)
    spec = {**BASE, "model": model or BASE["model"], "trainer": {**BASE["trainer"], **trainer}}
    script = tmp_path / "train.py"
    script.write_text(render(spec, tmp_path))
    out = tmp_path / "calls.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.standins.fake_cuda",
            str(script),
            str(out),
            *([str(weights)] if weights else []),
            "--",
            *arguments,
        ],
        cwd=ROOT,
        env=env_with_root(ROOT / "tests" / "standins"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [tuple(call) for call in json.loads(out.read_text())]


def first_training_batch(calls: list[tuple]) -> list[tuple]:
    """The calls of the first training batch: from its moves to the device to the next batch's."""

    def batch_start(step: int) -> int:
        while calls[step - 1][0] in ("tensor.to", "autocast.enter"):
            step -= 1
        return step

    first = calls.index(("training_step",))
    return calls[batch_start(first) : batch_start(calls.index(("training_step",), first + 1))]


@pytest.mark.parametrize(
    ("precision", "scaler"), [("16-mixed", "GradScaler"), ("bf16-mixed", None), ("32", None)], ids=str
)
def test_the_trainer_holds_the_scaler_of_float16_amp_on_cuda(tmp_path, monkeypatch, precision, scaler):
    """trainer.scaler: Lightning's MixedPrecision's GradScaler, under float16 AMP only; one device, no sharding."""
    flags = {"accelerator": "cuda", "precision": precision, "callbacks": ["tests.standins.models.DeviceReader"]}
    calls = run_with_stand_ins(tmp_path, monkeypatch, flags)
    assert ("devices", [0], None, scaler) in calls


def test_cuda_16_mixed_order_of_calls(tmp_path, monkeypatch):
    calls = run_with_stand_ins(
        tmp_path, monkeypatch, {"accelerator": "cuda", "precision": "16-mixed", "gradient_clip_val": 1.0}
    )
    # the model moves before its optimizer is made; the scaler is created for CUDA
    assert calls.index(("module.to", "cuda")) < calls.index(("configure_optimizers",))
    assert ("GradScaler", "cuda", True) in calls
    # validation batches move and run under float16 autocast, without a cache
    sanity = calls.index(("validation_step",))
    assert calls[sanity - 1] == ("autocast.enter", "cuda", "torch.float16", False)
    assert calls[sanity - 3 : sanity - 1] == [("tensor.to", "cuda", True)] * 2
    batch = first_training_batch(calls)
    assert batch == [
        ("tensor.to", "cuda", True),
        ("tensor.to", "cuda", True),
        ("autocast.enter", "cuda", "torch.float16", False),
        ("training_step",),
        ("autocast.exit",),
        ("optimizer.zero_grad",),
        ("scaler.scale",),
        ("backward",),
        ("scaler.unscale_",),
        ("clip_grad_norm_", 1.0),
        ("scaler.step",),
        ("optimizer.step",),
        ("scaler.update",),
    ]


@pytest.mark.parametrize("lightning", ["2.x", "1.9.5"])
def test_cuda_16_mixed_evaluation_moves_the_batches_and_steps_under_autocast(tmp_path, monkeypatch, lightning):
    """test and predict on CUDA with float16 AMP: each batch moved, each step under autocast (Lightning's
    test_step_context / predict_step_context; 1.9.5's autocast keeps its cache), in inference mode; no scaler
    call (nothing is optimized)."""
    flags = {"accelerator": "cuda", "precision": "16-mixed", **({"track_grad_norm": 2} if lightning == "1.9.5" else {})}
    cache = lightning == "1.9.5"
    for command, step in (("test", "test_step"), ("predict", "predict_step")):
        calls = run_with_stand_ins(tmp_path, monkeypatch, flags, arguments=[command], model=PROBE_EVALUATES)
        first = next(i for i, call in enumerate(calls) if call[0] == step)
        assert calls[first - 3 : first + 2] == [
            ("tensor.to", "cuda", True),
            ("tensor.to", "cuda", True),
            ("autocast.enter", "cuda", "torch.float16", cache),
            (step, 2, False, True),
            ("autocast.exit",),
        ]
        assert len([call for call in calls if call[0] == step]) == 4  # 7 samples in batches of 2
        assert not [call for call in calls if call[0].startswith(("scaler.", "optimizer.", "backward"))]


def test_cuda_predictions_come_back_to_the_cpu_when_the_module_moves_its_batches(tmp_path, monkeypatch):
    """A module with transfer_batch_to_device moves its batches itself; the predictions still go to the CPU."""
    model = "tests.standins.models.ProbeTransfers"
    calls = run_with_stand_ins(tmp_path, monkeypatch, {"accelerator": "cuda"}, arguments=["predict"], model=model)
    assert [call for call in calls if call[0] == "transfer_batch_to_device"] == [
        ("transfer_batch_to_device", "cuda", 0)
    ] * 4
    assert len([call for call in calls if call[0] == "predict_step"]) == 4


def test_auto_accelerator_picks_cuda_when_available(tmp_path, monkeypatch):
    calls = run_with_stand_ins(tmp_path, monkeypatch, {"accelerator": "auto", "precision": "16-mixed"})
    assert ("module.to", "cuda") in calls
    assert ("GradScaler", "cuda", True) in calls
    assert ("autocast.enter", "cuda", "torch.float16", False) in calls


def test_cuda_16_mixed_checkpoint_holds_the_scaler_and_resumes_it(tmp_path, monkeypatch):
    """Lightning's checkpoint keeps the GradScaler's state under "MixedPrecision"; a resumed run loads it into
    its scaler, and restores the CUDA random states with the others."""
    import torch

    directory = tmp_path / "checkpoints"
    trainer = {"accelerator": "cuda", "precision": "16-mixed", "max_epochs": 2, "enable_checkpointing": True,
               "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"dirpath": str(directory),
                                                                            "save_last": True}}]}  # fmt: skip
    run_with_stand_ins(tmp_path, monkeypatch, {**trainer, "max_epochs": 1})
    checkpoint = torch.load(directory / "last.ckpt", weights_only=True)
    assert checkpoint["MixedPrecision"] == {"updates": 2}  # two batches, an update each
    calls = run_with_stand_ins(tmp_path, monkeypatch, trainer, arguments=["--ckpt-path", "last"])
    loaded = calls.index(("scaler.load_state_dict", {"updates": 2}))
    assert ("cuda.set_rng_state_all",) in calls
    assert loaded < calls.index(("training_step",))
    assert torch.load(directory / "last.ckpt", weights_only=True)["MixedPrecision"] == {"updates": 4}


def test_apex_order_of_calls(tmp_path, monkeypatch):
    calls = run_with_stand_ins(
        tmp_path,
        monkeypatch,
        {"accelerator": "cuda", "precision": "16-mixed", "amp_backend": "apex", "amp_level": "O1"},
    )
    assert calls.index(("configure_optimizers",)) < calls.index(("apex.initialize", "Probe", 1, "O1"))
    assert not [c for c in calls if c[0] in ("autocast.enter", "GradScaler", "scaler.scale")]
    batch = first_training_batch(calls)
    assert batch == [
        ("tensor.to", "cuda", True),
        ("tensor.to", "cuda", True),
        ("training_step",),
        ("optimizer.zero_grad",),
        ("apex.scale_loss.enter", "SGD"),
        ("backward",),
        ("apex.scale_loss.exit", "SGD"),
        ("optimizer.step",),
    ]


HAND_WRITTEN_APEX_LOOP = """
import sys, torch
sys.path.insert(0, sys.argv[2])
from apex import amp
from tests.standins.models import Probe
torch.manual_seed(0)
model = Probe()
optimizer = model.configure_optimizers()
_, (optimizer,) = amp.initialize(model, [optimizer], opt_level="O1")
for batch_idx, batch in enumerate(model.train_dataloader()):
    loss = model.training_step(batch, batch_idx)
    optimizer.zero_grad()
    with amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()
    optimizer.step()
torch.save(model.state_dict(), sys.argv[1])
"""


def test_apex_script_trains_like_a_hand_written_apex_loop(tmp_path, monkeypatch):
    """With apex's stand-in (no real loss scaling), the apex script's weights equal a plain apex loop's."""
    import torch

    run_with_stand_ins(
        tmp_path,
        monkeypatch,
        {"accelerator": "cuda", "precision": "16-mixed", "amp_backend": "apex", "amp_level": "O1"},
        weights=tmp_path / "ours.pt",
    )
    reference = subprocess.run(
        [sys.executable, "-c", HAND_WRITTEN_APEX_LOOP, str(tmp_path / "ref.pt"), str(ROOT / "tests" / "standins")],
        cwd=ROOT,
        env=env_with_root(ROOT / "tests" / "standins"),
        capture_output=True,
        text=True,
    )
    assert reference.returncode == 0, reference.stderr[-2000:]
    ours, ref = torch.load(tmp_path / "ours.pt"), torch.load(tmp_path / "ref.pt")
    assert all(torch.equal(ref[k], ours[k]) for k in ref)


@pytest.mark.parametrize(
    "trainer, message",
    [
        (
            {"accelerator": "cpu", "precision": "16-mixed", "amp_backend": "apex"},
            r"apex AMP on CPU is not supported by loopgen \(apex's AMP runs on CUDA only\); use `amp_backend: native`",
        ),
        ({"accelerator": "cuda", "precision": "bf16-mixed", "amp_backend": "apex"}, "apex needs `precision: 16-mixed`"),
    ],
)
def test_impossible_combinations_are_refused(tmp_path, monkeypatch, trainer, message):
    from loopgen.errors import LoopgenError

    monkeypatch.chdir(ROOT)
    with pytest.raises(LoopgenError, match=message):
        render({**BASE, "trainer": {**BASE["trainer"], **trainer}}, tmp_path)


@pytest.mark.parametrize(("cpu_stats", "cpu"), [(None, False), (True, True), (False, False)])
def test_device_stats_on_cuda_read_the_gpus_memory_stats(tmp_path, monkeypatch, cpu_stats, cpu):
    """DeviceStatsMonitor on CUDA: torch.cuda.memory_stats of the training device, at each batch's start and end
    (the loggers due at every step), with psutil's CPU figures only when cpu_stats is true (Lightning's)."""
    monitor = {"class_path": "DeviceStatsMonitor", "init_args": {"cpu_stats": cpu_stats}}
    flags = {
        "accelerator": "cuda",
        "limit_train_batches": 2,
        "limit_val_batches": 1,
        "log_every_n_steps": 1,
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": str(tmp_path / "logs")}},
        "callbacks": [monitor],
    }
    calls = run_with_stand_ins(tmp_path, monkeypatch, flags)
    # the sanity check's batch, two training batches, the validation's batch: each at its start and its end
    assert [call for call in calls if call[0] == "cuda.memory_stats"] == [("cuda.memory_stats", "cuda")] * 8
    with open(next((tmp_path / "logs").rglob("metrics.csv")), newline="") as file:
        columns = next(csv.reader(file))
    hooks = ["on_train_batch_end", "on_train_batch_start", "on_validation_batch_end", "on_validation_batch_start"]
    names = ["allocated_bytes.all.current", "num_alloc_retries", "reserved_bytes.all.peak"]
    names += ["cpu_percent", "cpu_swap_percent", "cpu_vm_percent"] if cpu else []
    expected = {f"DeviceStatsMonitor.{hook}/{name}" for hook in hooks for name in names}
    assert {c for c in columns if c.startswith("DeviceStatsMonitor.")} == expected
