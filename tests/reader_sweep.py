"""loopgen over other projects' Lightning classes: every module-level class in the given source trees that subclasses
a LightningModule, a LightningDataModule or a Callback (by name, through the trees' own classes too) is rendered with
a minimal spec: a module as the model (1 for each required argument of its constructor; a small data module when it
has no train_dataloader), a data module as the data of a small model, a callback among the callbacks of a small model
and data module; one epoch, no logger, no checkpointing. Each must end in a script or in a refusal that names its
reason; any other exception (or a render that runs past --timeout seconds, or a script that fails the render's own
checks) is an internal error, printed with its traceback. Nothing is imported or run: loopgen reads sources.

    python -m tests.reader_sweep [-j JOBS] [-v] DIR [DIR ...]
    python -m tests.reader_sweep --every-class DIR [DIR ...]

Each DIR is one repository's tree. The run prints every internal error (every refusal too with -v), then the
figures: repositories, files with such classes, classes, scripts, refusals by reason, internal errors. It is a
documented run outside CI (the trees are public projects' sources, fetched; none is copied here); the figures of the
last run are in docs/testing.md. With --every-class it renders nothing: it reads the names of every module of the
trees and follows every module-level class to its bases, Lightning's or not.
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import re
import signal
import sys
import tempfile
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

# the Lightning base each kind of class derives from, in the order a class that derives from several is taken
KINDS = {"LightningModule": "model", "LightningDataModule": "data", "Callback": "callback"}

# the small model and data the spec of a data module or a callback needs (and the data of a module without loaders)
SWEEP = """
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class SweepModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class SweepData(pl.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)

    def val_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
