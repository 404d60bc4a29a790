"""strategy: horovod against Lightning 1.9.5's HorovodStrategy, for real under `horovodrun -np 2 -H localhost:2`
(Gloo, CPU), in two launches started together (a launch costs the start of the processes and torch's import):
Lightning 1.9.5 trains every job in turn in one (tests/horovod/files195.py), the rendered scripts in the other
(tests/horovod/run_script.py).

The jobs: test_horovod.CASES (weights bit for bit), and `files`: a CSVLogger, a ModelCheckpoint (top 2 on
val_loss and last.ckpt) and the progress bar, with accumulation. Rank 0 writes and draws, every process decides;
rank 0's directories and versions hold everywhere. The scripts also run `resumed` (from files' last.ckpt to 5
epochs) and `uninterrupted` (5 epochs).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.harness import ROOT, checkpoint_facts, env_with_root, log_facts
from tests.helpers import render, write_spec
from tests.test_horovod import CASES, horovodrun, spec, venv195_python

JOBS = ("files", "resumed", "uninterrupted")
LAUNCH_TIMEOUT = 900  # seconds, both launches together (2 to 8 minutes on a shared 2-core machine)
# what the checkpoints of both hold alike (the script writes Lightning 2.x's format: its loops and version differ)
COMPARED = ("state_dict", "optimizer_states", "lr_schedulers", "epoch", "global_step")


def files_spec(job: str, root: Path, files_root: Path) -> dict:
    checkpoint = {"monitor": "val_loss", "save_top_k": 2, "save_last": True, "filename": "{epoch}-{val_loss:.3f}"}
    flags = {
        "max_epochs": 3 if job == "files" else 5,
        "accumulate_grad_batches": 3,  # 4 batches a process an epoch: the epoch's last ends no window
        "log_every_n_steps": 1,
        "default_root_dir": str(root),
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": str(root)}},
        "enable_checkpointing": True,
        "enable_progress_bar": True,
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": checkpoint}],
    }
    content = spec("horovod", 0.05, "NetLogged", **flags)
    if job == "resumed":
        content["ckpt_path"] = str(files_root / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt")
    return content


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = horovodrun()
    python195 = venv195_python()
    if python195 is None:
        pytest.skip("no Lightning 1.9.5 venv with horovod: run `bash .ci/setup --lightning-1.9.5`")
    directory = tmp_path_factory.mktemp("horovod_files")
    env = {**env_with_root(), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    theirs = [str(write_spec(directory, files_spec("files", directory / "lightning" / "files", directory), "l.yaml")),
              str(directory / "lightning.pt")]  # fmt: skip
    ours = []
    for job in JOBS:
        case = files_spec(job, directory / "loopgen" / job, directory / "loopgen" / "files")
        script = directory / f"{job}.py"
        script.write_text(render(case, directory))
        ours += [str(script), str(directory / f"{job}.pt")]
    for name, (model, model_args, flags) in CASES.items():
        case = spec("horovod", 0.05, model, model_args, **flags)
        theirs += [str(write_spec(directory, case, f"{name}.yaml")), str(directory / f"{name}.lightning.pt")]
        script = directory / f"{name}.py"
        script.write_text(render(case, directory))
        ours += [str(script), str(directory / f"{name}.pt")]
    np = [run, "-np", "2", "-H", "localhost:2"]
    commands = {
        "lightning": [*np, str(python195), "-m", "tests.horovod.files195", *theirs],
        "loopgen": [*np, sys.executable, "-m", "tests.horovod.run_script", *ours],
    }  # fmt: skip
    launches = {
        name: subprocess.Popen(command, cwd=ROOT, env=env, stdout=(directory / f"{name}.log").open("w"),
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        for name, command in commands.items()
    }  # fmt: skip
    deadline = time.monotonic() + LAUNCH_TIMEOUT
    while any(launch.poll() is None for launch in launches.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
    for name, launch in launches.items():
        if launch.poll() is None:
            launch.kill()
        output = (directory / f"{name}.log").read_text(errors="replace")
        assert launch.returncode == 0, f"{name}:\n{output[-4000:]}"
    return directory


def weights(path: Path) -> dict:
    return torch.load(path, weights_only=False)["state_dict"]


def csv_rows(facts: list[dict]) -> list[dict]:
    """The log facts with each metrics.csv as its rows by column: the script writes Lightning 2.x's columns
    (sorted by name), 1.9.5 in the order they first came."""
    for fact in facts:
        if "rows" in fact:
            header, *rows = fact.pop("rows")
            fact["rows"] = [dict(zip(header, row)) for row in rows]
    return facts


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_horovod_trains_as_lightning_1_9_5_horovod(runs: Path, name: str) -> None:
    """Bit for bit: the same averaged gradients, learning rates scaled by 2, the same shards of the data."""
    ours = weights(runs / f"{name}.pt")
    for key, value in weights(runs / f"{name}.lightning.pt").items():
        assert torch.equal(ours[key], value), key


@pytest.mark.slow
def test_early_stopping_stops_every_process_where_lightning_1_9_5_does(runs: Path) -> None:
    stopped = torch.load(runs / "early_stopping.lightning.pt", weights_only=False)["current_epoch"]
    assert 1 < stopped < 8, stopped  # it stopped early, after more than one epoch
    output = (runs / "loopgen.log").read_text(errors="replace")
    assert f"Training stopped after {stopped} epochs" in output


@pytest.mark.slow
def test_checkpoints_logs_and_weights_equal_lightning_1_9_5_horovod(runs: Path) -> None:
    ours, theirs = runs / "loopgen" / "files", runs / "lightning" / "files"
    for key, value in weights(runs / "lightning.pt").items():
        assert torch.equal(weights(runs / "files.pt")[key], value), key
    facts, expected = checkpoint_facts(ours), checkpoint_facts(theirs)
    assert [fact["path"] for fact in facts] == [fact["path"] for fact in expected]
    assert len(facts) == 3, facts  # the best 2 and last.ckpt, written once (by rank 0)
    for fact, other in zip(facts, expected):
        assert {key: fact[key] for key in COMPARED} == {key: other[key] for key in COMPARED}, fact["path"]
    assert csv_rows(log_facts(ours)) == csv_rows(log_facts(theirs))


@pytest.mark.slow
def test_rank_zero_alone_writes_draws_and_prints(runs: Path) -> None:
    output = (runs / "loopgen.log").read_text(errors="replace")
    lines = output.replace("\r", "\n").splitlines()
    ranks = {line.split("]", 1)[0] for line in lines if "Epoch 2: 100%" in line}
    assert len(ranks) == 1 and ranks.pop().startswith("[0"), output[-3000:]
    assert len([line for line in lines if "Training stopped after" in line]) == len(JOBS) + len(CASES)
    for job in JOBS:
        assert len(list((runs / "loopgen" / job / "lightning_logs").iterdir())) == 1  # one version: version_0


@pytest.mark.slow
def test_a_resumed_horovod_run_trains_as_without_a_break(runs: Path) -> None:
    resumed, uninterrupted = weights(runs / "resumed.pt"), weights(runs / "uninterrupted.pt")
    for key, value in uninterrupted.items():
        assert torch.equal(resumed[key], value), key
