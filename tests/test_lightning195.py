"""The seed's branches against Lightning 1.9.5, the last release that has them: several optimizers (with and
without frequencies), truncated BPTT, LBFGS, accumulation schedules, gradient-norm tracking.

Each case trains the same test module twice, with pytorch-lightning 1.9.5's Trainer (its own venv: .venv195,
built by `.ci/setup --lightning-1.9.5`, or $LOOPGEN_VENV195) and with the rendered script, and compares the
final weights (torch.equal) and the module's record of every hook call (arguments, losses, step counters,
learning rates, which parameters required grad, the outputs' nesting).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from tests.harness import ROOT, Case, case_ids, env_with_root, log_facts

pytestmark = pytest.mark.slow

SPECS = ROOT / "tests" / "lightning195" / "specs"


def venv195() -> Path:
    path = Path(os.environ.get("LOOPGEN_VENV195", ROOT / ".venv195"))
    python = path / "bin" / "python"
    if not python.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{python} is missing: CI must build it with `.ci/setup --lightning-1.9.5`")
        pytest.skip("no Lightning 1.9.5 venv: run `bash .ci/setup --lightning-1.9.5`")
    return python


def spec_file(name: str) -> dict:
    return yaml.safe_load((SPECS / f"{name}.yaml").read_text())


def variant(
    id: str, name: str, trainer: dict | None = None, init_args: dict | None = None, loop: dict | None = None
) -> Case:
    """Case `id`: the spec specs/NAME.yaml with `trainer` flags and model `init_args` added (and a `loop:`)."""
    spec = spec_file(name)
    spec["trainer"] = {**spec["trainer"], **(trainer or {})}
    spec["model"]["init_args"] = {**spec["model"].get("init_args", {}), **(init_args or {})}
    if loop:
        spec["loop"] = loop
    return Case(id, spec)


CSV_LOGGER = {"class_path": "CSVLogger", "init_args": {"save_dir": "."}}

CASES = [
    variant("gan", "gan"),
    variant("gan_frequencies", "gan_frequencies"),
    variant("tbptt", "tbptt"),
    variant("lbfgs", "lbfgs"),
    variant(
        "gan_accumulate_clip_gradnorm_step_schedulers",
        "gan",
        trainer={"accumulate_grad_batches": 2, "gradient_clip_val": 0.1, "track_grad_norm": 2},
        init_args={"scheduler_interval": "step", "momentum": 0.9},
    ),
    variant(
        "gan_frequencies_step_schedulers",
        "gan_frequencies",
        init_args={"scheduler_interval": "step", "frequencies": [1, 2]},
        loop={"optimizer_frequencies": [1, 2]},
    ),
    variant(
        "gan_accumulation_schedule_max_steps",
        "gan",
        trainer={"accumulate_grad_batches": {1: 2}, "max_epochs": 4, "max_steps": 15},
    ),
    variant("gan_bf16", "gan", trainer={"precision": "bf16-mixed"}),
    variant(
        "gan_skipped_steps_frozen_bias",
        "gan",
        init_args={"skip_discriminator_every": 2, "freeze_generator_bias": True, "momentum": 0.9},
    ),
    variant("tbptt_accumulate_gru", "tbptt", trainer={"accumulate_grad_batches": 2}, init_args={"cell": "gru"}),
    variant("lbfgs_accumulate", "lbfgs", trainer={"accumulate_grad_batches": 2}),
    variant("lbfgs_no_sanity_check", "lbfgs", trainer={"num_sanity_val_steps": 0}),
    variant("one_optimizer_with_optimizer_idx", "one_optimizer_idx"),
    variant("live_metrics_read_in_every_hook", "live_metrics"),
    variant("workers_seeded_as_1_9_5_seeds_them", "workers"),
    variant("workers_persistent_1_9_5", "workers", init_args={"persistent_workers": True}),
    # a CSVLogger on each side: the rows (values, steps, epochs) and hparams.yaml must agree
    variant(
        "gan_logged_step_schedulers_grad_norm",
        "gan",
        trainer={"logger": CSV_LOGGER, "log_every_n_steps": 2, "track_grad_norm": 2, "enable_checkpointing": False},
        init_args={"scheduler_interval": "step", "log_losses": True},
    ),
    variant(
        "gan_frequencies_logged",
        "gan_frequencies",
        trainer={"logger": CSV_LOGGER, "log_every_n_steps": 1, "enable_checkpointing": False},
        init_args={"log_losses": True},
    ),
    variant(
        "tbptt_logged_accumulate",
        "tbptt",
        trainer={
            "logger": CSV_LOGGER,
            "log_every_n_steps": 1,
            "accumulate_grad_batches": 2,
            "enable_checkpointing": False,
        },
        init_args={"log_losses": True},
    ),
    *(
        Case(f"example_{name}", yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text()))
        for name in ("gan", "rnn_tbptt", "lbfgs", "bf16")
    ),
]


def logged(directory: Path) -> list[dict]:
    """What the loggers wrote under `directory`, as data: each metrics.csv's rows as {column: cell} without the
    empty cells (1.9.5 orders the columns as it first saw them, 2.x and the scripts sort them), each
    hparams.yaml as what it loads to."""
    facts = log_facts(directory)
    for entry in facts:
        if "rows" in entry:
            header, *rows = entry.pop("rows")
            entry["rows"] = [{k: v for k, v in zip(header, row, strict=True) if v != ""} for row in rows]
    return facts


def without_numpy_types(records: list[dict]) -> list[dict]:
    """Lightning 1.9.5 passes optimizer_idx as numpy.int64 with frequencies; the scripts pass an int."""
    return [{k: v for k, v in r.items() if k != "optimizer_idx_type"} for r in records]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_matches_lightning_1_9_5(case, tmp_path, runner):
    python = venv195()
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(case.spec, sort_keys=False))

    lightning_dir, script_dir = tmp_path / "lightning", tmp_path / "script"
    lightning_dir.mkdir()
    script_dir.mkdir()
    reference = subprocess.run(
        [str(python), str(ROOT / "tests" / "lightning195" / "runner195.py"), str(spec_path), str(tmp_path / "ref.pt")],
        cwd=lightning_dir,
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert reference.returncode == 0, reference.stderr[-4000:]
    ref = torch.load(tmp_path / "ref.pt", weights_only=False)

    # the script, rendered and run in a child the parity runner's server forks (torch imported once)
    out, log = script_dir / "ours.pt", script_dir / "ours.log"
    [status] = runner.run([["loopgen", str(spec_path), str(out), str(log)]])
    assert status == 0, log.read_text(encoding="utf-8")[-4000:]
    ours = torch.load(out, weights_only=False)

    different = [k for k, v in ref["state_dict"].items() if not torch.equal(v, ours["state_dict"][k])]
    assert not different, f"weights differ: {different}"
    assert ours["state_dict"].keys() == ref["state_dict"].keys()
    if ref["records"] is None:  # the examples keep no records
        return
    if "logger" in case.spec["trainer"]:
        theirs, mine = logged(lightning_dir), logged(script_dir)
        assert theirs and any(entry.get("rows") for entry in theirs), "Lightning 1.9.5 logged nothing"
        assert mine == theirs
    if isinstance(ref["records"], dict):  # a parity model's (tests/parity): its events in order
        for i, (a, b) in enumerate(zip(ours["records"]["events"], ref["records"]["events"])):
            assert a == b, f"event {i} differs:\n ours {a}\n 1.9.5 {b}"
        assert ours["records"] == ref["records"]
        return
    ours_records, ref_records = without_numpy_types(ours["records"]), without_numpy_types(ref["records"])
    for i, (a, b) in enumerate(zip(ours_records, ref_records)):
        assert a == b, f"record {i} differs:\n ours {a}\n 1.9.5 {b}"
    assert len(ours_records) == len(ref_records)
