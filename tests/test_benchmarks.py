"""benchmarks/run.py in its smallest form: one model, one configuration, one repeat, two epochs.

Checks what it writes (the JSON's fields, every variant's run, the weights' equality, the audit), not how fast
anything is: timings on a shared machine prove nothing in a test.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = {"hand", "script", "trainer", "script_full", "trainer_full"}


@pytest.mark.slow
def test_tiny_run_writes_results(tmp_path):
    command = [sys.executable, "benchmarks/run.py", "--models", "mlp", "--configs", "plain", "--repeats", "1"]
    command += ["--epochs", "2", "--out", str(tmp_path)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| mlp/plain |" in result.stdout

    latest = json.loads((tmp_path / "latest.json").read_text())
    stamped = [p for p in tmp_path.glob("*.json") if p.name != "latest.json"]
    assert len(stamped) == 1 and json.loads(stamped[0].read_text()) == latest
    meta = latest["meta"]
    for key in ("time", "command", "cpu", "cores", "torch", "pytorch_lightning", "shared_import_s", "repeats"):
        assert meta[key] is not None, key
    assert len(meta["load_average_before"]) == len(meta["load_average_after"]) == 3

    timed = [r for r in latest["runs"] if r["repeat"] != "coverage"]
    assert {r["variant"] for r in timed} == VARIANTS and len(timed) == len(VARIANTS)
    for run in timed:
        assert "error" not in run, run.get("error")
        assert run["steps"] == 2 * 32 and run["warmup_steps"] == 32
        for key in ("per_step_s", "per_step_cpu_s", "step_median_s", "run_s", "fit_s", "peak_rss_mib"):
            assert run[key] > 0, key
        # every side trained to the hand-written loop's weights, bit for bit
        assert run["weights_equal"] and not run["void"], run["variant"]
    assert len({r["weights_sha256"] for r in timed}) == 1

    cell = latest["summary"]["mlp/plain"]
    for variant in VARIANTS:
        assert cell[variant]["per_step_cpu_s"]["n"] == 1 and cell[variant]["weights_equal"]
    for ratio in ("script_over_hand", "trainer_over_script", "trainer_full_over_script_full", "gap_removed"):
        assert isinstance(cell[ratio], float) and isinstance(cell[ratio + "_wall"], float), ratio

    audit = latest["audit"]
    assert set(audit) == {"plain/off", "plain/full"}
    for features, entry in audit.items():
        assert entry["lightning"]["pytorch_lightning"]["executed"] > 100, features
        script = entry["script"]
        assert 0 < script["executed"] <= script["statements"] <= script["code_lines"] <= script["lines"]
    # the script with the four features on is the longer one, and Lightning runs more of itself for them
    assert audit["plain/full"]["script"]["lines"] > audit["plain/off"]["script"]["lines"]


def test_void_marks_a_run_whose_weights_differ():
    """A run whose weights differ from the hand-written loop's is void, and the report says so."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.run import MEASURES, summarise

    def run(variant, sha):
        facts = {"model": "mlp", "config": "plain", "variant": variant, "repeat": 0, "weights_sha256": sha}
        return {**facts, **dict.fromkeys(MEASURES, 1.0)}

    runs = [run("hand", "a"), run("script", "a"), run("trainer", "b")]
    summary = summarise(runs)["mlp/plain"]
    assert not summary["script"]["void"] and summary["trainer"]["void"]
    assert [r["void"] for r in runs] == [False, False, True]


def test_the_compiled_configuration_compiles_every_side_after_an_untimed_warm_up(tmp_path):
    """The compiled cell: the script's spec asks for loop.compile, on a model whose steps do not log; one untimed
    run per model first warms torch's compile caches, and the summary leaves it out."""
    import argparse

    sys.path.insert(0, str(ROOT))
    from benchmarks.run import MEASURES, make_plan, spec_for, summarise

    args = argparse.Namespace(models=["mlp"], configs=["compiled"], epochs=None, quick=True, repeats=1, coverage=False)
    jobs, _ = make_plan(args, tmp_path)
    assert (jobs[0]["variant"], jobs[0]["repeat"]) == ("hand", "warmup")
    assert {job["class"] for job in jobs} == {"TinyMLPCompiled"} and len(jobs) == 1 + 5
    spec = spec_for("mlp", "compiled", 2, full=False)
    assert spec["loop"] == {"compile": True} and spec["model"]["class_path"] == "benchmarks.models.TinyMLPCompiled"
    assert "loop" not in spec_for("mlp", "plain", 2, full=False)

    runs = [{**job, **dict.fromkeys(MEASURES, 1.0), "weights_sha256": "a"} for job in jobs]
    runs[0]["weights_sha256"] = "other"  # the warm-up's weights (one epoch) are not the reference
    summary = summarise(runs)["mlp/compiled"]
    assert all(summary[variant]["per_step_cpu_s"]["n"] == 1 and not summary[variant]["void"] for variant in VARIANTS)
