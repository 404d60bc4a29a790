"""The corpus's cases, gathered from its modules (see tests/corpus/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.harness import Case


@dataclass(frozen=True)
class CorpusCase(Case):
    """A spec both sides train, the pattern of Lightning use it stands for, and the public module studied for it
    ("owner/repo: path"). `refused`: words of the render-time refusal, when loopgen refuses the case."""

    pattern: str = ""
    studied: str = ""
    refused: str | None = None


def corpus_case(id: str, module: str, model: str, *, pattern: str, studied: str, model_init: dict | None = None,
                data: str | None = None, data_init: dict | None = None, seed: int = 7,
                refused: str | None = None, **trainer: Any) -> CorpusCase:  # fmt: skip
    """A case whose classes are in tests/corpus/<module>.py; `trainer`: the Trainer flags (LightningCLI's)."""
    spec: dict[str, Any] = {"seed_everything": seed, "model": {"class_path": f"tests.corpus.{module}.{model}"}}
    if model_init:
        spec["model"]["init_args"] = model_init
    if data:
        spec["data"] = {"class_path": f"tests.corpus.{module}.{data}", "init_args": data_init or {}}
    spec["trainer"] = {"enable_progress_bar": False, "enable_model_summary": False, "logger": False,
                       "enable_checkpointing": False, **trainer}  # fmt: skip
    return CorpusCase(id, spec, pattern=pattern, studied=studied, refused=refused)


def all_cases() -> list[CorpusCase]:
    from tests.corpus import domains, libraries, templates, tutorials

    return [*tutorials.CASES, *templates.CASES, *domains.CASES, *libraries.CASES]


def all_findings() -> list[CorpusCase]:
    """Cases loopgen still gets wrong (a different run, a crash after rendering, a wrong refusal): each module's
    FINDINGS, with what differs in the comment above each. tests/test_corpus.py expects each to fail."""
    from tests.corpus import domains, libraries, templates, tutorials

    modules = (tutorials, templates, domains, libraries)
    return [finding for module in modules for finding in getattr(module, "FINDINGS", [])]
