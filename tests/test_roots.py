"""User modules are found as Python would find them (cwd, the spec's project, src/ layouts, PYTHONPATH, the
interpreter's sys.path with .pth files and editable finders, namespace packages), read as files, and the search
never climbs above the project root."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.source.reader import find_class_source
from loopgen.source.roots import default_roots

CLASS = "class Net:\n    pass\n"


def files(base: Path, tree: dict[str, str]) -> None:
    for name, text in tree.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A bare interpreter path and no PYTHONPATH, so only what a test sets up is found."""
    monkeypatch.setattr(sys, "path", [])
    monkeypatch.delenv("PYTHONPATH", raising=False)
    tmp_path = tmp_path.resolve()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def find(spec: Path, class_path: str) -> Path:
    return find_class_source(class_path, default_roots(spec), where="model.class_path")[1]


def test_the_search_stops_at_the_project_root(isolated):
    files(isolated, {"outer.py": CLASS, "proj/pyproject.toml": "", "proj/inner.py": CLASS, "proj/cfg/s.yaml": ""})
    spec = isolated / "proj" / "cfg" / "s.yaml"
    assert find(spec, "inner.Net") == isolated / "proj" / "inner.py"
    with pytest.raises(LoopgenError, match="cannot find module 'outer'"):
        find(spec, "outer.Net")  # above the project: never read


def test_src_layout_and_pythonpath(isolated, monkeypatch):
    files(isolated, {"proj/.git/HEAD": "", "proj/src/pkg/__init__.py": "", "proj/src/pkg/m.py": CLASS})
    files(isolated, {"elsewhere/lib/tools.py": CLASS, "proj/s.yaml": ""})
    spec = isolated / "proj" / "s.yaml"
    assert find(spec, "pkg.m.Net") == isolated / "proj" / "src" / "pkg" / "m.py"
    monkeypatch.setenv("PYTHONPATH", str(isolated / "elsewhere" / "lib"))
    assert find(spec, "tools.Net") == isolated / "elsewhere" / "lib" / "tools.py"


def test_site_packages_pth_and_editable_finder(isolated, monkeypatch):
    site = isolated / "venv" / "lib" / "site-packages"
    files(isolated, {"s.yaml": "", "venv/lib/site-packages/installed/__init__.py": CLASS})
    files(isolated, {"dev/a/alpha.py": CLASS, "dev/b/src/beta/__init__.py": CLASS})
    files(isolated, {"venv/lib/site-packages/__editable__.a.pth": str(isolated / "dev" / "a") + "\n"})
    finder = f"MAPPING = {{'beta': {str(isolated / 'dev' / 'b' / 'src' / 'beta')!r}}}\n"
    files(isolated, {"venv/lib/site-packages/__editable___beta_0_1_finder.py": finder})
    monkeypatch.setattr(sys, "path", [str(site)])
    spec = isolated / "s.yaml"
    assert find(spec, "installed.Net") == site / "installed" / "__init__.py"
    assert find(spec, "alpha.Net") == isolated / "dev" / "a" / "alpha.py"
    assert find(spec, "beta.Net") == isolated / "dev" / "b" / "src" / "beta" / "__init__.py"


def test_namespace_packages_across_roots(isolated, monkeypatch):
    files(isolated, {"one/ns/first.py": CLASS, "two/ns/second.py": CLASS, "s.yaml": ""})
    monkeypatch.setenv("PYTHONPATH", f"{isolated / 'one'}:{isolated / 'two'}")
    spec = isolated / "s.yaml"
    assert find(spec, "ns.first.Net") == isolated / "one" / "ns" / "first.py"
    assert find(spec, "ns.second.Net") == isolated / "two" / "ns" / "second.py"


def test_torch_and_lightning_are_never_user_code(isolated, monkeypatch):
    files(isolated, {"site/torch/__init__.py": CLASS, "s.yaml": ""})
    monkeypatch.setattr(sys, "path", [str(isolated / "site")])
    with pytest.raises(LoopgenError, match="cannot find module 'torch'"):
        find(isolated / "s.yaml", "torch.Net")


def test_class_path_errors_carry_the_yaml_line(tmp_path, monkeypatch):
    from loopgen.pipeline import render_spec

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text("seed_everything: 1\nmodel:\n  class_path: nowhere.Net\n")
    with pytest.raises(LoopgenError) as raised:
        render_spec(tmp_path / "s.yaml")
    (problem,) = raised.value.problems
    assert problem.where == "model.class_path" and problem.line == 3