"""


def module_classes(tree: Path) -> list[tuple[Path, str, str, str]]:
    """(root, dotted module, class, kind) of each Lightning class under `tree` (kind: "model", "data" or
    "callback"): the root is the nearest directory above the file that is not a package."""
    parsed: dict[Path, ast.Module] = {}
    for file in sorted(tree.rglob("*.py")):
        try:
            parsed[file] = ast.parse(file.read_bytes())
        except (SyntaxError, ValueError, RecursionError, OSError):
            continue
    classes = [node for module in parsed.values() for node in ast.walk(module) if isinstance(node, ast.ClassDef)]
    names = {base: {base} for base in KINDS}
    for found in names.values():
        while True:  # the trees' own subclasses of subclasses, by their names
            more = {node.name for node in classes if any(base_name(base) in found for base in node.bases)}
            if more <= found:
                break
            found |= more
    out = []
    for file, module in parsed.items():
        root = file.parent
        while (root / "__init__.py").exists():
            root = root.parent
        dotted = ".".join(file.relative_to(root).with_suffix("").parts)
        for node in module.body:
            if not isinstance(node, ast.ClassDef) or node.name in KINDS:
                continue
            kind = next((k for base, k in KINDS.items() if any(base_name(b) in names[base] for b in node.bases)), None)
            if kind is not None:
                out.append((root, dotted, node.name, kind))
    return out


def base_name(node: ast.expr) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def render_one(root: Path, class_path: str, directory: Path, kind: str = "model") -> tuple[str, str]:
    """("script" | "refused" | "internal", detail) for the class rendered with a minimal spec."""
    from loopgen.errors import LoopgenError
    from loopgen.pipeline import inspect_objects, read_classes
    from loopgen.plan import make_plan
    from loopgen.render.script import render
    from loopgen.source.reader import inspect_class
    from loopgen.spec.load import load_spec

    (directory / "sweep_data.py").write_text(SWEEP, encoding="utf-8")
    roots = [root, directory]
    try:
        facts = inspect_class(class_path, roots, where=f"{kind}.class_path")
        entry: dict = {"class_path": class_path}
        if facts.init is not None and facts.init.required:  # each given 1 (what they are does not matter here)
            entry["init_args"] = {name: 1 for name in facts.init.required}
        spec: dict = {"trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False}}
        if kind == "model":
            spec["model"] = entry
            if not facts.defines("train_dataloader"):  # the module's data come from elsewhere
                spec["data"] = {"class_path": "sweep_data.SweepData"}
        elif kind == "data":
            spec.update(model={"class_path": "sweep_data.SweepModel"}, data=entry)
        else:
            spec.update(model={"class_path": "sweep_data.SweepModel"}, data={"class_path": "sweep_data.SweepData"})
            spec["trainer"]["callbacks"] = [entry]
        spec_path = directory / "spec.yaml"
        spec_path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        loaded = load_spec(spec_path)
        model, data, callbacks, problems = read_classes(loaded, roots)
        if problems:
            raise LoopgenError(problems)
        plan = make_plan(loaded, model, data, callbacks, "train.py", objects=inspect_objects(loaded, roots))
        render(plan)
    except LoopgenError as error:
        if SELF_CHECKS.search(str(error)):
            return "internal", traceback.format_exc()
        return "refused", str(error).splitlines()[0] if str(error) else "(no message)"
    except Exception:  # noqa: BLE001 - what this run looks for
        return "internal", traceback.format_exc()
    return "script", ""


# refusals grouped by what they say (the first pattern that matches names the reason; else the message itself,
# its names and numbers left out)
REASONS = [
    (r"is not a class path of the form|cannot find module", "its module cannot be imported by that path"),
    (r"syntax error", "a syntax error in a file it reads (Python 2, or newer syntax than this Python's)"),
    (r"cannot tell which class the base", "a base class the source does not show (a call, a missing module)"),
    (r"as a condition loopgen cannot decide", "a name bound differently under a condition loopgen cannot decide"),
    (r"is imported from .*, which is not under the project roots", "the class is a package's, outside the tree"),
    (r"does not define training_step", "no training_step (a base class, or Lightning's BoringModel's)"),
    (r"defines no configure_optimizers", "no configure_optimizers (an optimizer comes from its project's config)"),
    (r"configure_optimizers", "configure_optimizers in a shape loopgen does not serve"),
    (r"takes dataloader_iter", "steps that take dataloader_iter"),
    (r"no train_dataloader\(\) defined", "a data module whose loaders come from elsewhere (a config, a base)"),
    (
        r"reads trainer\.|the trainer\b.*(strategy|lightning_module|accelerator)",
        "reads a trainer attribute the script does not serve",
    ),
    (r"overrides \w+, which Lightning calls", "overrides a hook the script does not call"),
    (r"init_args|argument", "its constructor's arguments (the sweep gives 1 to each)"),
]

# LoopgenErrors of the render's checks of its own output: a bug in loopgen, not a refusal
SELF_CHECKS = re.compile(
    r"neither defines nor imports|has no place for its imports|loopgen:extract|take names the script binds otherwise"
    r"|no scope for "
)


def reason(detail: str) -> str:
    message = re.sub(r"^[^:]*(?: \(line \d+\))?: ", "", detail)
    for pattern, name in REASONS:
        if re.search(pattern, message):
            return name
    return re.sub(r"'[^']*'|`[^`]*`|\d+", "…", message)[:110]


def _init_worker() -> None:
    global _DIRECTORY  # one scratch directory per worker process
    _DIRECTORY = Path(tempfile.mkdtemp(prefix="reader_sweep_"))


_DIRECTORY = Path(".")


def _timed_out(signum: int, frame: object) -> None:
    raise TimeoutError("the render ran past the sweep's time limit")


def _render(task: tuple[Path, str, str, int]) -> tuple[str, str]:
    root, class_path, kind, timeout = task
    signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(timeout)
    try:
        return render_one(root, class_path, _DIRECTORY, kind)
    finally:
        signal.alarm(0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reader_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="one repository's source tree each")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every refusal too")
    parser.add_argument("--timeout", type=int, default=120, help="seconds a render may take")
    parser.add_argument(
        "--every-class",
        action="store_true",
        help="read every module's names and every module-level class with its bases (Lightning's or not): no render",
    )
    args = parser.parse_args(argv)
    if args.every_class:
        return every_class(args.trees)
    tasks, files, per_tree = [], {}, collections.Counter()
    for tree in args.trees:
        for root, module, name, kind in module_classes(tree):
            tasks.append((tree, root, f"{module}.{name}", kind))
            files[(tree, root, module)] = True
            per_tree[tree] += 1
    outcomes: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[tuple[str, str]] = collections.Counter()
    work = [(root, path, kind, args.timeout) for _, root, path, kind in tasks]
    with ProcessPoolExecutor(max(1, args.jobs), initializer=_init_worker) as pool:
        for (tree, root, path, kind), (outcome, detail) in zip(tasks, pool.map(_render, work, chunksize=4)):
            outcomes[outcome] += 1
            kinds[(kind, outcome)] += 1
            if outcome == "refused":
                reasons[reason(detail)] += 1
            if outcome == "internal" or (outcome == "refused" and args.verbose):
                print(f"{outcome}: {kind} {path} ({root}): {detail.strip()}", flush=True)
    print(f"\n{len([t for t in args.trees if per_tree[t]])} repositories, {len(files)} files, {len(tasks)} classes")
    for kind in KINDS.values():
        counts = {outcome: kinds[(kind, outcome)] for outcome in ("script", "refused", "internal")}
        print(f"  {kind}: " + ", ".join(f"{count} {outcome}" for outcome, count in counts.items()))
    print(", ".join(f"{outcomes[outcome]} {outcome}" for outcome in ("script", "refused", "internal")))
    print("refusals by reason:")
    for text, count in reasons.most_common():
        print(f"  {count:5d}  {text}")
    return 1 if outcomes["internal"] else 0


def every_class(trees: list[Path]) -> int:
    """The reader over every module of the trees (its names, as an import binds them) and every module-level class
    (found by its path, its bases followed across modules): each ends read or refused, never in an internal error."""
    from loopgen.errors import LoopgenError
    from loopgen.source.reader import _Reader

    counts: collections.Counter[str] = collections.Counter()
    for file in (file for tree in trees for file in sorted(tree.rglob("*.py"))):
        root = file.parent
        while (root / "__init__.py").exists():
            root = root.parent
        dotted = ".".join(file.relative_to(root).with_suffix("").parts)
        if not all(part.isidentifier() for part in dotted.split(".")):
            continue
        reader = _Reader([root], "sweep")
        try:
            module = reader._module(dotted)
            names = [] if module is None else [n.name for n in module.statements if isinstance(n, ast.ClassDef)]
            if module is not None:
                reader._scope(module)
                counts["modules"] += 1
        except LoopgenError:
            continue  # a syntax error: Python's own
        except Exception:  # noqa: BLE001 - what this run looks for
            counts["internal"] += 1
            print(f"internal: {file}: {traceback.format_exc()}", flush=True)
            continue
        for name in names:
            counts["classes"] += 1
            try:
                list(reader.ancestry(reader.find(f"{dotted}.{name}")))
            except LoopgenError:
                counts["refused"] += 1
            except Exception:  # noqa: BLE001 - what this run looks for
                counts["internal"] += 1
                print(f"internal: {dotted}.{name} ({root}): {traceback.format_exc()}", flush=True)
    print(", ".join(f"{counts[key]} {key}" for key in ("modules", "classes", "refused", "internal")))
    return 1 if counts["internal"] else 0


if __name__ == "__main__":
    os.environ.setdefault("LOOPGEN_NO_CACHE", "1")
    sys.exit(main(sys.argv[1:]))
