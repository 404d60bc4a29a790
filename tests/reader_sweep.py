"""loopgen over other projects' LightningModules: every class in the given source trees that subclasses a
LightningModule (by name, through the trees' own classes too) is rendered with a minimal spec (the class with 1
for each required argument of its constructor, a small data module when the class has no train_dataloader, one
epoch, no logger, no checkpointing). Each must end in a script or in a refusal that names its reason; any other
exception is an internal error, printed with its traceback. Nothing is imported or run: loopgen reads sources.

    python -m tests.reader_sweep DIR [DIR ...]

It is a documented run outside CI (the trees are public projects' sources, fetched; none is copied here); the
figures of the last run are in docs/testing.md.
"""

from __future__ import annotations

import ast
import collections
import sys
import tempfile
import traceback
from pathlib import Path

import yaml

BASES = {"LightningModule"}

# the data of a module that has no loaders of its own (its project's data module is not read)
DATA = """
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class SweepData(pl.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)

    def val_dataloader(self):
        return DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
"""


def module_classes(tree: Path) -> list[tuple[Path, str, str]]:
    """(root, dotted module, class) of each LightningModule subclass under `tree`: the root is the nearest
    directory above the file that is not a package."""
    parsed: dict[Path, ast.Module] = {}
    for file in sorted(tree.rglob("*.py")):
        try:
            parsed[file] = ast.parse(file.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
    names = set(BASES)
    while True:  # the trees' own subclasses of subclasses, by their names
        found = {
            node.name
            for module in parsed.values()
            for node in ast.walk(module)
            if isinstance(node, ast.ClassDef) and any(base_name(base) in names for base in node.bases)
        }
        if found <= names:
            break
        names |= found
    classes = []
    for file, module in parsed.items():
        root = file.parent
        while (root / "__init__.py").exists():
            root = root.parent
        dotted = ".".join(file.relative_to(root).with_suffix("").parts)
        for node in module.body:
            if isinstance(node, ast.ClassDef) and any(base_name(base) in names for base in node.bases):
                classes.append((root, dotted, node.name))
    return classes


def base_name(node: ast.expr) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def render_one(root: Path, class_path: str, directory: Path) -> tuple[str, str]:
    """("script" | "refused" | "internal", detail) for the class rendered with a minimal spec."""
    from loopgen.errors import LoopgenError
    from loopgen.pipeline import inspect_objects, read_classes
    from loopgen.plan import make_plan
    from loopgen.render.script import render
    from loopgen.source.reader import inspect_class
    from loopgen.spec.load import load_spec

    spec_path = directory / "spec.yaml"
    model_entry: dict = {"class_path": class_path}
    try:  # the constructor's required arguments, each given 1 (what they are does not matter to loopgen)
        init = inspect_class(class_path, [root], where="model.class_path").init
        if init is not None and init.required:
            model_entry["init_args"] = {name: 1 for name in init.required}
    except LoopgenError as error:
        return "refused", str(error).splitlines()[0] if str(error) else "(no message)"
    except Exception:  # noqa: BLE001 - what this run looks for
        return "internal", traceback.format_exc()
    spec = {"model": model_entry, "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False}}
    roots = [root]
    if not inspect_class(class_path, [root], where="model.class_path").defines("train_dataloader"):
        (directory / "sweep_data.py").write_text(DATA, encoding="utf-8")  # the module's data come from elsewhere
        spec["data"] = {"class_path": "sweep_data.SweepData"}
        roots.append(directory)
    spec_path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    try:
        loaded = load_spec(spec_path)
        model, data, callbacks, problems = read_classes(loaded, roots)
        if problems:
            raise LoopgenError(problems)
        plan = make_plan(loaded, model, data, callbacks, "train.py", objects=inspect_objects(loaded, roots))
        render(plan)
    except LoopgenError as error:
        return "refused", str(error).splitlines()[0] if str(error) else "(no message)"
    except Exception:  # noqa: BLE001 - what this run looks for
        return "internal", traceback.format_exc()
    return "script", ""


def main(trees: list[str]) -> int:
    outcomes: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as directory:
        for tree in map(Path, trees):
            for root, module, name in module_classes(tree):
                outcome, detail = render_one(root, f"{module}.{name}", Path(directory))
                outcomes[outcome] += 1
                if outcome != "script":
                    print(f"{outcome}: {module}.{name} ({root}): {detail.strip()}")
    print(", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items())))
    return 1 if outcomes["internal"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
