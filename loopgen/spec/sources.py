"""Where a spec comes from: one YAML file, or several composed with command-line overrides as LightningCLI
composes them (`-c base.yaml -c exp.yaml --trainer.max_epochs=5 --trainer.callbacks+=EarlyStopping`).

jsonargparse's rules, which LightningCLI's parser follows:
- sources apply in order, later ones win; mappings merge key by key, lists are replaced whole;
- an object (`class_path`/`init_args`) given again with the same class merges its init_args; with another class,
  the earlier init_args the new class takes are kept and the others dropped;
- `--a.b.c=VALUE` (or `--a.b.c VALUE`) sets one key, VALUE read as YAML; on an object `--model.lr` is short for
  `--model.init_args.lr`; `--model=CLASS` changes the class; `--trainer.callbacks+=X` appends to the list and
  `--trainer.callbacks.monitor=...` sets an init_arg of its last entry.

Each key keeps where it was set (`Where`: a file and line, or the argument), so that an error names its source.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from loopgen.errors import LoopgenError, Problem, Where, got

KeyPath = tuple[str | int, ...]  # mapping keys are str, list indexes int

CONFIG_OPTIONS = ("-c", "--config")
TOP_LEVEL = ("seed_everything", "model", "data", "trainer", "optimizer", "lr_scheduler", "ckpt_path", "weights_only")
TOP_LEVEL_KEYS = (*TOP_LEVEL, "loop")  # spec.model.TOP_LEVEL_KEYS (not imported: a cycle)
CLASS_SLOTS = ("model", "data", "optimizer", "lr_scheduler")  # a class path and its init_args
LISTS = ("callbacks", "logger", "plugins")  # trainer flags that `+=` appends to
_BY_NAME = {"optimizer": "torch.optim.", "lr_scheduler": "torch.optim.lr_scheduler."}  # where a bare name is found


def dotted(path: KeyPath) -> str:
    """("trainer", "callbacks", 0, "class_path") -> "trainer.callbacks[0].class_path"."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# ---------------------------------------------------------------------------
# YAML, read as jsonargparse reads it (1e-3 is a float, a date stays a string)


class _Loader(yaml.SafeLoader):
    pass


_FLOAT = "tag:yaml.org,2002:float"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:timestamp", _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.VERBOSE,
    ),
    list("-+0123456789."),
)


@dataclass(frozen=True)
class Document:
    data: Any
    lines: Mapping[KeyPath, int]  # 1-based line of each mapping key and list item
    problems: tuple[Problem, ...]  # duplicate keys


def parse_yaml(text: str, where: str) -> Document:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise LoopgenError(Problem(where, "the spec is empty"))
        lines: dict[KeyPath, int] = {}
        problems: list[Problem] = []
        _walk(node, (), lines, problems, set())  # before constructing: that flattens `<<` merges in place
        data = _construct(loader, node)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        message = " ".join(str(part) for part in (error.context, error.problem) if part)
        raise LoopgenError(Problem(where, f"invalid YAML: {message}", mark.line + 1 if mark else None)) from None
    except yaml.YAMLError as error:
        raise LoopgenError(Problem(where, f"invalid YAML: {error}")) from None
    finally:
        loader.dispose()
    return Document(data, lines, tuple(problems))


def _construct(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """The document's data; an integer longer than Python's string conversion limit is read whole (and refused,
    with its key, as a value the script cannot hold)."""
    import sys

    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else None
    if limit is not None:
        sys.set_int_max_str_digits(0)
    try:
        return loader.construct_document(node)
    finally:
        if limit is not None:
            sys.set_int_max_str_digits(limit)


def _walk(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], problems: list[Problem], active: set[int]) -> None:
    """Record the line of every key path under `node`, and report duplicate keys."""
    if id(node) in active:  # a recursive alias
        return
    active.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line: dict[str, int] = {}
        merges = []
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merges += value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a complex key: refused once constructed
            key, line = key_node.value, key_node.start_mark.line + 1
            if key in first_line:
                problems.append(Problem(dotted((*path, key)), f"duplicate key (first on line {first_line[key]})", line))
                continue
            first_line[key] = line
            lines.setdefault((*path, key), line)
            _walk(value_node, (*path, key), lines, problems, active)
        for merged in merges:  # keys written here win over merged ones, as in YAML
            _walk(merged, path, lines, problems, active)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.setdefault((*path, index), item.start_mark.line + 1)
            _walk(item, (*path, index), lines, problems, active)
    active.discard(id(node))


