"""Stage 1: YAML spec -> validated, defaulted, typed `Spec` (model.py).

Every error about the user's input is raised here (as LoopgenError, with the
key path and YAML line); nothing downstream re-validates. The trainer flags'
names, values and defaults come from the flag table (flags.py), which
`TrainerFlags` is made from.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from loopgen.errors import LoopgenError, Problem, did_you_mean, got, show
from loopgen.spec.compiling import compile_options
from loopgen.spec.flags import (
    ALIASES,
    CALLBACK_ARGS,
    FLAGS,
    LOGGER_ARGS,
    PROFILER_ARGS,
    TRAINER_KEYS,
    Flag,
    alias_notice,
)
from loopgen.spec.kinds import FlagError, same
from loopgen.spec.model import (
    CLASS_REF_KEYS,
    LOOP_KEYS,
    MAX_SEED,
    SUBCOMMANDS,
    TOP_LEVEL_KEYS,
    ClassRef,
    LoopFlags,
    ObjectSpec,
    Spec,
    TrainerFlags,
)
from loopgen.spec.plugins import read_plugins
from loopgen.spec.sources import KeyPath, Sources, dotted
from loopgen.spec.support import (
    LIGHTNING_LOGGERS,
    PROFILER_NAMES,
    accumulate_kind,
    accumulation_scheduler,
    callback_support,
    lightning_callback,
    lightning_logger,
    lightning_profiler,
    logger_support,
    other_lightning_callback,
    profiler_support,
)


def lightning_callback_or_scheduler(class_path: str) -> str | None:
    """pytorch_lightning.callbacks.NAME for one of Lightning's callbacks, GradientAccumulationScheduler included
    (those loopgen does not serve too: callback_support refuses them by name)."""
    if accumulation_scheduler(class_path):
        return "pytorch_lightning.callbacks.GradientAccumulationScheduler"
    return lightning_callback(class_path) or other_lightning_callback(class_path)


_TOP_LEVEL_HINTS = {
    "fit": "this is a LightningCLI main config; use the contents of its `fit:` section as the spec",
}


MAX_INT_DIGITS = 4000  # below Python's limit for reading an integer literal from source (4300)


MAX_INT_BITS = 13287  # 2**13287 has 4000 digits


def load_spec(spec: Path | Sources, script_dir: Path | None = None) -> Spec:
    """Read, validate and normalise a spec (one file, or files and overrides composed as LightningCLI composes
    them); raise LoopgenError listing every problem found. `script_dir`: where the script is written (the current
    directory if not given), which a composed spec's files are recorded from."""
    sources = Sources.of(spec)
    document = sources.compose(class_accepts(sources.path))
    reader = _Reader(str(sources.path), document.lines, list(document.problems))
    spec = reader.spec(document.data, sources, script_dir or Path("."))
    if spec is None or reader.problems:
        raise LoopgenError(sorted(reader.problems, key=_by_line))
    return spec


def class_accepts(spec_path: Path) -> Callable[[str, str], bool | None]:
    """Whether a class takes an init_arg of that name (None: loopgen cannot tell), for a composed spec that
    changes an object's class: torch's classes by their signatures, the project's by their source."""
    from functools import cache

    @cache
    def signature(class_path: str) -> Any:
        from loopgen.source.reader import inspect_class
        from loopgen.source.roots import default_roots
        from loopgen.source.signatures import torch_signature

        if class_path.startswith("torch."):
            found = torch_signature(class_path, "optimizer" if ".lr_scheduler." not in class_path else "lr_scheduler")
            return found if not isinstance(found, str) else None
        try:
            return inspect_class(class_path, default_roots(spec_path), where="").init
        except LoopgenError:
            return None

    def accepts(class_path: str, name: str) -> bool | None:
        found = signature(class_path)
        if found is None:
            return None
        return found.var_keyword or name in found.names

    return accepts


