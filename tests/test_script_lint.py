"""Every script loopgen renders is lint-clean: `ruff check --isolated --select E,F,W,B,ARG` and `black --check`
(black's defaults, line length 88) find nothing in it, whatever the spec.

The specs are tests/lint_sweep.py's: its QUICK selection by default (the fewest specs that reach every template
line of the full sweep), all of them with LOOPGEN_LINT_SWEEP=full (minutes: `python -m tests.lint_sweep` prints the
same findings). Each finding names its spec.
"""

from __future__ import annotations

import os

from tests import lint_sweep
from tests.harness import ROOT

RECHOOSE = "run `python -m tests.lint_sweep --choose` and update QUICK"


def test_every_rendered_script_is_lint_clean(tmp_path, monkeypatch):
    """Rendered from the repository root (where the specs' `tests.` and `examples.` modules are found), written
    where black's defaults apply."""
    monkeypatch.chdir(ROOT)
    paths = lint_sweep.write_specs(tmp_path)
    quick = os.environ.get("LOOPGEN_LINT_SWEEP") != "full"
    if quick:
        missing = [name for name in lint_sweep.QUICK if name not in paths]
        assert not missing, f"specs of lint_sweep.QUICK no longer exist ({RECHOOSE}): {missing}"
        paths = {name: paths[name] for name in lint_sweep.QUICK}
    named, refused = lint_sweep.render_all(paths, tmp_path / "scripts")
    assert not (quick and refused), f"specs of lint_sweep.QUICK no longer render ({RECHOOSE}): {refused}"
    assert len(named) > len(paths) // 2, f"too few specs render; refused: {refused}"
    found = lint_sweep.findings(tmp_path / "scripts", named)
    assert not found, f"{len(found)} findings in {len(named)} scripts:\n" + "\n".join(found)


def test_no_unused_numpy_without_a_seed_or_a_sanity_check(tmp_path, monkeypatch):
    """main() looks numpy up only to seed it and to keep its state across the sanity check: a run with neither
    (but with the checkpoints, logger and bar that import sys) has no unused `numpy` variable."""
    monkeypatch.chdir(ROOT)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "seed_everything: false\n"
        "model:\n  class_path: examples.lightning_models.LitClassifier\n"
        "trainer:\n  accelerator: cpu\n  max_epochs: 1\n  num_sanity_val_steps: 0\n",
        encoding="utf-8",
    )
    named, refused = lint_sweep.render_all({"no_seed_no_sanity": spec}, tmp_path / "scripts")
    assert not refused
    assert not lint_sweep.findings(tmp_path / "scripts", named)
    assert "# numpy is seeded" not in (tmp_path / "scripts" / "script_0.py").read_text(encoding="utf-8")