def read_file(path: Path) -> tuple[bytes, str]:
    """A spec file's bytes and text; a LoopgenError naming it when it cannot be read as UTF-8."""
    where = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise LoopgenError(Problem(where, "no such file")) from None
    except IsADirectoryError:
        raise LoopgenError(Problem(where, "is a directory, not a spec file")) from None
    except OSError as error:
        raise LoopgenError(Problem(where, f"cannot read: {error.strerror or error}")) from None
    try:
        return raw, raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LoopgenError(Problem(where, f"not UTF-8 text ({error.reason} at byte {error.start})")) from None


# ---------------------------------------------------------------------------
# the sources


@dataclass(frozen=True)
class Source:
    """A config file (`path`), or an override: `text` as given on the command line."""

    text: str
    path: Path | None = None
    alone: bool = field(default=False, compare=False)  # a file named without -c (check's, upgrade's SCRIPT may be one)
    # the file's content, when it is not what the file holds now (an earlier version, from git: upgrade renders
    # the spec as it was to find the render a script came from)
    content: bytes | None = field(default=None, compare=False, repr=False)

    def read(self) -> tuple[bytes, str]:
        """The file's bytes and text."""
        assert self.path is not None
        if self.content is None:
            return read_file(self.path)
        return self.content, self.content.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Sources:
    """The config files and overrides a spec is composed of, in the order given."""

    items: tuple[Source, ...]

    @classmethod
    def of(cls, spec: Path | Sources) -> Sources:
        return spec if isinstance(spec, Sources) else cls((Source(str(spec), spec),))

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(item.path for item in self.items if item.path is not None)

    @property
    def path(self) -> Path:
        """The first config file: the spec's directory (where user modules are looked for) is its directory."""
        return self.files[0]

    @property
    def single(self) -> bool:
        """One file and nothing else: a plain spec, whose header and errors are as they always were."""
        return len(self.items) == 1

    @property
    def name(self) -> str:
        """How the script's header names where it came from."""
        if self.single:
            return self.path.name
        files = [path.name for path in self.files]
        overrides = len(self.items) - len(files)
        return " + ".join(files) + (f" and {overrides} override{'s' if overrides > 1 else ''}" if overrides else "")

    def check(self) -> None:
        if not self.files:
            raise LoopgenError("no spec: name a config file (SPEC, or -c FILE); overrides alone have no model")

    def sha256(self) -> str:
        """Of the one file's bytes for a plain spec; else of every source in order (a file by its sha256)."""
        if self.single:
            return hashlib.sha256(self.items[0].read()[0]).hexdigest()
        return hashlib.sha256("\0".join(self.key()).encode()).hexdigest()

    def key(self) -> list[str]:
        """Every source, a file as its name and sha256 (for the render cache and the combined sha256)."""
        return [
            f"{item.path.name}\0{hashlib.sha256(item.read()[0]).hexdigest()}" if item.path else item.text
            for item in self.items
        ]

    def recorded(self, script_dir: Path) -> list[tuple[str, str | None]]:
        """(text, sha256) of each source for the script's header: a file by its path from `script_dir` (the
        script's own directory, which `check` and `upgrade` read it from again), an override as given."""
        out = []
        for item in self.items:
            if item.path is None:
                out.append((item.text, None))
                continue
            sha = hashlib.sha256(item.read()[0]).hexdigest()
            out.append((_relative(item.path, script_dir), sha))
        return out

    def origin(self, script_dir: Path) -> dict[str, Any]:
        """Spec's fields that say where a composed spec came from (loopgen.spec.model.Spec): empty for a plain
        spec, whose header names its one file."""
        if self.single:
            return {}
        return {"name": self.name, "sources": tuple(self.recorded(script_dir)), "render_args": self.command(script_dir)}

    def command(self, script_dir: Path) -> str:
        """The render arguments that compose these sources again, from the script's directory."""
        import shlex

        words = []
        for text, sha in self.recorded(script_dir):
            words += [] if sha is None or not words else ["-c"]
            words.append(shlex.quote(text))
        return " ".join(words)

    # --- composing

    def compose(self, accepts: Callable[[str, str], bool | None] | None = None) -> Document:
        """The composed spec data, the source of each key (plain line numbers for a plain spec), and the files'
        problems. `accepts(class_path, name)`: whether a class takes an init_arg (None: unknown, kept)."""
        self.check()
        data: dict[str, Any] = {}
        lines: dict[KeyPath, int] = {}
        problems: list[Problem] = []
        for index, item in enumerate(self.items):
            order = (index + 1) * 10_000_000
            if item.path is not None:
                document = parse_yaml(item.read()[1], str(item.path))
                if not isinstance(document.data, dict):
                    raise LoopgenError(
                        Problem(
                            str(item.path),
                            f"expected a mapping of top-level keys (model, trainer, ...), {got(document.data)}",
                        )
                    )
                at = (
                    (lambda line: line)
                    if self.single
                    else (lambda line, t=item.text, o=order: Where(o + line, f"{t} line {line}"))
                )
                problems += [Problem(p.where, p.message, at(p.line) if p.line else None) for p in document.problems]
                _merge(
                    data, document.data, (), lines, {path: at(line) for path, line in document.lines.items()}, accepts
                )
            else:
                _override(data, item.text, lines, Where(order, item.text), accepts)
        return Document(data, lines, tuple(problems))