def callback_entry(where: str, _line: int, entry: dict[str, Any]) -> tuple[ClassRef | None, list[Problem]]:
    """A callback given other than by the spec (configure_callbacks' return, built at `where`: "file:line"),
    checked and normalised as a trainer.callbacks entry: its ClassRef, and its problems."""
    reader = _Reader(where, {}, [])
    flag = next(flag for flag in FLAGS if flag.name == "callbacks")
    refs = reader.callbacks(flag, (where,), entry, [])
    return (refs[0] if refs and not reader.problems else None), reader.problems


# Trainer(barebones=True): each flag it turns off (or whose opt-in it refuses), the value it gets, and Lightning's
# reason, in the order Lightning checks them
_BAREBONES = (
    ("enable_checkpointing", False, "Checkpointing can impact raw speed"),
    ("logger", False, "Logging can impact raw speed"),
    ("enable_progress_bar", False, "The progress bar can impact raw speed"),
    ("log_every_n_steps", 0, "Logging can impact raw speed"),
    ("enable_model_summary", False, "Model summary can impact raw speed"),
    ("num_sanity_val_steps", 0, "Sanity checking can impact raw speed"),
    ("fast_dev_run", 0, "Development run is not meant for raw speed evaluation"),
    ("detect_anomaly", False, "Anomaly detection can impact raw speed"),
    ("profiler", None, "Profiling can impact raw speed"),
)


def _python(value: Any) -> str:
    """A flag's YAML value as Lightning's message shows it (Python's repr; an entry by its class)."""
    if isinstance(value, dict) and "class_path" in value:
        return f"{str(value['class_path']).rpartition('.')[2]}(...)"
    if isinstance(value, list):
        return "[" + ", ".join(map(_python, value)) + "]"
    return repr(value)


def _by_line(problem: Problem) -> int:
    return problem.line or 0


_INVALID: Any = object()  # a value that had a problem (already reported)


