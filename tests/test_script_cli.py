"""The generated script's own command line (templates/cli.j2): only the options the spec's script serves, each
overriding the spec's value everywhere it is used.

--max-epochs / --max-steps are offered only where the loop tests that limit (and not under fast_dev_run), --seed
only where the script seeds, --ckpt-path and --weights-only only where it resumes. A script run with
`--max-epochs 2 --seed 3` ends with the weights and checkpoint files of the script rendered from the spec with
`max_epochs: 2` and `seed_everything: 3`, and of Lightning trained on that spec. A checkpoint whose pickle would
run code is refused unless `--weights-only false` (or the spec's `weights_only: false`) says the file is trusted."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import env_with_root, render, train_parity_side, write_spec

torch = pytest.importorskip("torch")

TINY = """
import torch
from torch.utils.data import DataLoader, TensorDataset

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(8, 2, generator=g), torch.randn(8, 1, generator=g)), batch_size=4)
"""

QUIET = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False, "enable_model_summary": False}


def tiny(seed: Any = 1, **flags: Any) -> dict[str, Any]:
    return {"seed_everything": seed, "model": {"class_path": "proj.models.Tiny"}, "trainer": {**QUIET, **flags}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "models.py").write_text(TINY)
    return tmp_path


def script(project: Path, spec: dict[str, Any], name: str = "train.py") -> Path:
    path = project / name
    path.write_text(render(spec, project), encoding="utf-8")
    return path


def run(path: Path, *args: str) -> subprocess.CompletedProcess:
    env = env_with_root(path.parent)
    return subprocess.run(
        [sys.executable, str(path), *args], cwd=path.parent, env=env, capture_output=True, text=True, timeout=240
    )


OFFERED = {
    "epochs_seed": (tiny(max_epochs=2), {"--max-epochs", "--seed"}),
    "steps_only": (tiny(max_steps=3, max_epochs=-1), {"--max-steps", "--seed"}),
    "both_limits": (tiny(max_steps=3, max_epochs=2), {"--max-epochs", "--max-steps", "--seed"}),
    "default_epochs_no_seed": (tiny(seed=False), {"--max-epochs"}),
    "seed_at_run_time": (tiny(seed=True, max_epochs=1), {"--max-epochs", "--seed"}),
    "fast_dev_run": (tiny(fast_dev_run=2), {"--seed"}),
    "checkpoints": (
        tiny(max_epochs=1, enable_checkpointing=True),
        {"--ckpt-path", "--weights-only", "--max-epochs", "--seed"},
    ),
}


def test_help_lists_exactly_the_offered_options(project):
    """One process: each script's --help exits before anything is built."""
    paths = {key: script(project, spec, f"{key}.py") for key, (spec, _) in OFFERED.items()}
    code = "import runpy, sys\nfor path in sys.argv[1:]:\n    sys.argv = [path, '--help']\n"
    code += "    try:\n        runpy.run_path(path, run_name='__main__')\n    except SystemExit:\n        print('@@')\n"
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, paths.values())],
        cwd=project,
        env=env_with_root(project),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    helps = result.stdout.split("@@")
    for (key, (_, expected)), text in zip(OFFERED.items(), helps):
        offered = set(re.findall(r"(--[a-z][a-z-]+)", text)) - {"--help"}
        assert offered == expected | {"--allow-changed-code"}, (key, text)  # the guards' option, always
        if "--ckpt-path" not in expected:
            text = paths[key].read_text()
            assert "ckpt" not in text and "WEIGHTS_ONLY" not in text and "pickle" not in text, key


def test_nothing_to_override_leaves_only_the_guards_option(project):
    """fast_dev_run sets both limits and the spec does not seed: of the spec's values nothing is offered, and the
    command line holds the guards' --allow-changed-code alone."""
    path = script(project, tiny(seed=False, fast_dev_run=1))
    text = path.read_text()
    assert text.count("parser.add_argument(") == 1 and '"--allow-changed-code",' in text
    result = run(path, "--help")
    assert result.returncode == 0, result.stderr
    assert set(re.findall(r"(--[a-z][a-z-]+)", result.stdout)) == {"--help", "--allow-changed-code"}


def test_bad_options_exit_2_with_argparse_message(project):
    path = script(project, tiny(max_epochs=1))
    result = run(path, "--bogus")
    assert result.returncode == 2
    assert "error: unrecognized arguments: --bogus" in result.stderr
    result = run(path, "--max-epochs", "-1")
    assert result.returncode == 2
    assert "argument --max-epochs: -1: this script's loop was rendered for a limit >= 0" in result.stderr
    assert "put -1 in the spec and render it again" in result.stderr
    result = run(path, "--seed", str(2**32))
    assert result.returncode == 2
    assert "argument --seed: 4294967296: a seed is an integer in [0, 4294967295]" in result.stderr
    result = run(path, "--max-steps", "3")  # the loop does not test a step limit: not offered
    assert result.returncode == 2
    assert "unrecognized arguments: --max-steps 3" in result.stderr


def test_options_change_the_run(project):
    path = script(project, tiny(max_epochs=3))
    assert "Training stopped after 1 epochs and 2 optimizer steps." in run(path, "--max-epochs", "1").stdout
    path = script(project, tiny(max_steps=5, max_epochs=-1), "steps.py")
    assert "Training stopped after 2 epochs and 3 optimizer steps." in run(path, "--max-steps", "3").stdout
    path = script(project, tiny(seed=True, max_epochs=1), "chosen.py")
    assert "Seed set to" in run(path).stdout
    assert "Seed set to 5\n" in run(path, "--seed", "5").stdout


