"""Faults and resumes: a rendered script killed or signalled at any optimizer step resumes from its checkpoint
(`python train.py --ckpt-path last`) and ends with the same weights as a run that was never interrupted.

Every script runs in a subprocess of its own (`loopgen render`, then `python train.py` in a fresh directory).
The module is tests.parity.models.ResumeModel: dropout, a shuffled training loader with 2 workers that draw
random noise, validation; 3 epochs of 8 steps. A ModelCheckpoint writes last.ckpt (and the newest step's file)
after every optimizer step. The model prints `step N` after each step, and with $RESUME_PAUSE waits at a chosen
hook and step until released: the tests kill or signal it there, or at random moments.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness import checkpoint_files
from tests.helpers import ROOT, env_with_root, write_spec

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

TIMEOUT = 240  # seconds, for any one run of a script
STEPS_PER_EPOCH = 8
MAX_EPOCHS = 3
TOTAL_STEPS = STEPS_PER_EPOCH * MAX_EPOCHS
CKPT_DIR = "ckpts"

SPEC: dict[str, Any] = {
    "seed_everything": 7,
    "model": {"class_path": "tests.parity.models.ResumeModel"},
    "trainer": {
        "accelerator": "cpu",
        "max_epochs": MAX_EPOCHS,
        "logger": False,
        "enable_progress_bar": False,
        "enable_checkpointing": True,
        "callbacks": [
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"dirpath": CKPT_DIR, "every_n_train_steps": 1, "save_last": True, "save_top_k": 1},
            }
        ],
    },
}


def with_trainer(spec: dict[str, Any], **flags: Any) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    spec["trainer"].update(flags)
    return spec


# ---------------------------------------------------------------------------------------------------------------
# running scripts


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in env_with_root().items() if not k.startswith("RESUME_")}
    return {**env, "PYTHONUNBUFFERED": "1", **extra}


class Run:
    """`python SCRIPT ARGS` in `cwd`, in a process group of its own (with its loader workers), its output (stdout
    and stderr) read line by line as it comes."""

    def __init__(self, script: Path, cwd: Path, *args: str, **env: str) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            cwd=cwd,
            env=environment(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self.paused = threading.Event()
        self.stepped = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("step "):
                self.stepped.set()
            elif line.strip() == "paused":
                self.paused.set()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_until_paused(self) -> None:
        self._wait_for(self.paused, "pause")

    def wait_until_stepped(self) -> None:
        self._wait_for(self.stepped, "finish a step")

    def _wait_for(self, event: threading.Event, what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not event.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"the script did not {what} (exit {self.proc.returncode}):\n{tail(self.output)}")

    def release(self) -> None:
        (self.cwd / "release").touch()

    def send(self, signum: int) -> None:
        """The signal to the script's process only (as `kill PID` sends it)."""
        os.kill(self.proc.pid, signum)

    def kill(self) -> None:
        """SIGKILL to the script and its loader workers."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.finish()

    def finish(self, timeout: float = TIMEOUT) -> int:
        """Wait for the script to exit (killing it after `timeout`); its exit status."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            pytest.fail(f"the script ran for more than {timeout} s:\n{tail(self.output)}")
        try:  # loader workers left behind (they hold the output open)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.reader.join(timeout=10)
        return self.proc.returncode


def run_to_end(script: Path, cwd: Path, *args: str) -> Path:
    """Run the script to its end; the file its final weights were saved to."""
    weights = cwd / "final_weights.pt"
    run = Run(script, cwd, *args, RESUME_WEIGHTS=str(weights))
    status = run.finish()
    assert status == 0, f"`train.py {' '.join(args)}` failed (exit {status}):\n{tail(run.output)}"
    assert weights.is_file(), f"no final weights: on_train_end did not run:\n{tail(run.output)}"
    assert "teardown fit sigterm=False interrupted=False" in map(str.strip, run.lines), tail(run.output)
    return weights


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


