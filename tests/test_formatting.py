"""Which black configuration formats a script, and how its [tool.black] options become black's Mode."""

from __future__ import annotations

from pathlib import Path

import black
import pytest

from loopgen.errors import LoopgenError
from loopgen.render.formatting import DEFAULTS, black_mode, find_config


def pyproject(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").write_text(text)
    return directory / "pyproject.toml"


def test_without_configuration_black_defaults(tmp_path):
    assert find_config(tmp_path / "no" / "such" / "dir") == DEFAULTS
    assert black_mode(DEFAULTS) == black.Mode()
    assert black_mode(DEFAULTS).line_length == 88


def test_search_stops_where_black_finds_the_project_root(tmp_path):
    """As black does: at a pyproject.toml with [tool.black], or at a .git or .hg directory."""
    outer = pyproject(tmp_path, "[tool.black]\nline-length = 60\n")
    pyproject(tmp_path / "a", '[project]\nname = "a"\n')
    assert find_config(tmp_path / "a" / "b").path == outer
    (tmp_path / "a" / ".git").mkdir()
    assert find_config(tmp_path / "a" / "b").path == tmp_path / "a" / "pyproject.toml"
    assert black_mode(find_config(tmp_path / "a")) == black.Mode()
    (tmp_path / "c" / ".hg").mkdir(parents=True)
    assert find_config(tmp_path / "c") == DEFAULTS


def test_options_that_change_formatting(tmp_path):
    config = find_config(
        pyproject(
            tmp_path,
            "[tool.black]\n"
            "line-length = 99\n"
            "target-version = ['py310', 'py311']\n"
            "skip-string-normalization = true\n"
            "skip_magic_trailing_comma = true\n"
            "preview = true\n"
            "enable-unstable-feature = ['string_processing']\n"
            "exclude = 'ignored'\n",
        ).parent
    )
    mode = black_mode(config)
    assert mode.line_length == 99
    assert mode.target_versions == {black.TargetVersion.PY310, black.TargetVersion.PY311}
    assert not mode.string_normalization and not mode.magic_trailing_comma
    assert mode.preview and mode.enabled_features == {black.Preview.string_processing}


def test_target_versions_inferred_from_requires_python(tmp_path):
    config = find_config(pyproject(tmp_path, '[project]\nrequires-python = ">=3.12"\n\n[tool.black]\n').parent)
    assert black.TargetVersion.PY312 in black_mode(config).target_versions
    assert black.TargetVersion.PY311 not in black_mode(config).target_versions


def test_key_follows_the_file_content(tmp_path):
    path = pyproject(tmp_path, "[tool.black]\nline-length = 60\n")
    first = find_config(tmp_path).key()
    path.write_text("[tool.black]\nline-length = 61\n")
    assert find_config(tmp_path).key() not in (first, DEFAULTS.key())
    assert black.__version__ in first


@pytest.mark.parametrize(
    "text, message",
    [
        ("[tool.black\n", "not valid TOML"),
        ("[tool.black]\nline-length = 6.5\n", "[tool.black] line-length: '6.5' is not a valid integer"),
        ("[tool.black]\npreview = 'maybe'\n", "[tool.black] preview:"),
        ("[tool.black]\ntarget-version = 'py311'\n", "[tool.black] target-version: must be a list"),
        ("[tool.black]\nline-length = [1]\n", "[tool.black] line-length: must be a single value"),
    ],
)
def test_bad_configuration_is_an_input_error(tmp_path, text, message):
    path = pyproject(tmp_path, text)
    with pytest.raises(LoopgenError) as error:
        black_mode(find_config(tmp_path))
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)
    assert "\n" not in str(error.value)
