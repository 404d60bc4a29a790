"""The command line never shows a traceback for a user's mistake: output paths, closed pipes, internal errors;
written files keep their mode; `check` says what changed; `diff` exits like diff; `run --keep`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import env_with_root, write_spec
from tests.test_cli import MODEL, SPEC


def loopgen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "loopgen", *args], cwd=cwd, env=env_with_root(), capture_output=True, text=True
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "models.py").write_text(MODEL)
    write_spec(tmp_path, SPEC)
    return tmp_path


def one_error(result: subprocess.CompletedProcess, *expected: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loopgen: error: "), result.stderr
    for text in expected:
        assert text in lines[0]


@pytest.mark.parametrize(
    "output, expected",
    [
        ("sub", ["-o sub", "is a directory"]),
        ("missing/train.py", ["directory missing does not exist"]),
        ("spec.yaml", ["spec.yaml", "the spec"]),
        ("proj/models.py", ["a module the script is made from"]),
        ("proj/__init__.py/x.py", ["is not a directory"]),
    ],
    ids=["directory", "missing-directory", "the-spec", "an-input-module", "file-as-directory"],
)
def test_bad_output_paths_are_one_line_errors_and_write_nothing(project, output, expected):
    (project / "sub").mkdir()
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    one_error(loopgen("render", "spec.yaml", "-o", output, cwd=project), *expected)
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_places(project):
    locked = project / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    one_error(loopgen("render", "spec.yaml", "-o", "locked/train.py", cwd=project), "cannot write in locked")
    (project / "ro.py").write_text("x")
    (project / "ro.py").chmod(0o444)
    one_error(loopgen("render", "spec.yaml", "-o", "ro.py", cwd=project), "read-only")


def test_written_files_keep_their_mode(project):
    old = os.umask(0o027)
    try:
        assert loopgen("render", "spec.yaml", "-o", "new.py", cwd=project).returncode == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((project / "new.py").stat().st_mode) == 0o640
    (project / "exec.py").write_text("old")
    (project / "exec.py").chmod(0o755)
    assert loopgen("render", "spec.yaml", "-o", "exec.py", cwd=project).returncode == 0
    assert stat.S_IMODE((project / "exec.py").stat().st_mode) == 0o755
    assert (project / "exec.py").read_text() != "old"


@pytest.mark.parametrize("args", [["schema"], ["diff", "spec.yaml", "other.yaml"], ["render", "spec.yaml"]])
def test_a_closed_pipe_ends_quietly(project, args):
    write_spec(project, {**SPEC, "trainer": {**SPEC["trainer"], "max_epochs": 5}}, "other.yaml")
    process = subprocess.Popen(
        [sys.executable, "-m", "loopgen", *args],
        cwd=project,
        env=env_with_root(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader is gone before loopgen writes: `loopgen ... | head` after head exits
    stderr = process.stderr.read().decode()
    assert process.wait() == 141 and stderr == ""


def test_an_internal_error_is_one_line_unless_debug(monkeypatch, capsys):
    from loopgen import cli

    def broken(args):
        raise KeyError("oops")

    monkeypatch.setattr(cli, "_schema", broken)
    assert cli.main(["schema"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (KeyError: 'oops')" in err and "--debug" in err
    assert "Traceback" not in err
    assert cli.main(["--debug", "schema"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err.splitlines()[-1]


def test_check_says_what_changed(project):
    from loopgen.render.script import stamp

    assert loopgen("render", "spec.yaml", "-o", "train.py", cwd=project).returncode == 0
    script = project / "train.py"
    rendered = script.read_text()
    assert loopgen("check", "spec.yaml", "train.py", cwd=project).returncode == 0

    script.write_text(rendered.replace("MAX_EPOCHS = 2", "MAX_EPOCHS = 3"))
    result = loopgen("check", "spec.yaml", "train.py", cwd=project)
    assert result.returncode == 1 and "+MAX_EPOCHS = 2" in result.stdout
    assert "edited by hand" in result.stderr and "spec changed" not in result.stderr

    write_spec(project, {**SPEC, "trainer": {**SPEC["trainer"], "max_epochs": 4}})
    script.write_text(rendered)
    result = loopgen("check", "spec.yaml", "train.py", cwd=project)
    assert result.returncode == 1 and "the spec changed" in result.stderr and "by hand" not in result.stderr
    assert "+MAX_EPOCHS = 4" in result.stdout

    write_spec(project, SPEC)
    lines = rendered.splitlines(keepends=True)
    older = [
        "templates sha256: " + "0" * 64 + "\n" if line.startswith("templates sha256: ") else line for line in lines
    ]
    older = [("script sha256: " + "-" * 64 + "\n") if line.startswith("script sha256: ") else line for line in older]
    script.write_text(stamp("".join(older)))  # as an older loopgen's templates would have rendered it
    result = loopgen("check", "spec.yaml", "train.py", cwd=project)
    assert result.returncode == 1 and "loopgen changed (its templates" in result.stderr
    assert "by hand" not in result.stderr and "spec changed" not in result.stderr

    missing = loopgen("check", "spec.yaml", "nope.py", cwd=project)
    one_error(missing, "nope.py: no such file")


def test_diff_exits_like_diff(project):
    write_spec(project, {**SPEC, "trainer": {**SPEC["trainer"], "max_epochs": 5}}, "other.yaml")
    assert loopgen("diff", "spec.yaml", "spec.yaml", cwd=project).returncode == 0
    result = loopgen("diff", "spec.yaml", "other.yaml", cwd=project)
    assert result.returncode == 1 and "+MAX_EPOCHS = 5" in result.stdout


def test_run_keep_keeps_the_script_and_says_where(project):
    result = loopgen("run", "--keep", "kept", "spec.yaml", cwd=project)
    one_error(result, "directory kept does not exist")
    (project / "kept").mkdir()
    result = loopgen("run", "--keep", "kept", "spec.yaml", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "the script is kept at kept/spec.py" in result.stderr
    assert loopgen("check", "spec.yaml", "kept/spec.py", cwd=project).returncode == 0


def test_the_pre_commit_hook_runs_loopgen_check():
    import yaml

    from tests.helpers import ROOT

    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "loopgen-check" and hook["entry"] == "loopgen check" and hook["pass_filenames"] is False