class Scripts:
    """The scripts rendered for this module (each once) and the uninterrupted reference run (once)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.rendered: dict[str, Path | str] = {}
        self.reference_dir: Path | None = None

    def script(self, name: str = "train", spec: dict[str, Any] = SPEC) -> Path:
        """`loopgen render` of `spec` (as NAME/train.py); a refusal fails the test with loopgen's messages."""
        if name not in self.rendered:
            directory = self.root / name
            directory.mkdir()
            spec_file = write_spec(directory, spec)
            script = directory / "train.py"
            command = [sys.executable, "-m", "loopgen", "render", str(spec_file), "-o", str(script)]
            result = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True)
            if result.returncode != 0:
                messages = [line for line in result.stderr.splitlines() if line.startswith("loopgen:")]
                self.rendered[name] = "loopgen refused the spec:\n" + "\n".join(messages or [result.stderr])
            else:
                self.rendered[name] = script
        rendered = self.rendered[name]
        if isinstance(rendered, str):
            pytest.fail(rendered, pytrace=False)
        return rendered

    def reference(self) -> Path:
        """The directory of the uninterrupted run: its final weights (final_weights.pt) and checkpoints."""
        if self.reference_dir is None:
            directory = self.root / "reference"
            run_to_end(self.script(), directory)
            self.reference_dir = directory
        return self.reference_dir


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> Scripts:
    return Scripts(tmp_path_factory.mktemp("resume"))


def assert_same_weights(weights: Path | dict, reference: Path, what: str) -> None:
    """`weights` (a state_dict or the file it was saved to) are torch.equal to those saved in `reference`."""
    ours = weights if isinstance(weights, dict) else torch.load(weights)
    theirs = torch.load(reference)
    assert ours.keys() == theirs.keys(), what
    different = [name for name in theirs if not torch.equal(ours[name], theirs[name])]
    assert not different, f"{what}: weights differ from the uninterrupted run's: {different}"


def load(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=False)


def names(directory: Path) -> list[str]:
    return [path.relative_to(directory).as_posix() for path in checkpoint_files(directory)]


# ---------------------------------------------------------------------------------------------------------------
# (a) the uninterrupted run


def test_uninterrupted_run_checkpoints_every_step(scripts: Scripts) -> None:
    """The reference: last.ckpt is the final state (every step writes it), and only the newest step's file is kept
    (save_top_k 1, no monitor)."""
    reference = scripts.reference()
    assert names(reference) == [f"{CKPT_DIR}/epoch=2-step={TOTAL_STEPS}.ckpt", f"{CKPT_DIR}/last.ckpt"]
    last = load(reference / CKPT_DIR / "last.ckpt")
    assert (last["epoch"], last["global_step"]) == (MAX_EPOCHS - 1, TOTAL_STEPS)
    final = torch.load(reference / "final_weights.pt")
    assert all(torch.equal(last["state_dict"][name], final[name]) for name in final)


# ---------------------------------------------------------------------------------------------------------------
# (b) SIGKILL at an optimizer step, then --ckpt-path last


def kill_points() -> list[Any]:
    """(hook, global_step) where the script is killed: at random steps (mid-step: training_step of step N+1 has
    begun; seeded), and at the ends of epochs: after epoch 0 (on_train_epoch_end, validation done), and after
    epoch 1's last step, before its validation."""
    points = []
    for seed in (0, 1, 2):
        step = random.Random(seed).randrange(1, TOTAL_STEPS)
        points.append(pytest.param("training_step", step, id=f"seed{seed}-training_step-{step}"))
    points.append(pytest.param("on_train_epoch_end", STEPS_PER_EPOCH, id="epoch_0_end"))
    points.append(pytest.param("on_validation_start", 2 * STEPS_PER_EPOCH, id="epoch_1_end_before_validation"))
    return points