def test_loopgen_run_passes_the_options(project):
    write_spec(project, tiny(max_epochs=3))
    result = subprocess.run(
        [sys.executable, "-m", "loopgen", "run", "spec.yaml", "--", "--max-epochs", "1"],
        cwd=project,
        env=env_with_root(project),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert "Training stopped after 1 epochs and 2 optimizer steps." in result.stdout


# ---------------------------------------------------------------------------------------------------------------
# parity: the options against the spec that says the same, and against Lightning


PARITY = {
    "seed_everything": 42,
    "model": {"class_path": "tests.parity.models.MLP", "init_args": {"hidden": 16}},
    "trainer": {
        "max_epochs": 4,
        "logger": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "enable_checkpointing": True,
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"save_last": True, "every_n_train_steps": 3}}],
    },
}


def parity_run(tmp_path: Path, name: str, side: str, spec: dict[str, Any], *args: str) -> dict[str, Any]:
    env = {**env_with_root(), "LOOPGEN_SCRIPT_ARGS": json.dumps(list(args))}
    return train_parity_side(side, spec, tmp_path / name, env)


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for key, tensor in a["state_dict"].items():
        assert torch.equal(tensor, b["state_dict"][key]), key
    assert a["checkpoints"] == b["checkpoints"]


@pytest.mark.slow
def test_options_give_the_spec_s_run_and_lightning_s(tmp_path):
    said = copy.deepcopy(PARITY)
    said["seed_everything"] = 3
    said["trainer"]["max_epochs"] = 2
    overridden = parity_run(tmp_path, "overridden", "loopgen", PARITY, "--max-epochs", "2", "--seed", "3")
    rendered = parity_run(tmp_path, "rendered", "loopgen", said)
    assert_same(overridden, rendered)
    assert len(overridden["checkpoints"]) > 0
    lightning = parity_run(tmp_path, "lightning", "lightning", said)
    assert_same(overridden, lightning)
    plain = parity_run(tmp_path, "plain", "loopgen", PARITY)  # the options did change the run
    assert not torch.equal(plain["state_dict"]["net.0.weight"], overridden["state_dict"]["net.0.weight"])


@pytest.mark.slow
def test_max_steps_option_gives_the_spec_s_run(tmp_path):
    spec = copy.deepcopy(PARITY)
    spec["trainer"].update(max_epochs=-1, max_steps=20)
    said = copy.deepcopy(spec)
    said["trainer"]["max_steps"] = 7
    assert_same(
        parity_run(tmp_path, "overridden", "loopgen", spec, "--max-steps", "7"),
        parity_run(tmp_path, "rendered", "loopgen", said),
    )


# ---------------------------------------------------------------------------------------------------------------
# a checkpoint loads as tensors and plain data only, unless the file is trusted


class Payload:
    """Unpickled, it runs `code`: what a crafted checkpoint does when it is loaded as a full pickle."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (self.code,))


def refusal(path: Path) -> str:
    return (
        f"--ckpt-path {path}: holds exec, which weights_only loading refuses (unpickling it could run code); if"
        " you trust the file, load it with --weights-only false (weights_only: false in the spec)"
    )


def test_a_checkpoint_that_would_run_code_is_refused_unless_trusted(project):
    """The script's own checkpoint of epoch 0 with one more entry, a payload that creates a marker file when
    unpickled: refused with a one-line message (the payload does not run, no file is written); with
    `--weights-only false`, or rendered from a spec with `weights_only: false`, the file is trusted: the payload
    runs and the run resumes from it."""
    spec = tiny(max_epochs=2, enable_checkpointing=True)
    path = script(project, spec)
    assert run(path, "--max-epochs", "1").returncode == 0
    checkpoints = project / "checkpoints"
    checkpoint = torch.load(checkpoints / "epoch=0-step=2.ckpt", weights_only=True)  # the script's own: plain data
    marker = project / "marker"
    checkpoint["payload"] = Payload(f"open({str(marker)!r}, 'w').close()")
    crafted = project / "crafted.ckpt"
    torch.save(checkpoint, crafted)
    files = sorted(checkpoints.iterdir())

    refused = run(path, "--ckpt-path", str(crafted))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[-1] == refusal(crafted)  # after the warning of a non-empty directory
    assert "Traceback" not in refused.stderr
    assert not marker.exists(), "the payload ran"
    assert sorted(checkpoints.iterdir()) == files

    bad = run(path, "--ckpt-path", str(crafted), "--weights-only", "maybe")
    assert bad.returncode == 2
    assert "argument --weights-only: invalid choice: 'maybe'" in bad.stderr
    assert not marker.exists(), "the payload ran"

    trusted = run(path, "--ckpt-path", str(crafted), "--weights-only", "false")
    assert trusted.returncode == 0, trusted.stderr
    assert marker.exists(), "the trusted file was not unpickled"
    assert f"Resuming from {crafted}: epoch 1, batch 0." in trusted.stdout
    assert "Training stopped after 2 epochs and 4 optimizer steps." in trusted.stdout

    marker.unlink()
    trusting = script(project, {**spec, "weights_only": False}, "trusting.py")
    assert "WEIGHTS_ONLY = False" in trusting.read_text()
    refused = run(trusting, "--ckpt-path", str(crafted), "--weights-only", "true")
    assert refused.stderr.splitlines()[-1] == refusal(crafted)
    assert not marker.exists(), "the payload ran"
    assert run(trusting, "--ckpt-path", str(crafted)).returncode == 0
    assert marker.exists(), "the spec's weights_only: false did not trust the file"
