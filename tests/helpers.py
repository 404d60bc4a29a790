"""Shared test helpers: render specs, run generated scripts in a fresh interpreter.

ROOT and env_with_root come from tests/harness.py (which the Lightning runners share) and are re-exported here.
"""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from tests.harness import ROOT, env_with_root

__all__ = ["ROOT", "code_of", "env_with_root", "lightning_log_lines", "render", "train_script", "write_spec"]


def write_spec(directory: Path, spec: dict, name: str = "spec.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def render(spec: Path | dict, tmp_path: Path | None = None, script_name: str = "train.py") -> str:
    from loopgen.pipeline import render_spec

    if isinstance(spec, dict):
        assert tmp_path is not None
        spec = write_spec(tmp_path, spec)
    text, _ = render_spec(spec, script_name)
    return text


def code_of(script: str) -> str:
    """The script's code: its text without the header docstring and the guards' USER_CODE table, which name every
    part of the user's classes the render read (a hook the script never calls among them)."""
    tree = ast.parse(script)
    lines = script.splitlines(keepends=True)
    dropped = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [ast.unparse(t) for t in node.targets] == ["USER_CODE"]
        or isinstance(node, ast.Expr)
        and node is tree.body[0]
        and isinstance(node.value, ast.Constant)
    ]
    for node in reversed(dropped):
        del lines[node.lineno - 1 : node.end_lineno]
    return "".join(lines)


def train_script(script: Path, out: Path, timeout: int = 300, cwd: Path | None = None) -> dict:
    """Run the script's main() in a fresh interpreter (in `cwd`: where its files go); return {"state_dict",
    "records"}."""
    import torch

    code = textwrap.dedent(f"""
        import runpy, torch
        model = runpy.run_path({str(script)!r})["main"]()
        torch.save({{"state_dict": model.state_dict(), "records": getattr(model, "records", None)}}, {str(out)!r})
        """)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env_with_root(), capture_output=True, text=True, timeout=timeout, cwd=cwd
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return torch.load(out, weights_only=False)


def run_parity_side(
    side: str, spec: dict, directory: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """One side ("lightning" or "loopgen") of a spec, trained by tests/parity/runner.py in a fresh process, in
    `directory` (its spec.yaml written there, the results in out.pt)."""
    directory.mkdir(parents=True, exist_ok=True)
    spec_path = write_spec(directory, spec)
    return subprocess.run(
        [sys.executable, "-m", "tests.parity.runner", side, str(spec_path), str(directory / "out.pt")],
        cwd=ROOT,
        env=env or env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def train_parity_side(side: str, spec: dict, directory: Path, env: dict[str, str] | None = None) -> dict:
    """run_parity_side, which must succeed; what it saved ({"state_dict", "records", "checkpoints", ...})."""
    import torch

    result = run_parity_side(side, spec, directory, env)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return torch.load(directory / "out.pt", weights_only=False)


@contextmanager
def lightning_log_lines(name: str) -> Iterator[list[str]]:
    """The messages Lightning's logger `name` emits inside the block (Lightning's package logger does not pass them
    on to the root logger, where caplog listens)."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
