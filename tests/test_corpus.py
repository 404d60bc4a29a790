"""The corpus of real usage (tests/corpus): each case trains under Lightning's Trainer and under the rendered
script, with the same weights, checkpoint files and logs; or loopgen refuses it at render time, for the reason the
case names. None may render and then crash or train differently."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.corpus.cases import CorpusCase, all_cases, all_findings
from tests.harness import case_ids
from tests.helpers import render

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

CASES = all_cases()
FINDINGS = all_findings()


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_corpus_case(case: CorpusCase, runner, tmp_path: Path) -> None:
    check_case(case, runner, tmp_path)


@pytest.mark.skipif(not os.environ.get("LOOPGEN_CORPUS_FINDINGS"), reason="the to-do list: LOOPGEN_CORPUS_FINDINGS=1")
@pytest.mark.parametrize("case", FINDINGS, ids=case_ids(FINDINGS))
def test_a_finding_still_differs(case: CorpusCase, runner, tmp_path: Path) -> None:
    """What the corpus found and loopgen does not serve yet (run outside CI, with LOOPGEN_CORPUS_FINDINGS=1): each
    still differs from Lightning (or crashes, or is refused for a wrong reason). One that passes has been fixed: move
    it to its module's CASES."""
    with pytest.raises((AssertionError, pytest.fail.Exception, LoopgenError)):
        check_case(case, runner, tmp_path)


def check_case(case: CorpusCase, runner, tmp_path: Path) -> None:
    from tests.parity.runner import loopgen_spec
    from tests.parity.test_parity import checkpoint_differences, log_differences, train_both

    if case.refused is not None:
        with pytest.raises(LoopgenError, match=re.escape(case.refused)):
            render(loopgen_spec(case.spec), tmp_path)
        return
    lightning, script = train_both(runner, case.spec, tmp_path)
    ours, theirs = script["state_dict"], lightning["state_dict"]
    assert ours.keys() == theirs.keys()
    found = [f"weight {name} differs" for name in theirs if not torch.equal(theirs[name], ours[name])]
    if lightning["records"] != script["records"]:
        found.append(f"records: Lightning {lightning['records']!r}, script {script['records']!r}")
    found += checkpoint_differences(lightning.get("checkpoints"), script.get("checkpoints"))
    found += log_differences(lightning.get("logs"), script.get("logs"))
    assert not found, f"{case.id} ({case.pattern}):\n" + "\n".join(found)


def test_every_case_names_its_pattern_and_what_was_studied() -> None:
    assert len(CASES) >= 1
    assert not {c.id for c in CASES} & {c.id for c in FINDINGS}
    for case in CASES + FINDINGS:
        assert case.pattern and ": " in case.studied, case.id