@pytest.mark.parametrize("hook, step", kill_points())
def test_resume_after_sigkill(scripts: Scripts, tmp_path: Path, hook: str, step: int) -> None:
    """Killed (with its loader workers) at `hook` of `step`: last.ckpt holds that step (or, killed during the
    validation that ends the step's batch, the step before: the script writes a step's files once its batch is
    done), and `--ckpt-path last` ends with the uninterrupted run's weights and checkpoint files."""
    reference = scripts.reference()
    run = Run(scripts.script(), tmp_path, RESUME_PAUSE=f"{hook} {step}")
    run.wait_until_paused()
    run.kill()
    last = load(tmp_path / CKPT_DIR / "last.ckpt")
    expected = step - 1 if hook == "on_validation_start" else step
    assert last["global_step"] == expected, f"killed at {hook} of step {step}: last.ckpt is at {last['global_step']}"

    weights = run_to_end(scripts.script(), tmp_path, "--ckpt-path", "last")
    assert_same_weights(weights, reference / "final_weights.pt", f"resumed from step {step} ({hook})")
    assert names(tmp_path) == names(reference)
    resumed_last, reference_last = load(tmp_path / CKPT_DIR / "last.ckpt"), load(reference / CKPT_DIR / "last.ckpt")
    assert (resumed_last["epoch"], resumed_last["global_step"]) == (
        reference_last["epoch"],
        reference_last["global_step"],
    )


# ---------------------------------------------------------------------------------------------------------------
# (c) SIGKILL while a checkpoint is being written


def test_kill_while_writing_leaves_only_loadable_checkpoints(scripts: Scripts, tmp_path: Path) -> None:
    """Killed again and again, each time as soon as a new file that is not a finished *.ckpt appears in the
    checkpoint directory (a checkpoint being written), or else at a random moment: every *.ckpt left loads, and
    resuming from last.ckpt still ends with the uninterrupted run's weights (in the final last.ckpt too)."""
    reference = scripts.reference()
    rng = random.Random(1234)
    folder = tmp_path / CKPT_DIR

    def finished() -> bool:
        return (folder / "last.ckpt").exists() and load(folder / "last.ckpt")["global_step"] == TOTAL_STEPS

    for attempt in range(4):
        if finished():  # an attempt ran to the end before it was killed
            break
        args = ("--ckpt-path", "last") if (folder / "last.ckpt").exists() else ()
        left_over = set(os.listdir(folder)) if folder.is_dir() else set()
        run = Run(scripts.script(), tmp_path, *args)
        run.wait_until_stepped()
        deadline = time.monotonic() + rng.uniform(0.0, 0.5)
        while run.proc.poll() is None and time.monotonic() < deadline:
            names_now = os.listdir(folder) if folder.is_dir() else []
            if any(not name.endswith(".ckpt") and name not in left_over for name in names_now):
                break
        run.kill()
        for path in checkpoint_files(tmp_path):
            try:
                load(path)
            except Exception as error:  # noqa: BLE001 - report which file, and why
                pytest.fail(f"attempt {attempt}: {path.relative_to(tmp_path)} does not load: {error!r}")

    if not finished():
        args = ("--ckpt-path", "last") if (folder / "last.ckpt").exists() else ()
        weights = run_to_end(scripts.script(), tmp_path, *args)
        assert_same_weights(weights, reference / "final_weights.pt", "resumed after kills while writing")
    last = load(folder / "last.ckpt")
    assert last["global_step"] == TOTAL_STEPS
    assert_same_weights(last["state_dict"], reference / "final_weights.pt", "last.ckpt after kills while writing")