class _Reader:
    """Walks the parsed YAML, collecting every problem (with key path and line) and notice."""

    def __init__(self, file: str, lines: Mapping[KeyPath, int], problems: list[Problem]):
        self.file = file
        self.lines = lines
        self.problems = problems
        self.notices: list[Problem] = []  # notices are reported like problems: key path, line, message
        self.trainer_given: set[str] = set()
        self.progress_bar_refresh_rate: int | None = None
        # a GradientAccumulationScheduler entry of trainer.callbacks: (its key path, its schedule)
        self.accumulation_entries: list[tuple[KeyPath, dict[int, int]]] = []

    # --- reporting

    def line(self, path: KeyPath) -> int | None:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path)

    def problem(self, path: KeyPath, message: str) -> None:
        self.problems.append(Problem(dotted(path) or self.file, message, self.line(path)))

    def notice(self, path: KeyPath, message: str) -> None:
        self.notices.append(Problem(dotted(path), message, self.line(path)))

    # --- the spec

    def spec(self, data: dict[Any, Any], sources: Sources, script_dir: Path) -> Spec | None:
        top = self.mapping((), data, TOP_LEVEL_KEYS, "not a LightningCLI `fit` key nor `loop`", _TOP_LEVEL_HINTS)
        seed = self.seed(top.get("seed_everything"))
        model = None
        if top.get("model") is None:
            self.problem(("model",), "required: the model's class path")
        else:
            subclass_mode = (
                "(LightningCLI configs must come from subclass mode: LightningCLI(..., subclass_mode_model=True))"
            )
            model = self.class_ref(("model",), top["model"], missing=subclass_mode, objects=True)
        data_ref = None if top.get("data") is None else self.class_ref(("data",), top["data"], objects=True)
        trainer = self.trainer(top.get("trainer"))
        optimizer = self.optional_class_ref(("optimizer",), top.get("optimizer"))
        lr_scheduler = self.optional_class_ref(("lr_scheduler",), top.get("lr_scheduler"))
        if lr_scheduler is not None and top.get("optimizer") is None:
            self.notice(("lr_scheduler",), "ignored without `optimizer:` (as LightningCLI does)")
            lr_scheduler = None
        loop = self.loop(top.get("loop"))
        ckpt_path = top.get("ckpt_path")
        if ckpt_path is not None and not isinstance(ckpt_path, str):
            self.problem(("ckpt_path",), f"expected a checkpoint path or null, {got(ckpt_path)}")
        weights_only = top.get("weights_only")
        if weights_only is not None and not isinstance(weights_only, bool):
            self.problem(("weights_only",), f"expected true, false or null, {got(weights_only)}")
        if self.problems or model is None or trainer is None:
            return None
        return Spec(
            path=sources.path,
            sha256=sources.sha256(),
            **sources.origin(script_dir),
            seed_everything=seed,
            model=model,
            data=data_ref,
            trainer=trainer,
            optimizer=optimizer,
            lr_scheduler=lr_scheduler,
            loop=loop,
            ckpt_path=ckpt_path,
            weights_only=weights_only,
            notices=tuple(str(notice) for notice in sorted(self.notices, key=_by_line)),
            trainer_given=frozenset(self.trainer_given),
            progress_bar_refresh_rate=self.progress_bar_refresh_rate,
            accumulation_callback=bool(self.accumulation_entries),
            lines={dotted(key): line for key, line in self.lines.items()},
        )

    def mapping(
        self,
        path: KeyPath,
        value: Any,
        known: Collection[str],
        unknown: str,
        hints: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """`value` as a mapping of known keys (null: empty); reports unknown keys, with "did you mean"."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping, {got(value)}")
            return {}
        known_items = {}
        for key, item in value.items():
            if not isinstance(key, str):
                self.problem((*path, show(key)), f"unknown key: {unknown}")
            elif key in known:
                known_items[key] = item
            else:
                hint = (hints or {}).get(key) or f"{unknown}{did_you_mean(key, known)}"
                self.problem((*path, key), f"unknown key: {hint}")
        return known_items

    def seed(self, value: Any) -> int | bool:
        if value is None:
            return True  # LightningCLI's default
        if isinstance(value, bool) or (isinstance(value, int) and 0 <= value <= MAX_SEED):
            return value
        self.problem(
            ("seed_everything",),
            f"expected an integer in [0, {MAX_SEED}], true (seed chosen at run time) or false (no seeding), {got(value)}",
        )
        return True

    # --- class references

    def optional_class_ref(self, path: KeyPath, value: Any) -> ClassRef | None:
        return None if value is None else self.class_ref(path, value)

    def class_ref(
        self,
        path: KeyPath,
        value: Any,
        canonical: Callable[[str], str | None] | None = None,
        missing: str = "",
        objects: bool = False,
        nested: bool = False,
    ) -> ClassRef | None:
        """A `class_path` + `init_args` (+ jsonargparse's `dict_kwargs`, merged in) entry, or a bare class path.

        `canonical` maps a class path to its canonical spelling (None: keep it). `objects`: the init_args may hold
        objects (nested `class_path` entries, read as ObjectSpecs); `nested`: this entry is one of those (an
        ObjectSpec, its dict_kwargs kept apart).
        """
        extra: dict[str, Any] = {}
        if isinstance(value, str):
            class_path, class_path_at, init_args = value, path, {}
        elif isinstance(value, dict):
            entry = self.mapping(path, value, CLASS_REF_KEYS, "a class entry has class_path, init_args and dict_kwargs")
            class_path, class_path_at = entry.get("class_path"), (*path, "class_path")
            init_args = self.init_args((*path, "init_args"), entry.get("init_args"), objects=objects)
            extra = self.init_args((*path, "dict_kwargs"), entry.get("dict_kwargs"))
            for name in init_args.keys() & extra.keys():
                self.problem((*path, "dict_kwargs", name), "also given in init_args")
            if not nested:
                init_args.update(extra)
            if "class_path" not in entry:
                self.problem(path, f"missing class_path {missing}".rstrip())
                return None
        else:
            self.problem(path, f"expected a class path or a mapping with class_path and init_args, {got(value)}")
            return None
        if not isinstance(class_path, str):
            self.problem(class_path_at, f"expected a dotted class path, {got(class_path)}")
            return None
        if canonical is not None:
            class_path = canonical(class_path) or class_path
        parts = class_path.split(".")
        if not all(part.isidentifier() and not keyword.iskeyword(part) for part in parts):
            self.problem(class_path_at, f"{class_path!r} is not a dotted Python path (module.Class)")
            return None
        if len(parts) < 2:
            self.problem(class_path_at, f"{class_path!r} needs its module: write module.{class_path}")
            return None
        if nested:
            return ObjectSpec(class_path, init_args, self.line(path), dict_kwargs=extra)
        return ClassRef(class_path, init_args, self.line(path))

    def init_args(self, path: KeyPath, value: Any, objects: bool = False) -> dict[str, Any]:
        """Keyword arguments: identifier names, plain YAML data values; with `objects`, also nested `class_path`
        entries (ObjectSpecs), as values or inside lists and mappings."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping of argument names to values, {got(value)}")
            return {}
        args = {}
        for name, item in value.items():
            if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
                self.problem((*path, show(name)), "argument names must be Python identifiers")
            elif objects:
                read = self.argument((*path, name), item)
                if read is not _INVALID:
                    args[name] = read
            elif self.plain((*path, name), item):
                args[name] = item
        return args

    def argument(self, path: KeyPath, value: Any) -> Any:
        """An init_args value that may hold objects: a mapping with `class_path` is an ObjectSpec (read like a
        class entry, its own init_args may hold objects), lists and other mappings are read item by item."""
        if isinstance(value, dict) and "class_path" in value:
            ref = self.class_ref(path, value, objects=True, nested=True)
            return _INVALID if ref is None else ref
        if isinstance(value, list):
            items = [self.argument((*path, index), item) for index, item in enumerate(value)]
            return _INVALID if any(item is _INVALID for item in items) else items
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            items = {key: self.argument((*path, key), item) for key, item in value.items()}
            return _INVALID if any(item is _INVALID for item in items.values()) else items
        return value if self.plain(path, value) else _INVALID

    def plain(self, path: KeyPath, value: Any) -> bool:
        """Whether `value` is plain YAML data: null, booleans, numbers, strings, and lists and mappings of them."""
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
            self.problem(path, f"an integer of more than {MAX_INT_DIGITS} digits cannot be written into the script")
            return False
        if value is None or isinstance(value, (bool, int, float, str)):
            return True
        if isinstance(value, list):
            children = [((*path, index), item) for index, item in enumerate(value)]
        elif isinstance(value, dict):
            children = [((*path, show(key)), part) for key, item in value.items() for part in (key, item)]
        else:
            self.problem(
                path,
                "only plain YAML data (null, booleans, numbers, strings, lists and mappings of them) is accepted, "
                f"got {type(value).__name__} (quote it to pass a string)",
            )
            return False
        checked = [self.plain(at, child) for at, child in children]  # all of them: every problem is reported
        return all(checked)

    # --- trainer

    def trainer(self, value: Any) -> TrainerFlags | None:
        path: KeyPath = ("trainer",)
        raw = self.mapping(path, value, TRAINER_KEYS, "not a Lightning 2.x Trainer argument")
        problems_before = len(self.problems)

        # seed-era spellings become candidate values of modern flags
        from_aliases: dict[str, list[tuple[KeyPath, Any]]] = {}
        for alias in ALIASES:
            if raw.get(alias.name) is None:
                continue
            where = (*path, alias.name)
            try:
                modern = alias.kind.parse(raw[alias.name])
            except FlagError as error:
                self.problem((*where, *error.at), error.message)
                continue
            self.notice(where, alias_notice(modern))
            for name, item in modern.items():
                entries = item if name == "callbacks" else [item]
                from_aliases.setdefault(name, []).extend((where, entry) for entry in entries)

        values: dict[str, Any] = {}
        given: set[str] = set()
        for flag in FLAGS:
            key = (*path, flag.name)
            own = [(key, raw[flag.name])] if flag.name in raw and (raw[flag.name] is not None or flag.nullable) else []
            added = from_aliases.get(flag.name, [])
            if own or added:
                given.add(flag.name)
            if flag.name == "callbacks":
                values[flag.name] = self.callbacks(flag, key, raw.get(flag.name), added)
            elif flag.name == "logger" and own:
                values[flag.name] = self.loggers(flag, key, own[0][1])
            elif flag.name == "profiler" and own:
                values[flag.name] = self.profiler(flag, key, own[0][1])
            else:
                values[flag.name] = self.flag_value(flag, key, own + added)

        for where, schedule in self.accumulation_entries[1:]:
            self.problem(where, "a second GradientAccumulationScheduler: give one schedule")
        for where, schedule in self.accumulation_entries[:1]:
            if values["accumulate_grad_batches"] != 1:  # Lightning's check, in the callback's on_train_start
                self.problem(
                    where,
                    "You have set `accumulate_grad_batches` and are using the `GradientAccumulationScheduler`"
                    " callback. Either remove `accumulate_grad_batches` from the Trainer or remove the callback.",
                )
            values["accumulate_grad_batches"] = schedule  # the script's schedule, as the {epoch: factor} flag's
        if values["barebones"]:
            self.barebones(path, raw, values, given)
        if isinstance(values["plugins"], tuple):
            for message in read_plugins(values, given):
                self.problem((*path, "plugins"), message)
        if len(self.problems) > problems_before:
            return None
        self.trainer_given = given
        for _, rate in from_aliases.get("progress_bar_refresh_rate", []):
            self.progress_bar_refresh_rate = rate
        return TrainerFlags(**values)

    def barebones(self, path: KeyPath, raw: Mapping[str, Any], values: dict[str, Any], given: set[str]) -> None:
        """Trainer(barebones=True), as Lightning's __init__ reads it: each flag it turns off is off, and one given a
        value that it would turn off, or an opt-in given, is Lightning's ValueError."""
        for name, off, what in _BAREBONES:
            value = values[name]
            if name in given and not same(value, off) and not (name == "logger" and value is None):
                shown = _python(raw.get(name, value))
                self.problem(
                    (*path, name),
                    f"`Trainer(barebones=True, {name}={shown})` was passed. {what} so it is disabled in barebones mode.",
                )
            values[name] = off

    def flag_value(self, flag: Flag, key: KeyPath, candidates: list[tuple[KeyPath, Any]]) -> Any:
        """The normalised value of `flag` from its key and/or seed-era spellings (which must agree)."""
        if not candidates:
            if flag.default_notice:
                self.notice(key, flag.default_notice)
            return flag.default
        parsed = []
        for where, raw in candidates:
            try:
                value = flag.parse(raw)
            except FlagError as error:
                self.problem((*where, *error.at), error.message)
                return _INVALID
            notice = flag.notice(raw) if flag.notice is not None and raw is not None else None
            if notice:
                self.notice(where, notice)
            parsed.append((where, value))
        (where, value), *others = parsed
        for other_where, other in others:
            if not same(other, value):
                self.problem(
                    other_where,
                    f"means {flag.name}: {show(other)}, which conflicts with {dotted(where)}: {show(value)}",
                )
                return _INVALID
        reason = flag.support(value)
        if reason:
            named = isinstance(value, dict) and "class_path" in value  # a class entry (a strategy): its class
            refused = f"{value['class_path'] if named else show(value)} is {reason}"
            self.problem(where, refused if where == key else f"{flag.name}: {refused}")
            return _INVALID
        return value

    def callbacks(
        self, flag: Flag, key: KeyPath, listed: Any, added: list[tuple[KeyPath, Any]]
    ) -> tuple[ClassRef, ...]:
        """`trainer.callbacks` entries, then those `added` by seed-era spellings; each checked by callback_support."""
        entries: list[tuple[KeyPath, Any]] = []
        if listed is not None:
            try:
                entries = [
                    ((*key, index) if isinstance(listed, list) else key, entry)
                    for index, entry in enumerate(flag.parse(listed))
                ]
            except FlagError as error:
                self.problem((*key, *error.at), error.message)
        entries += added
        refs = []
        for where, entry in entries:
            named = entry if isinstance(entry, str) else entry.get("class_path") if isinstance(entry, dict) else None
            own = not isinstance(named, str) or lightning_callback_or_scheduler(named) is None  # may take objects
            ref = self.class_ref(where, entry, canonical=lightning_callback_or_scheduler, objects=own)
            if ref is None:
                continue
            if accumulation_scheduler(ref.class_path):
                self.accumulation_entry(where if isinstance(entry, str) else (*where, "init_args"), ref)
                continue
            reason = callback_support(ref.class_path)
            if reason:
                self.problem(where, f"{ref.name} is {reason}")
            elif lightning_callback(ref.class_path) is not None:
                args = self.callback_args(where if isinstance(entry, str) else (*where, "init_args"), ref)
                refs.append(ClassRef(ref.class_path, args, ref.line))
            else:
                refs.append(ref)
        return tuple(refs)

    def accumulation_entry(self, path: KeyPath, ref: ClassRef) -> None:
        """Lightning's GradientAccumulationScheduler(scheduling={epoch: factor}): the script's accumulation
        schedule (the trainer's `accumulate_grad_batches` set from it at each epoch's start)."""
        unknown = [name for name in ref.init_args if name != "scheduling"]
        for name in unknown:
            self.problem(
                (*path, name), f"unknown argument of GradientAccumulationScheduler{did_you_mean(name, ['scheduling'])}"
            )
        raw = ref.init_args.get("scheduling")
        if not isinstance(raw, dict):
            self.problem((*path, "scheduling"), f"expected a mapping {{epoch: factor}}, {got(raw)}")
            return
        try:
            schedule = accumulate_kind().parse(raw)
        except FlagError as error:
            self.problem((*path, "scheduling", *error.at), error.message)
            return
        if not unknown:
            self.accumulation_entries.append((path, schedule))

    def loggers(self, flag: Flag, key: KeyPath, raw: Any) -> bool | tuple[ClassRef, ...]:
        """`trainer.logger`: true (Lightning's default logger), false, or entries of Lightning's loggers (each
        checked by logger_support, its init_args like trainer flags); an empty list is false, as in Lightning."""
        try:
            value = flag.parse(raw)
        except FlagError as error:
            self.problem((*key, *error.at), error.message)
            return _INVALID
        if isinstance(value, bool):
            return value
        refs = []
        for index, entry in enumerate(value):
            where = (*key, index) if isinstance(raw, list) else key
            named = entry if isinstance(entry, str) else entry.get("class_path")
            if isinstance(named, str) and "." not in named and lightning_logger(named) is None:
                known = ", ".join(LIGHTNING_LOGGERS)
                self.problem(
                    where,
                    f"{named} is not one of Lightning's loggers ({known}){did_you_mean(named, known.split(', '))}",
                )
                continue
            ref = self.class_ref(where, entry, canonical=lightning_logger)
            if ref is None:
                continue
            reason = logger_support(ref.class_path)
            if reason:
                self.problem(where, f"{ref.name} is {reason}")
                continue
            args = self.init_args_of(where if isinstance(entry, str) else (*where, "init_args"), ref, LOGGER_ARGS)
            if args.get("save_dir", "") is None:
                self.problem(where, f"{ref.name} needs `save_dir` (the directory of its logs)")
            refs.append(ClassRef(ref.class_path, args, ref.line))
        return tuple(refs) if refs else False

    def profiler(self, flag: Flag, key: KeyPath, raw: Any) -> ClassRef | None:
        """`trainer.profiler`: one of Lightning's names (simple, advanced, pytorch) or a profiler entry (checked by
        profiler_support, its init_args like trainer flags); normalised to a class ref with every argument."""
        try:
            value = flag.parse(raw)
        except FlagError as error:
            self.problem((*key, *error.at), error.message)
            return _INVALID
        if isinstance(value, str) and value in PROFILER_NAMES:
            name = PROFILER_NAMES[value]
            reason = profiler_support(name)
            if reason:
                self.problem(key, f"{value} is {reason}")
                return _INVALID
            ref = ClassRef(f"pytorch_lightning.profilers.{name}", {}, self.line(key))
            return ClassRef(ref.class_path, self.init_args_of(key, ref, PROFILER_ARGS), ref.line)
        ref = self.class_ref(key, value, canonical=lightning_profiler)
        if ref is None:
            return _INVALID
        reason = profiler_support(ref.class_path)
        if reason:
            self.problem(key, f"{ref.name} is {reason}")
            return _INVALID
        args = self.init_args_of(key if isinstance(value, str) else (*key, "init_args"), ref, PROFILER_ARGS)
        return ClassRef(ref.class_path, args, ref.line)

    def callback_args(self, path: KeyPath, ref: ClassRef) -> dict[str, Any]:
        """The init_args of one of Lightning's callbacks, checked and normalised like trainer flags; every
        argument it takes is present (absent ones at Lightning's default)."""
        return self.init_args_of(path, ref, CALLBACK_ARGS)

    def init_args_of(self, path: KeyPath, ref: ClassRef, tables: Mapping[str, tuple[Flag, ...]]) -> dict[str, Any]:
        """The init_args of one of Lightning's classes, checked against its table in `tables`."""
        table = tables[ref.name]
        known = {arg.name: arg for arg in table}
        for name in ref.init_args:
            if name not in known:
                self.problem((*path, name), f"unknown argument of {ref.name}{did_you_mean(name, known)}")
        args = {}
        for arg in table:
            raw = ref.init_args.get(arg.name)
            key = (*path, arg.name)
            absent = arg.name not in ref.init_args or (raw is None and not arg.nullable)
            try:
                value = arg.default if absent else arg.parse(raw)
            except FlagError as error:
                self.problem((*key, *error.at), error.message)
                continue
            reason = arg.support(value)
            if reason:
                self.problem(key, f"{ref.name}({arg.name}={show(value)}) is {reason}")
            args[arg.name] = value
        return args

    # --- loop

    def loop(self, value: Any) -> LoopFlags:
        path: KeyPath = ("loop",)
        raw = self.mapping(path, value, LOOP_KEYS, "not a loopgen loop setting")
        schedulers = raw.get("lr_schedulers")
        if schedulers is not None and not isinstance(schedulers, bool):
            self.problem((*path, "lr_schedulers"), f"expected true or false, {got(schedulers)}")
            schedulers = None
        subcommands = self.subcommands((*path, "subcommands"), raw.get("subcommands"))
        compiled = compile_options((*path, "compile"), raw.get("compile"), self.problem)
        frequencies = raw.get("optimizer_frequencies")
        if frequencies is None:
            return LoopFlags(lr_schedulers=schedulers, subcommands=subcommands, compile=compiled)
        key = (*path, "optimizer_frequencies")
        if not isinstance(frequencies, list) or not frequencies:
            self.problem(key, f"expected a non-empty list of positive integers (one per optimizer), {got(frequencies)}")
            return LoopFlags(lr_schedulers=schedulers, subcommands=subcommands, compile=compiled)
        for index, frequency in enumerate(frequencies):
            if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
                self.problem((*key, index), f"expected a positive integer, {got(frequency)}")
        return LoopFlags(tuple(frequencies), schedulers, subcommands, compiled)

    def subcommands(self, key: KeyPath, value: Any) -> tuple[str, ...] | None:
        """loop.subcommands: a list of LightningCLI's subcommands with fit in it, each once."""
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(key, f"expected a list of subcommands (fit, validate, test, predict), {got(value)}")
            return None
        for index, name in enumerate(value):
            if name not in SUBCOMMANDS:
                self.problem((*key, index), f"unknown subcommand {name!r}{did_you_mean(name, SUBCOMMANDS)}")
            elif name in value[:index]:
                self.problem((*key, index), f"{name} is listed twice")
        if "fit" not in value:
            self.problem(key, "the script always has fit: list it (e.g. [fit, test])")
        return tuple(name for name in SUBCOMMANDS if name in value)
