"""A corpus of bad specs (tests/bad_specs/*.yaml), each ending in the problems loopgen must report for it, one
`# error: ...` line per problem, in order (each problem starts with its line; paths relative to the repository).
Rendering each must fail with exactly those problems, every one naming its key and (where the key is in the
spec) its YAML line."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.pipeline import render_spec
from tests.helpers import ROOT

CORPUS = sorted((Path(__file__).parent / "bad_specs").glob("*.yaml"))


def expected(spec: Path) -> list[str]:
    prefix = "# error: "
    return [line[len(prefix) :] for line in spec.read_text().splitlines() if line.startswith(prefix)]


def test_the_corpus_is_large():
    assert len(CORPUS) >= 40 and all(expected(spec) for spec in CORPUS)


@pytest.mark.parametrize("spec", CORPUS, ids=[spec.stem for spec in CORPUS])
def test_bad_spec(spec: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("LOOPGEN_NO_CACHE", "1")
    with pytest.raises(LoopgenError) as raised:
        render_spec(spec.relative_to(ROOT))
    found = [str(problem).replace(f"{ROOT}/", "") for problem in raised.value.problems]
    wanted = expected(spec)
    assert len(found) == len(wanted), found
    for problem, text in zip(found, wanted):
        assert problem.startswith(text), (problem, text)
