"""The differential fuzzer in the suite: its quick profile, the finds of its long runs, and the checker's own
tests (each shows that a check fails when what it checks is broken).

The quick profile draws QUICK_EXAMPLES specs with a fixed seed (tests/fuzz/specs.py), renders each, lints the
script (ruff E,F,W,B,ARG and black --check, defaults) and trains it beside Lightning 2.6.6 or 1.9.5
(tests/fuzz/check.py). No example may fail. The long profile is `python -m tests.fuzz --examples N --seed S`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.check import Fuzzer, Outcome, compare, lint, refusal, venv195_python
from tests.fuzz.finds import FINDS
from tests.fuzz.specs import Draw
from tests.harness import case_ids

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

QUICK_EXAMPLES = 24
QUICK_SEED = 20261214


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory):
    if venv195_python() is None and os.environ.get("CI"):
        pytest.fail("no Lightning 1.9.5 venv: CI must build it with `.ci/setup --lightning-1.9.5`")
    fuzzer = Fuzzer(tmp_path_factory.mktemp("fuzz"), seed_era=venv195_python() is not None)
    yield fuzzer
    fuzzer.close()


def test_quick_profile(fuzzer: Fuzzer) -> None:
    from tests.fuzz.__main__ import explore

    outcomes: list[tuple[Draw, Outcome]] = []
    explore(fuzzer, QUICK_EXAMPLES, QUICK_SEED, fuzzer.seed_era is not None, lambda d, o: outcomes.append((d, o)))
    failed = [(draw, outcome) for draw, outcome in outcomes if outcome.kind == "failed"]
    report = "\n\n".join(f"{d.reference} {d.spec}\n  " + "\n  ".join(o.why[:30]) for d, o in failed)
    assert not failed, f"{len(failed)} of {len(outcomes)} drawn specs failed:\n{report}"
    kinds = [outcome.kind for _, outcome in outcomes]
    # a fuzzer that only ever refuses checks nothing: most draws must train on both sides
    assert kinds.count("passed") >= len(kinds) // 2, kinds


@pytest.mark.parametrize("find", FINDS, ids=case_ids(FINDS))
def test_find(find, fuzzer: Fuzzer) -> None:
    """What long runs found, fixed: each a named case that must now pass (or raise as Lightning does)."""
    draw = Draw(find.spec["spec"], find.spec["reference"], find.spec.get("code", ""))
    if draw.reference == "1.9.5" and fuzzer.seed_era is None:
        pytest.skip("no Lightning 1.9.5 venv: run `bash .ci/setup --lightning-1.9.5`")
    outcome = fuzzer.check(draw)
    assert outcome.kind == find.spec.get("expect", "passed"), "\n".join(outcome.why)


# --- the checker's own tests ------------------------------------------------------------------------------------


def test_drawn_code_compiles_and_reaches_every_hook() -> None:
    """tests/fuzz/code.py draws module files that Python compiles, and over a few dozen draws every hook it
    knows, each factor's kind of read (direct, getattr, a helper, logged metrics, random state), a data module and
    a callback."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as seeded

    from tests.fuzz.code import drawn_code

    texts: list[str] = []

    @seeded(QUICK_SEED)
    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(drawn_code())
    def one(code) -> None:
        text, module, data, callback = code
        compile(text, "drawn.py", "exec")
        assert f"class {module}(LitRegression):" in text
        assert data is None or f"class {data}(RegressionData):" in text
        assert callback is None or f"class {callback}(Callback):" in text
        texts.append(text)

    one()
    seen = "\n".join(texts)
    for hook in ("setup", "training_step", "on_train_batch_end", "on_before_optimizer_step", "optimizer_step",
                 "configure_gradient_clipping", "on_train_batch_start", "on_after_batch_transfer",
                 "on_before_batch_transfer", "train_dataloader", "on_validation_epoch_end", "on_train_epoch_end",
                 "on_validation_end"):  # fmt: skip
        assert f"    def {hook}(self" in seen, hook
    for read in ("self.trainer.is_last_batch", 'getattr(self.trainer, "global_step")', "step_scale(self.trainer",
                 "callback_metrics.get(", "torch.rand(())", "torch.randn_like(x)", "self.noise",
                 "class DrawnData(RegressionData):"):  # fmt: skip
        assert read in seen, read


