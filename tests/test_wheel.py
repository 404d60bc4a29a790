"""The wheel ships the templates: installed into a fresh venv outside the source tree, it renders a spec."""

from __future__ import annotations

import subprocess
import sys
import venv

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def test_wheel_installs_and_renders_outside_the_source_tree(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("loopgen-*.whl")

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    project = tmp_path / "elsewhere"
    (project / "examples").mkdir(parents=True)
    for name in ("__init__.py", "models.py", "data.py", "classifier.yaml"):
        (project / "examples" / name).write_bytes((ROOT / "examples" / name).read_bytes())
    render = subprocess.run(
        [str(env_dir / "bin" / "loopgen"), "render", "examples/classifier.yaml"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert render.returncode == 0, render.stderr
    assert "def main():" in render.stdout
    located = subprocess.run(
        [str(python), "-c", "import loopgen.render.script as r; print(r.template_dir())"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert str(env_dir) in located.stdout, "templates must come from the installed wheel, not the source tree"
