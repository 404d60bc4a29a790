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
    """One line: the --debug command that shows the traceback, exactly as given, and what to report it with (no
    address: there is none to send it to)."""
    from loopgen import __version__, cli

    def broken(args):
        raise KeyError("oops")

    monkeypatch.setattr(cli, "_schema", broken)
    monkeypatch.setattr(cli, "_render", broken)
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/loopgen"])
    assert cli.main(["schema"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (KeyError: 'oops')" in err
    assert "Report it with the traceback that `loopgen --debug schema` prints, the spec" in err
    assert f"loopgen's version ({__version__})" in err and "http" not in err and "Traceback" not in err
    argv = ["render", "my spec.yaml", "-c", "exp.yaml", "--trainer.max_epochs=3", "-o", "train.py"]
    assert cli.main(argv) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "`loopgen --debug render 'my spec.yaml' -c exp.yaml --trainer.max_epochs=3 -o train.py`" in err
    monkeypatch.setattr(sys, "argv", ["/site-packages/loopgen/__main__.py"])  # python -m loopgen
    assert cli.main(["schema"]) == cli.EXIT_INTERNAL
    assert "`python -m loopgen --debug schema`" in capsys.readouterr().err
    assert cli.main(["--debug", "schema"]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err.splitlines()[-1]
    assert "Report it with the traceback above" in err.splitlines()[-1] and "--debug" not in err.splitlines()[-1]


BROKEN = "import torch\n\n\nclass Broken(:\n    pass\n"


@pytest.mark.parametrize(
    "key, entry",
    [
        ("model", {"class_path": "proj.broken.Broken"}),
        ("data", {"class_path": "proj.broken.Broken"}),
        ("callback", {"class_path": "proj.broken.Broken"}),
        ("object", {"class_path": "proj.models.Tiny", "init_args": {}}),
    ],
)
def test_a_module_with_a_syntax_error_is_one_line_naming_its_file_and_line(project, key, entry):
    """Once an internal error (exit 3: the model's facts were None after the syntax error was recorded)."""
    (project / "proj" / "broken.py").write_text(BROKEN)
    spec = dict(SPEC)
    if key == "model":
        spec["model"] = entry
    elif key == "data":
        spec["data"] = entry
    elif key == "callback":
        spec["trainer"] = {**SPEC["trainer"], "callbacks": [entry]}
    else:
        (project / "proj" / "models.py").write_text(
            MODEL.replace("def __init__(self):", "def __init__(self, net=None):")
        )
        spec["model"] = {"class_path": "proj.models.Tiny", "init_args": {"net": {"class_path": "proj.broken.Broken"}}}
    write_spec(project, spec)
    result = loopgen("render", "spec.yaml", cwd=project)
    one_error(result, f"{project / 'proj' / 'broken.py'} (line 4): syntax error: invalid syntax (reading it for ")


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