# ---------------------------------------------------------------------------------------------------------------
# (d) SIGTERM / SIGINT: finish the step, write last.ckpt, tear down, exit 128 + signal


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_mid_epoch_saves_last_and_exits(scripts: Scripts, tmp_path: Path, signum: int) -> None:
    """Signalled while step 11 (mid-epoch 1) runs: the step is finished, last.ckpt holds it, teardown runs, the
    exit status is 128 + the signal's number. After SIGTERM, resuming from that last.ckpt gives the uninterrupted
    run's weights."""
    step = 10
    run = Run(scripts.script(), tmp_path, RESUME_PAUSE=f"training_step {step}")
    run.wait_until_paused()
    run.send(signum)
    time.sleep(0.2)  # the signal is handled while the step is still running
    run.release()
    status = run.finish()
    assert status == 128 + signum, f"exit status {status}, expected {128 + signum}:\n{tail(run.output)}"
    # the hooks from the signal on see the trainer's flags: received_sigterm (SIGTERM only) and interrupted
    flags = f"sigterm={signum == signal.SIGTERM} interrupted=True"
    assert f"teardown fit {flags}" in map(str.strip, run.lines), f"no teardown:\n{tail(run.output)}"
    last = load(tmp_path / CKPT_DIR / "last.ckpt")
    assert last["global_step"] == step + 1, "last.ckpt must hold the step that was running when the signal came"
    if signum == signal.SIGTERM:
        weights = run_to_end(scripts.script(), tmp_path, "--ckpt-path", str(tmp_path / CKPT_DIR / "last.ckpt"))
        assert_same_weights(weights, scripts.reference() / "final_weights.pt", "resumed after SIGTERM")


LOGGED_SPEC = with_trainer(SPEC, logger={"class_path": "CSVLogger", "init_args": {"save_dir": "logs"}},
                           log_every_n_steps=3)  # fmt: skip


def metrics_rows(directory: Path, version: int) -> list[dict[str, str]]:
    with open(directory / "logs" / "lightning_logs" / f"version_{version}" / "metrics.csv", newline="") as file:
        return list(csv.DictReader(file))


def test_resumed_run_logs_what_the_uninterrupted_run_logs(scripts: Scripts, tmp_path: Path) -> None:
    """SIGTERM during step 10, then resume: the resumed run's metrics.csv (a new version, as Lightning numbers
    runs) holds the rows the uninterrupted run wrote from that step on, at the same steps, with the same values."""
    script = scripts.script("logged", LOGGED_SPEC)
    run_to_end(script, tmp_path / "uninterrupted")
    run = Run(script, tmp_path / "stopped", RESUME_PAUSE="training_step 10")
    run.wait_until_paused()
    run.send(signal.SIGTERM)
    time.sleep(0.2)
    run.release()
    assert run.finish() == 128 + signal.SIGTERM, tail(run.output)
    run_to_end(script, tmp_path / "stopped", "--ckpt-path", "last")
    reference = metrics_rows(tmp_path / "uninterrupted", 0)
    resumed = metrics_rows(tmp_path / "stopped", 1)
    assert resumed and resumed == [row for row in reference if int(row["step"]) >= 11]


def test_second_signal_exits_at_once(scripts: Scripts, tmp_path: Path) -> None:
    """A second SIGTERM while the step is still running: the script exits without finishing it, and leaves no
    checkpoint that does not load."""
    run = Run(scripts.script(), tmp_path, RESUME_PAUSE="training_step 5")
    run.wait_until_paused()
    run.send(signal.SIGTERM)
    time.sleep(0.5)
    assert run.proc.poll() is None, "the first SIGTERM must let the running step finish"
    run.send(signal.SIGTERM)
    status = run.finish(timeout=15)
    assert status in (128 + signal.SIGTERM, -signal.SIGTERM), f"exit status {status}:\n{tail(run.output)}"
    for path in checkpoint_files(tmp_path):
        load(path)
    assert load(tmp_path / CKPT_DIR / "last.ckpt")["global_step"] == 5


# ---------------------------------------------------------------------------------------------------------------
# (e) resuming from a checkpoint that pytorch_lightning.Trainer wrote


LIGHTNING_CKPT_SPEC = {
    **LOGGED_SPEC,
    "trainer": {
        **LOGGED_SPEC["trainer"],
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"dirpath": CKPT_DIR}}],
    },
}


