"""How a rendered script is formatted: by black, configured as the project it is written into.

The configuration is the one black itself would use for a file in the script's directory: black's project
root is the nearest directory, from there upward, that holds a pyproject.toml with a [tool.black] table (or a
.git or .hg, where the search stops), and that root's pyproject.toml is read with black's own parser, so option
spellings, and target versions inferred from `requires-python`, are black's. Without one, black's defaults
(line length 88). Black's user-level configuration (~/.config/black) is not read: a spec renders the same on
every machine. So `black --check` in the project leaves a rendered script unchanged.

Of [tool.black], the options that change formatting are honoured: line-length, target-version,
skip-string-normalization, skip-magic-trailing-comma, preview, unstable, enable-unstable-feature, pyi and
skip-source-first-line. The others (include/exclude, check, quiet, ...) choose files or output, and are ignored,
as black ignores unknown keys. A pyproject.toml that is not valid TOML, or a bad value, is an input error.

Finding the configuration needs only tomllib; black is imported when a script is formatted, so a render found
in the cache never imports it. `BlackConfig.key` is what the cache keys on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopgen.errors import LoopgenError, Problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # black depends on tomli before Python 3.11
    import tomli as tomllib

if TYPE_CHECKING:
    import black
    import click

PYPROJECT = "pyproject.toml"


@dataclass(frozen=True)
class BlackConfig:
    """The pyproject.toml that configures black for a script, and its bytes; no path: black's defaults."""

    path: Path | None = None
    content: bytes = b""

    def key(self) -> str:
        """The installed black and the file's content: a change to either formats a script differently."""
        content = hashlib.sha256(self.content).hexdigest() if self.path is not None else "defaults"
        return f"black {_black_version()} {content}"


DEFAULTS = BlackConfig()


def find_config(directory: Path) -> BlackConfig:
    """The configuration for a script written into `directory`, found as black finds its project root."""
    start = Path(directory).resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists() or (folder / ".hg").is_dir() or _has_black_table(folder / PYPROJECT):
            break
    path = folder / PYPROJECT
    if not path.is_file():
        return DEFAULTS
    _has_black_table(path)  # the file black would read must at least be valid TOML
    return BlackConfig(path, _read(path))


def _has_black_table(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        document = tomllib.loads(_read(path).decode("utf-8"))
    except ValueError as error:  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        raise _error(path, f"not valid TOML: {error}") from None
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise _error(path, "[tool] is not a table")
    if "black" in tool and not isinstance(tool["black"], dict):
        raise _error(path, "[tool.black] is not a table")
    return "black" in tool


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise _error(path, f"cannot read: {error.strerror}") from None


def _error(path: Path, message: str) -> LoopgenError:
    return LoopgenError(Problem(str(path), message))


def _black_version() -> str:
    try:
        from _black_version import version  # black's own version module: cheaper than package metadata
    except ImportError:
        from importlib.metadata import version as distribution_version

        return distribution_version("black")
    return version


def format_script(text: str, config: BlackConfig = DEFAULTS) -> str:
    """`text` formatted by black as `config` says. Text black cannot parse is loopgen's bug, not the user's."""
    import black

    mode = black_mode(config)
    try:
        return black.format_str(text, mode=mode)
    except black.InvalidInput as error:
        raise RuntimeError(f"loopgen produced a script black cannot parse: {error}\n{text}") from error


def black_mode(config: BlackConfig) -> black.Mode:
    """black's Mode for `config`, built from its [tool.black] as black's command line builds it."""
    import black

    if config.path is None:
        return black.Mode()
    try:
        options = black.files.parse_pyproject_toml(str(config.path))
    except (OSError, ValueError) as error:
        raise _error(config.path, f"cannot read: {error}") from None
    return _mode(options, config.path)


def _mode(options: dict[str, Any], path: Path) -> black.Mode:
    import black
    import click

    def flag(key: str) -> bool:
        return _option(options, key, click.BOOL, False, path)

    def choices(key: str, names: list[str]) -> list[str]:
        values = options.get(key, [])
        if not isinstance(values, list):
            raise _error(path, f"[tool.black] {_spelling(key)}: must be a list")
        return [_convert(str(value), click.Choice(names), key, path) for value in values]

    target_versions = choices("target_version", [v.name.lower() for v in black.TargetVersion])
    settings: dict[str, Any] = {
        "line_length": _option(options, "line_length", click.INT, black.DEFAULT_LINE_LENGTH, path),
        "target_versions": {black.TargetVersion[name.upper()] for name in target_versions},
        "string_normalization": not flag("skip_string_normalization"),
        "magic_trailing_comma": not flag("skip_magic_trailing_comma"),
        "preview": flag("preview"),
        "is_pyi": flag("pyi"),
        "skip_source_first_line": flag("skip_source_first_line"),
    }
    fields = {field.name for field in dataclasses.fields(black.Mode)}
    if "unstable" in fields:
        settings["unstable"] = flag("unstable")
    if "enabled_features" in fields:
        features = choices("enable_unstable_feature", [p.name for p in black.Preview])
        if features and not (settings["preview"] or settings.get("unstable")):
            raise _error(path, "[tool.black] enable-unstable-feature: requires preview = true")
        settings["enabled_features"] = {black.Preview[name] for name in features}
    return black.Mode(**settings)


def _option(options: dict[str, Any], key: str, kind: click.ParamType, default: Any, path: Path) -> Any:
    if key not in options:
        return default
    if isinstance(options[key], (list, dict)):
        raise _error(path, f"[tool.black] {_spelling(key)}: must be a single value")
    return _convert(str(options[key]), kind, key, path)  # black hands its config to click as strings


def _convert(value: str, kind: click.ParamType, key: str, path: Path) -> Any:
    import click

    try:
        return kind.convert(value, None, None)
    except click.BadParameter as error:
        raise _error(path, f"[tool.black] {_spelling(key)}: {error.message}") from None


def _spelling(key: str) -> str:
    return key.replace("_", "-")