def _relative(path: Path, directory: Path) -> str:
    try:
        return Path(os.path.relpath(path.absolute(), directory.absolute())).as_posix()
    except ValueError:  # another drive
        return str(path.absolute())


# ---------------------------------------------------------------------------
# the command line


def split_arguments(tokens: list[str], own_values: tuple[str, ...]) -> tuple[list[Source], list[str]]:
    """The sources among a command's `tokens` (files named alone or by -c/--config, and --KEY[+]=VALUE overrides of
    the spec's keys), in order, and the tokens left for the command's own options (`own_values`: those of its
    options that take a value). A LightningCLI command line pasted after the command (`fit --config ...`) reads
    the same."""
    sources: list[Source] = []
    rest: list[str] = []
    tokens = list(tokens)
    if tokens[:1] == ["fit"]:
        tokens = tokens[1:]
    elif tokens[:1] and tokens[0] in ("validate", "test", "predict"):
        raise LoopgenError(
            f"{tokens[0]}: loopgen renders the training script (LightningCLI's `fit`); the script runs"
            f" `{tokens[0]}` itself: python train.py {tokens[0]} --ckpt-path PATH"
        )
    index = 0
    while index < len(tokens):
        token = tokens[index]
        name, has_value, value = token.partition("=")
        if token == "--":
            rest += tokens[index:]
            break
        if name in CONFIG_OPTIONS or (token.startswith("-c") and not token.startswith("--") and len(token) > 2):
            if token.startswith("-c") and name not in CONFIG_OPTIONS:
                value, has_value = token[2:], "="
            if not has_value:
                if index + 1 >= len(tokens):
                    raise LoopgenError(f"{token}: expected a config file after it")
                index += 1
                value = tokens[index]
            sources.append(Source(value, Path(value)))
        elif name in own_values:
            rest.append(token)
            if not has_value and index + 1 < len(tokens):
                index += 1
                rest.append(tokens[index])
        elif token.startswith("--") and _key_of(name) is not None:
            if "\n" in token or (not has_value and "\n" in "".join(tokens[index + 1 : index + 2])):
                raise LoopgenError(f"{name}: an override is one line (the script's header records it as one)")
            if not has_value:
                if index + 1 >= len(tokens) or re.match(r"-(?![0-9.])", tokens[index + 1]):
                    raise LoopgenError(f"{token}: expected a value after it (--KEY=VALUE or --KEY VALUE)")
                index += 1
                token = f"{token}={tokens[index]}"
            sources.append(Source(token))
        elif token.startswith("--") and "." in name:
            top = name[2:].split(".")[0]
            from loopgen.errors import did_you_mean

            raise LoopgenError(
                f"{token}: {top} is not a spec key ({', '.join(TOP_LEVEL_KEYS)}){did_you_mean(top, TOP_LEVEL_KEYS)}"
            )
        elif token.startswith("-"):
            rest.append(token)
        else:
            sources.append(Source(token, Path(token), alone=True))
        index += 1
    return sources, rest