def run_lightning(spec: dict[str, Any], directory: Path) -> Path:
    """Train `spec` with pytorch_lightning.Trainer (tests/parity/runner.py) in `directory`; its out.pt."""
    directory.mkdir()
    spec_file = write_spec(directory, spec)
    command = [sys.executable, "-m", "tests.parity.runner", "lightning", str(spec_file), str(directory / "out.pt")]
    result = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, f"Lightning failed:\n{tail(result.stdout + result.stderr)}"
    return directory / "out.pt"


def test_resume_from_a_lightning_checkpoint(scripts: Scripts, tmp_path: Path) -> None:
    """Lightning trains 1 epoch and checkpoints at its end; then Lightning and the script (its spec's ckpt_path)
    each resume from that file for the remaining 2 epochs: the same weights."""
    run_lightning(with_trainer(LIGHTNING_CKPT_SPEC, max_epochs=1), tmp_path / "first_epoch")
    checkpoint = tmp_path / "first_epoch" / CKPT_DIR / f"epoch=0-step={STEPS_PER_EPOCH}.ckpt"
    assert checkpoint.is_file(), names(tmp_path / "first_epoch")
    resume = {**LIGHTNING_CKPT_SPEC, "ckpt_path": str(checkpoint)}
    digest = hashlib.sha256(checkpoint.read_bytes()).hexdigest()

    lightning = torch.load(run_lightning(resume, tmp_path / "lightning"), weights_only=False)["state_dict"]
    torch.save(lightning, tmp_path / "lightning_weights.pt")
    weights = run_to_end(scripts.script("from_lightning", resume), tmp_path / "script")
    assert_same_weights(weights, tmp_path / "lightning_weights.pt", "resumed from Lightning's checkpoint")
    assert hashlib.sha256(checkpoint.read_bytes()).hexdigest() == digest, "the checkpoint resumed from was modified"
    # the loggers continue at Lightning's step (_batches_that_stepped), each side in a new version directory
    assert metrics_rows(tmp_path / "script", 0) == metrics_rows(tmp_path / "lightning", 0)


def test_resume_from_a_lightning_bf16_true_checkpoint(scripts: Scripts, tmp_path: Path) -> None:
    """The same under precision bf16-true: the checkpoint holds bfloat16 weights and optimizer state, and both
    sides resume them into the bfloat16 model to the same weights, in bfloat16, and the same logged rows."""
    spec = with_trainer(LIGHTNING_CKPT_SPEC, precision="bf16-true")
    run_lightning(with_trainer(spec, max_epochs=1), tmp_path / "first_epoch")
    checkpoint = tmp_path / "first_epoch" / CKPT_DIR / f"epoch=0-step={STEPS_PER_EPOCH}.ckpt"
    saved = load(checkpoint)
    assert {tensor.dtype for tensor in saved["state_dict"].values()} == {torch.bfloat16}
    resume = {**spec, "ckpt_path": str(checkpoint)}

    lightning = torch.load(run_lightning(resume, tmp_path / "lightning"), weights_only=False)["state_dict"]
    torch.save(lightning, tmp_path / "lightning_weights.pt")
    weights = run_to_end(scripts.script("from_lightning_bf16_true", resume), tmp_path / "script")
    assert {tensor.dtype for tensor in torch.load(weights).values()} == {torch.bfloat16}
    assert_same_weights(weights, tmp_path / "lightning_weights.pt", "resumed from Lightning's bf16-true checkpoint")
    assert metrics_rows(tmp_path / "script", 0) == metrics_rows(tmp_path / "lightning", 0)


# ---------------------------------------------------------------------------------------------------------------
# (f) a checkpoint that cannot be resumed from


def other_model_checkpoint(good: Path, path: Path) -> str:
    """A checkpoint of the same class with a narrower hidden layer; the first weight that does not fit."""
    from tests.parity.models import ResumeModel

    checkpoint = load(good)
    checkpoint["state_dict"] = ResumeModel(hidden=8).state_dict()
    checkpoint["hyper_parameters"] = {**checkpoint["hyper_parameters"], "hidden": 8}
    torch.save(checkpoint, path)
    return "net.0.weight"