def result(**changes) -> dict:
    base = {
        "state_dict": {"w": torch.ones(2)},
        "records": {"val_points": [(0, 0, True)], "lrs": [[0.1]], "optimizer_steps": 3, "final": {"global_step": 3}},
        "steps": 3,
        "error": None,
        "checkpoints": [],
        "logs": [{"path": "metrics.csv", "rows": [["epoch", "loss"], ["0", "0.5"]]}],
    }
    return {**base, **changes}


SIDES = {"reference": Path("/nonexistent/reference"), "script": Path("/nonexistent/script")}


def test_compare_passes_the_same_run() -> None:
    assert compare(result(), result(), "2.x", SIDES).kind == "passed"


@pytest.mark.parametrize(
    "changes",
    [
        {"state_dict": {"w": torch.tensor([1.0, 1.0 + 2**-20])}},
        {"state_dict": {"w": torch.ones(2, dtype=torch.float64)}},
        {"records": {"val_points": [(0, 1, True)], "lrs": [[0.1]], "optimizer_steps": 3, "final": {"global_step": 3}}},
        {"records": {"val_points": [(0, 0, True)], "lrs": [[0.2]], "optimizer_steps": 3, "final": {"global_step": 3}}},
        {"steps": 4},
        {"logs": [{"path": "metrics.csv", "rows": [["epoch", "loss"], ["0", "0.50"]]}]},
        {"checkpoints": [{"path": "checkpoints/epoch=0-step=3.ckpt", "link": None, "keys": []}]},
        {"error": {"type": "ValueError", "builtins": ["ValueError"], "builtin": "ValueError", "message": "x"}},
    ],
    ids=["weight", "dtype", "val_point", "lr", "steps", "csv_cell", "checkpoint_file", "one_side_raised"],
)
def test_compare_catches_a_difference(changes: dict) -> None:
    assert compare(result(), result(**changes), "2.x", SIDES).kind == "failed"


def error(type_: str, builtins: list[str], message: str = "the monitored metric is missing") -> dict:
    return {"type": type_, "builtins": builtins, "builtin": builtins[0], "message": message}


def test_errors_compare_by_builtin_message_and_step() -> None:
    lightning = result(error=error("MisconfigurationException", ["Exception", "BaseException", "object"]))
    same = result(error=error("RuntimeError", ["RuntimeError", "Exception", "BaseException", "object"]))
    assert compare(lightning, same, "2.x", SIDES).kind == "raised"
    other_message = result(error=error("RuntimeError", ["RuntimeError", "Exception"], "something else"))
    assert compare(lightning, other_message, "2.x", SIDES).kind == "failed"
    later = result(error=same["error"], steps=5)
    assert compare(lightning, later, "2.x", SIDES).kind == "failed"
    value_error = result(error=error("ValueError", ["ValueError", "Exception"], "bad"))
    keyboard = result(error=error("KeyboardInterrupt", ["KeyboardInterrupt", "BaseException"], "bad"))
    assert compare(value_error, keyboard, "2.x", SIDES).kind == "failed"


def test_refusal_must_say_why() -> None:
    assert refusal(["loopgen: error: trainer.precision (line 3): not supported by loopgen"]).kind == "failed"
    assert (
        refusal(["loopgen: error: trainer.precision (line 3): bf16-true is not supported by loopgen"]).kind == "failed"
    )
    assert refusal(["Traceback (most recent call last):"]).kind == "failed"
    assert refusal([]).kind == "failed"
    reasoned = "loopgen: error: trainer.profiler (line 3): XLAProfiler profiles XLA devices; use simple or advanced"
    assert refusal([reasoned]).kind == "refused"


def test_lint_finds_what_ruff_and_black_find(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text('def main(model):\n    return model\n\n\nif __name__ == "__main__":\n    main(None)\n')
    assert lint(clean) == []
    unused = tmp_path / "unused.py"
    unused.write_text("def summary(model, device):\n    return model\n")
    assert any("ARG001" in finding for finding in lint(unused))
    long_line = tmp_path / "long.py"
    long_line.write_text("# " + "x" * 100 + "\n")
    assert any("E501" in finding for finding in lint(long_line))
    unformatted = tmp_path / "unformatted.py"
    unformatted.write_text("x = [1,2]\n")
    assert any("black" in finding for finding in lint(unformatted))