def _key_of(option: str) -> list[str] | None:
    """The key path an override option names (`--trainer.callbacks+` -> [trainer, callbacks]), or None."""
    parts = option[2:].removesuffix("+").split(".")
    return parts if parts[0] in TOP_LEVEL_KEYS and all(parts) else None


def read_value(text: str) -> Any:
    """An override's value, read as jsonargparse reads one: YAML, else the text itself."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return text


# ---------------------------------------------------------------------------
# merging


def _merge(
    target: dict[str, Any],
    new: Mapping[str, Any],
    path: KeyPath,
    lines: dict[KeyPath, int],
    new_lines: Mapping[KeyPath, int],
    accepts: Callable[[str, str], bool | None] | None,
) -> None:
    """`new` (a config file's data, with its keys' lines) over `target`, in place."""
    for key, value in new.items():
        at = (*path, key)
        old = target.get(key)
        if _slot(at) and isinstance(value, str) and _is_object(old):
            value = {"class_path": value}
        if isinstance(old, dict) and isinstance(value, dict):
            if _is_object(old) and _is_object(value):
                _change_class(old, value.get("class_path"), at, lines, accepts)
            _merge(old, value, at, lines, new_lines, accepts)
        else:
            _drop(lines, at)
            target[key] = copy.deepcopy(value)
        lines.update({p: line for p, line in new_lines.items() if p[: len(at)] == at})


def _is_object(value: Any) -> bool:
    return isinstance(value, dict) and ("class_path" in value or "init_args" in value)


def _slot(path: KeyPath) -> bool:
    return len(path) == 1 and path[0] in CLASS_SLOTS


def _same_class(a: Any, b: Any) -> bool:
    if a == b or not (isinstance(a, str) and isinstance(b, str)):
        return a == b
    return a.rsplit(".", 1)[-1] == b.rsplit(".", 1)[-1] and ("." not in a or "." not in b)


def _change_class(
    old: dict[str, Any],
    class_path: Any,
    at: KeyPath,
    lines: dict[KeyPath, int],
    accepts: Callable[[str, str], bool | None] | None,
) -> None:
    """An object given a new class: keep the earlier init_args that class takes, as jsonargparse does."""
    if class_path is None or _same_class(old.get("class_path"), class_path):
        return
    old.pop("dict_kwargs", None)
    args = old.get("init_args")
    if isinstance(args, dict) and isinstance(class_path, str):
        for name in list(args):
            if accepts is not None and accepts(class_path, name) is False:
                del args[name]
                _drop(lines, (*at, "init_args", name))


def _drop(lines: dict[KeyPath, int], at: KeyPath) -> None:
    for path in [p for p in lines if p[: len(at)] == at]:
        del lines[path]


def _class_value(slot: str, value: Any, option: str) -> Any:
    """A class named on the command line, as a class_path entry; a bare name found where jsonargparse would
    find it (torch.optim, torch.optim.lr_scheduler, Lightning's callbacks and loggers)."""
    if not isinstance(value, str):
        return value
    if "." not in value:
        from loopgen.spec.support import lightning_callback, lightning_logger, other_lightning_callback

        if slot in _BY_NAME:
            value = _BY_NAME[slot] + value
        elif slot in ("callbacks", "logger"):
            found = (
                (lightning_callback(value) or other_lightning_callback(value))
                if slot == "callbacks"
                else lightning_logger(value)
            )
            if found is None:
                raise LoopgenError(
                    f"{option}: {value} is not one of Lightning's {slot}; give your class's import path (package.module.Class)"
                )
            value = found
        else:
            raise LoopgenError(
                f"{option}: give the class's import path (package.module.{value}): loopgen does not import your code to find a class by name"
            )
    return {"class_path": value}


def _override(
    data: dict[str, Any],
    option: str,
    lines: dict[KeyPath, int],
    at: Where,
    accepts: Callable[[str, str], bool | None] | None,
) -> None:
    """One `--KEY[+]=VALUE` argument over the composed data, in place."""
    name, _, text = option.partition("=")
    append = name.endswith("+")
    parts: list[str] = _key_of(name) or []
    value = read_value(text)
    top = parts[0]

    def record(path: KeyPath, value: Any) -> None:
        _drop(lines, path)
        lines[path] = at
        for key, inner in (
            value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        ):
            record((*path, key), inner)

    if top in CLASS_SLOTS:
        rest = parts[1:]
        if not rest or rest == ["class_path"]:
            new = _class_value(top, value, option)
            old = data.get(top)
            if _is_object(old) and isinstance(new, dict):
                _change_class(old, new.get("class_path"), (top,), lines, accepts)
                _merge(old, new, (top,), lines, {}, accepts)
                for key in new:
                    record((top, key), new[key])
            else:
                data[top] = copy.deepcopy(new)
                record((top,), new)
            return
        node = data.get(top)
        if not _is_object(node):
            raise LoopgenError(
                f"{option}: {top} has no class yet; give it first (--{top}=package.module.Class or in a config file)"
            )
        _set_arg(node, rest, value, (top,), record, option)
        return
    if top == "trainer" and len(parts) >= 2 and parts[1] in LISTS:
        trainer = data.setdefault("trainer", {})
        if not isinstance(trainer, dict):
            raise LoopgenError(f"{option}: trainer is {got(trainer)} before it; expected a mapping")
        flag, rest, current = parts[1], parts[2:], trainer.get(parts[1])
        if append and not rest:
            entries = current if isinstance(current, list) else [] if current in (None, False) else [current]
            added = value if isinstance(value, list) else [value]
            for entry in added:
                entries.append(copy.deepcopy(_class_value(flag, entry, option)))
                record(("trainer", flag, len(entries) - 1), entries[-1])
            trainer[flag] = entries
            lines[("trainer", flag)] = at
            return
        if rest:
            last = current[-1] if isinstance(current, list) and current else current
            if not _is_object(last):
                raise LoopgenError(
                    f"{option}: trainer.{flag} has no entry to set {'.'.join(rest)} on; add one first (--trainer.{flag}+=CLASS)"
                )
            where = ("trainer", flag, len(current) - 1) if isinstance(current, list) else ("trainer", flag)
            _set_arg(last, rest, value, where, record, option)
            return
        new = value if isinstance(value, (list, bool)) or value is None else _class_value(flag, value, option)
        trainer[flag] = copy.deepcopy(new)
        record(("trainer", flag), new)
        return
    if append:
        raise LoopgenError(f"{option}: += appends to trainer.callbacks, trainer.logger or trainer.plugins only")
    node: Any = data
    for depth, part in enumerate(parts[:-1]):
        if node.get(part) is None:
            node[part] = {}
        node = node[part]
        if not isinstance(node, dict):
            raise LoopgenError(f"{option}: {'.'.join(parts[: depth + 1])} is {got(node)} before it; expected a mapping")
    if isinstance(node.get(parts[-1]), dict) and isinstance(value, dict) and not _is_object(value):
        _merge(node[parts[-1]], value, tuple(parts), lines, {}, accepts)
        record(tuple(parts), value)
        return
    node[parts[-1]] = copy.deepcopy(value)
    record(tuple(parts), value)


def _set_arg(
    node: dict[str, Any],
    rest: list[str],
    value: Any,
    path: KeyPath,
    record: Callable[[KeyPath, Any], None],
    option: str,
) -> None:
    """`--model.lr=...`, `--model.init_args.lr=...`: an init_arg (dict_kwargs when so named) of an object."""
    container = "init_args"
    if rest[0] in ("init_args", "dict_kwargs"):
        container, rest = rest[0], rest[1:]
    if not rest:
        if not isinstance(value, dict):
            raise LoopgenError(f"{option}: expected a mapping of arguments, {got(value)}")
        node.setdefault(container, {}).update(copy.deepcopy(value))
        for key in value:
            record((*path, container, key), value[key])
        return
    args = node.setdefault(container, {})
    for part in rest[:-1]:
        args = args.setdefault(part, {})
        if not isinstance(args, dict):
            raise LoopgenError(f"{option}: {part} is not a mapping")
    args[rest[-1]] = copy.deepcopy(value)
    record((*path, container, *rest), value)