def truncated_checkpoint(good: Path, path: Path) -> str:
    data = good.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return ""


BAD_CHECKPOINTS = {
    "missing": (None, r"not found|no such file|does not exist|missing"),
    "truncated": (truncated_checkpoint, r"truncat|corrupt|not a (valid )?checkpoint|cannot|could not|failed|invalid"),
    "other_model": (other_model_checkpoint, r"size mismatch|shape|does not match|mismatch"),
}


def snapshot(directory: Path) -> dict[str, tuple[int, str]]:
    """Each checkpoint file under `directory`: its modification time and content hash."""
    return {
        path.relative_to(directory).as_posix(): (path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
        for path in checkpoint_files(directory)
    }


@pytest.mark.parametrize("kind", list(BAD_CHECKPOINTS))
def test_bad_checkpoint_is_refused(scripts: Scripts, tmp_path: Path, kind: str) -> None:
    """A missing file, a truncated one, another model's: the script exits non-zero with a message that names the
    file and says what is wrong, and no checkpoint file is modified (nor a new one written)."""
    reference = scripts.reference()
    shutil.copytree(reference / CKPT_DIR, tmp_path / CKPT_DIR)
    make, expected = BAD_CHECKPOINTS[kind]
    bad = tmp_path / CKPT_DIR / f"{kind}.ckpt"
    parameter = make(tmp_path / CKPT_DIR / "last.ckpt", bad) if make else ""
    before = snapshot(tmp_path)

    run = Run(scripts.script(), tmp_path, "--ckpt-path", str(bad))
    status = run.finish()
    message = tail(run.output, 5)
    assert status != 0, f"the script resumed from a {kind} checkpoint:\n{tail(run.output)}"
    assert bad.name in message, f"the last lines of the output do not name {bad.name}:\n{tail(run.output)}"
    assert re.search(expected, message, re.IGNORECASE), f"the message does not say what is wrong:\n{message}"
    assert parameter in message, f"the message does not name {parameter}:\n{message}"
    assert snapshot(tmp_path) == before, "a checkpoint file was written or modified"


# ---------------------------------------------------------------------------------------------------------------
# (f) a file written at an epoch's end, before that epoch's ReduceLROnPlateau step


def test_resume_from_a_file_written_before_its_epochs_plateau_step(tmp_path: Path) -> None:
    """ModelCheckpoint writes at an epoch's end before the epoch's ReduceLROnPlateau step: the file's optimizer
    state holds the learning rate before the step, as Lightning's does; this script's own resume from it goes on
    with the rate after the step, as the uninterrupted run did."""
    from tests.helpers import render, train_script

    directory = tmp_path / "ck"
    spec = {
        "seed_everything": 42,
        "model": {"class_path": "tests.parity.models.LoggingModel"},
        "trainer": {
            "accelerator": "cpu", "max_epochs": 4, "logger": False, "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"dirpath": str(directory), "save_top_k": -1}}],
        },
    }  # fmt: skip
    script = tmp_path / "train.py"
    script.write_text(render(spec, tmp_path))
    uninterrupted = train_script(script, tmp_path / "full.pt", cwd=tmp_path)
    reduced = []
    for path in sorted(directory.glob("epoch=*.ckpt")):
        saved = torch.load(path, weights_only=True)
        before = saved["optimizer_states"][0]["param_groups"][0]["lr"]
        if saved["loopgen"]["param_groups"][0][0]["lr"] < before:
            reduced.append(path)
    assert reduced[:-1], "no epoch before the last lowered the learning rate: the case tests nothing"
    resumed_spec = {**spec, "ckpt_path": str(reduced[0])}
    script.write_text(render(resumed_spec, tmp_path))
    resumed = train_script(script, tmp_path / "resumed.pt", cwd=tmp_path)
    for name, tensor in uninterrupted["state_dict"].items():
        assert torch.equal(tensor, resumed["state_dict"][name]), name
