"""loopgen.source.reader reads the user's classes from source with the standard library's ast, never by importing them."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError, Problem
from loopgen.source.facts import ClassFacts, OptimizersFacts
from loopgen.source.reader import find_class_source, inspect_class
from loopgen.source.roots import default_roots
from loopgen.source.signatures import Signature


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def facts(root: Path, class_path: str, files: dict[str, str]) -> ClassFacts:
    return inspect_class(class_path, [write(root, files)], where="model.class_path")


def error(excinfo: pytest.ExceptionInfo[LoopgenError]) -> str:
    (problem,) = excinfo.value.problems
    return str(problem)


PLAIN = """
    import torch
    from torch import nn

    class Classifier(nn.Module):
        def __init__(self, hidden=64):
            super().__init__()
            self.layer = nn.Linear(4, hidden)

        def training_step(self, batch, batch_idx):
            return self.layer(batch).sum()

        async def on_fit_start(self):
            pass

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader():  # a module-level function, not a method
        pass
"""


def test_plain_module(tmp_path: Path) -> None:
    found = facts(tmp_path, "proj.models.Classifier", {"proj/__init__.py": "", "proj/models.py": PLAIN})
    assert found == ClassFacts(
        class_path="proj.models.Classifier",
        file=tmp_path / "proj" / "models.py",
        root=tmp_path,
        is_lightning_module=False,
        is_lightning_callback=False,
        methods={
            "__init__": ("hidden",),
            "training_step": ("batch", "batch_idx"),
            "on_fit_start": (),
            "configure_optimizers": (),
        },
        uses_log=False,
        attributes_read=frozenset({"layer", "parameters"}),
        sources=(tmp_path / "proj" / "models.py",),
        optimizers=OptimizersFacts("optimizer", ("SGD",)),
        init=Signature(names=("hidden",), defaults={"hidden": 64}),
    )
    assert found.defines("training_step") and not found.defines("train_dataloader")


@pytest.mark.parametrize(
    "header, base",
    [
        ("import pytorch_lightning as pl", "pl.LightningModule"),
        ("import pytorch_lightning", "pytorch_lightning.LightningModule"),
        ("from pytorch_lightning import LightningModule", "LightningModule"),
        ("from pytorch_lightning.core import LightningModule", "LightningModule"),
        ("from pytorch_lightning.core.module import LightningModule as LM", "LM"),
        ("from pytorch_lightning import core", "core.LightningModule"),
        ("import lightning as L", "L.LightningModule"),
        ("import lightning.pytorch as pl", "pl.LightningModule"),
        ("from lightning.pytorch import LightningModule", "LightningModule"),
        ("from lightning import pytorch as pl", "pl.LightningModule"),
        (
            "try:\n    import lightning.pytorch as pl\nexcept ImportError:\n    import pytorch_lightning as pl",
            "pl.LightningModule",
        ),
        ("import pytorch_lightning as pl\nBase = pl.LightningModule", "Base"),
    ],
)
def test_lightning_module_spellings(tmp_path: Path, header: str, base: str) -> None:
    source = f"{header}\n\nclass Model({base}):\n    def training_step(self, batch, batch_idx):\n        pass\n"
    found = facts(tmp_path, "model.Model", {"model.py": source})
    assert found.is_lightning_module and not found.is_lightning_callback
    # Lightning's own default hooks are not read: only what the user wrote counts.
    assert found.methods == {"training_step": ("batch", "batch_idx")}


@pytest.mark.parametrize(
    "source",
    [
        "from torch import nn\nclass Model(nn.Module): pass\n",
        "class LightningModule: pass\nclass Model(LightningModule): pass\n",  # the user's own class of that name
        "import pytorch_lightning as pl\nclass Model(pl.LightningDataModule): pass\n",
    ],
)
def test_not_a_lightning_module(tmp_path: Path, source: str) -> None:
    assert not facts(tmp_path, "model.Model", {"model.py": source}).is_lightning_module


@pytest.mark.parametrize(
    "header, base",
    [
        ("import pytorch_lightning as pl", "pl.Callback"),
        ("from pytorch_lightning.callbacks import Callback", "Callback"),
        ("import pytorch_lightning as pl", "pl.callbacks.Callback"),
        ("from lightning.pytorch.callbacks import Callback", "Callback"),
        ("import lightning as L", "L.pytorch.callbacks.Callback"),
    ],
)
def test_callback_spellings(tmp_path: Path, header: str, base: str) -> None:
    source = f"{header}\nclass Printer({base}):\n    def on_train_epoch_end(self, trainer, pl_module):\n        pass\n"
    found = inspect_class("cb.Printer", [write(tmp_path, {"cb.py": source})], where="trainer.callbacks[0]")
    assert found.is_lightning_callback and not found.is_lightning_module
    assert found.methods == {"on_train_epoch_end": ("trainer", "pl_module")}


BASE = """
    import pytorch_lightning as pl

    class Base(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            self.log("loss", 1.0)

        def train_dataloader(self):
            pass
"""


@pytest.mark.parametrize(
    "import_line, base",
    [
        ("from .base import Base", "Base"),
        ("from . import base", "base.Base"),
        ("from proj.base import Base as ProjectBase", "ProjectBase"),
        ("import proj.base", "proj.base.Base"),
        ("import proj.base as b", "b.Base"),
    ],
)
def test_in_project_base_is_inherited(tmp_path: Path, import_line: str, base: str) -> None:
    model = f"{import_line}\n\nclass Model({base}):\n    def validation_step(self, batch, batch_idx):\n        pass\n"
    found = facts(tmp_path, "proj.model.Model", {"proj/__init__.py": "", "proj/base.py": BASE, "proj/model.py": model})
    assert found.methods == {
        "validation_step": ("batch", "batch_idx"),
        "training_step": ("batch", "batch_idx"),
        "train_dataloader": (),
    }
    assert found.is_lightning_module  # through the base, transitively
    assert found.uses_log  # in the base's training_step
    assert found.file == tmp_path / "proj" / "model.py"


def test_bases_across_packages_and_levels(tmp_path: Path) -> None:
    files = {
        "proj/core/base.py": "class Root:\n    def setup(self, stage): pass\n",  # namespace packages: no __init__
        "proj/models/mid.py": "from ..core.base import Root\nclass Mid(Root):\n    def prepare_data(self): pass\n",
        "proj/models/leaf.py": "from .mid import Mid\nclass Leaf(Mid): pass\n",
    }
    assert facts(tmp_path, "proj.models.leaf.Leaf", files).methods == {"prepare_data": (), "setup": ("stage",)}


def test_subclass_overrides_and_base_order(tmp_path: Path) -> None:
    source = """
        class A:
            def hook(self, a): pass
            def only_a(self): pass

        class B(A):
            def hook(self, b): pass
            def both(self, b): pass

        class C(A):
            def hook(self, c): pass
            def both(self, c): pass
            def only_c(self): pass

        class D(B, C):
            def own(self): pass
    """
    methods = facts(tmp_path, "m.D", {"m.py": source}).methods
    # Python's MRO is D, B, C, A: B wins over C, and C over A (the diamond's shared base comes last).
    assert methods == {"own": (), "hook": ("b",), "both": ("b",), "only_c": (), "only_a": ()}
    assert facts(tmp_path, "m.C", {}).methods["hook"] == ("c",)


@pytest.mark.parametrize(("call", "reached"), [("", False), ("super().training_step(batch, i)", True)])
def test_an_overridden_method_counts_only_when_reached(tmp_path: Path, call: str, reached: bool) -> None:
    """What a base's method reads counts only when it runs: a subclass that overrides it and never calls it
    through super() (a manual GAN's subclass training automatically) reads nothing of it."""
    source = f"""
        import lightning.pytorch as pl

        class Manual(pl.LightningModule):
            def training_step(self, batch, i):
                self.manual_backward(self.trainer.model(batch).sum())

        class Automatic(Manual):
            def training_step(self, batch, i):
                {call}
                return self.net(batch).sum()
    """
    found = facts(tmp_path, "m.Automatic", {"m.py": source})
    assert ("manual_backward" in found.attributes_read) == reached
    assert ("model" in (found.trainer_reads or set())) == reached
    assert "net" in found.attributes_read


def test_same_name_subclass_of_imported_base(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": "class Model:\n    def setup(self, stage): pass\n",
        "pkg/model.py": "from .base import Model\n\nclass Model(Model):\n    def prepare_data(self): pass\n",
    }
    assert facts(tmp_path, "pkg.model.Model", files).methods == {"prepare_data": (), "setup": ("stage",)}


@pytest.mark.parametrize(
    "init",
    ["from .models import Classifier", "from .models import Classifier as Classifier", "from .models import *"],
)
def test_reexport_from_package_init(tmp_path: Path, init: str) -> None:
    write(tmp_path, {"proj/__init__.py": init, "proj/models.py": PLAIN})
    assert find_class_source("proj.Classifier", [tmp_path]) == (tmp_path, tmp_path / "proj" / "models.py")
    found = inspect_class("proj.Classifier", [tmp_path], where="model")
    assert found.class_path == "proj.Classifier" and found.file == tmp_path / "proj" / "models.py"
    assert found.defines("training_step")


def test_first_root_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write(first, {"m.py": "class A:\n    def one(self): pass\n"})
    write(second, {"m.py": "class A:\n    def two(self): pass\n", "other.py": "class B: pass\n"})
    assert find_class_source("m.A", [first, second]) == (first, first / "m.py")
    assert inspect_class("m.A", [first, second], where="model").methods == {"one": ()}
    assert find_class_source("other.B", [first, second]) == (second, second / "other.py")


def test_missing_module_suggests_close_name(tmp_path: Path) -> None:
    write(tmp_path, {"examples/__init__.py": "", "examples/models.py": PLAIN})
    with pytest.raises(LoopgenError) as excinfo:
        inspect_class("examples.model.Classifier", [tmp_path], where="model.class_path")
    message = error(excinfo)
    assert message.startswith("model.class_path: cannot find module 'examples.model' of 'examples.model.Classifier'")
    assert str(tmp_path) in message
    assert message.endswith("did you mean 'examples.models.Classifier'?")

    with pytest.raises(LoopgenError) as excinfo:
        inspect_class("exmaples.models.Classifier", [tmp_path], where="model.class_path")
    assert error(excinfo).endswith("did you mean 'examples.models.Classifier'?")

    with pytest.raises(LoopgenError) as excinfo:
        inspect_class("nothing.like.it.Classifier", [tmp_path], where="model.class_path")
    assert "did you mean" not in error(excinfo)


def test_missing_class_lists_defined_classes(tmp_path: Path) -> None:
    write(tmp_path, {"examples/__init__.py": "", "examples/models.py": PLAIN + "    class Regressor: pass\n"})
    with pytest.raises(LoopgenError) as excinfo:
        inspect_class("examples.models.Clasifier", [tmp_path], where="model.class_path")
    message = error(excinfo)
    assert "defines no class 'Clasifier'; it defines Classifier, Regressor" in message
    assert message.endswith("did you mean 'examples.models.Classifier'?")

    with pytest.raises(LoopgenError) as excinfo:
        find_class_source("examples.models", [tmp_path], where="data")
    assert error(excinfo) == "data: 'examples.models' is a module, not a class; it defines Classifier, Regressor"

    with pytest.raises(LoopgenError) as excinfo:
        find_class_source("Classifier", [tmp_path])
    assert "not a class path of the form 'package.module.ClassName'" in error(excinfo)


def test_reexport_of_a_class_outside_the_project(tmp_path: Path) -> None:
    write(tmp_path, {"proj.py": "from torch.nn import Linear as Model\n"})
    with pytest.raises(LoopgenError) as excinfo:
        inspect_class("proj.Model", [tmp_path], where="model.class_path")
    assert "'proj.Model' is imported from 'torch.nn', which is not under the project roots" in error(excinfo)


SIDE_EFFECTS = """
    from pathlib import Path
    Path(__file__).with_name("imported.txt").write_text("the module was imported")
    raise RuntimeError("imported!")

    class Model:
        def training_step(self, batch, batch_idx):
            return batch
"""


def test_user_code_is_never_imported_or_run(tmp_path: Path) -> None:
    write(tmp_path, {"sidefx/__init__.py": SIDE_EFFECTS, "sidefx/model.py": SIDE_EFFECTS})
    found = inspect_class("sidefx.model.Model", [tmp_path], where="model")
    assert found.methods == {"training_step": ("batch", "batch_idx")}
    assert not (tmp_path / "sidefx" / "imported.txt").exists()
    assert not any(name == "sidefx" or name.startswith("sidefx.") for name in sys.modules)


def test_parameter_names(tmp_path: Path) -> None:
    source = """
        class Model:
            def training_step(self, batch, batch_idx, optimizer_idx, hiddens):
                pass

            def tbptt_split_batch(this, batch, split_size):  # not named self
                pass

            def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_idx=0, *args, closure=None, **kwargs):
                pass

            def on_save_checkpoint(self, /, checkpoint, *, strict):
                pass

            @staticmethod
            def helper(x, y):
                pass

            @classmethod
            def build(cls, config):
                pass

            def varargs(*args):
                pass
    """
    assert facts(tmp_path, "m.Model", {"m.py": source}).methods == {
        "training_step": ("batch", "batch_idx", "optimizer_idx", "hiddens"),
        "tbptt_split_batch": ("batch", "split_size"),
        "optimizer_step": ("epoch", "batch_idx", "optimizer", "optimizer_idx", "*args", "closure", "**kwargs"),
        "on_save_checkpoint": ("checkpoint", "strict"),
        "helper": ("x", "y"),
        "build": ("config",),
        "varargs": ("*args",),
    }


@pytest.mark.parametrize(
    "body, expected",
    [
        ("self.log('loss', loss, prog_bar=True)", True),
        ("self.log_dict({'a': 1})", True),
        ("if batch_idx:\n            self.log('a', 1, on_epoch=True)", True),
        ("logger.log('loss', loss)", False),
        ("self.logger.log('loss', loss)", False),
        ("print(self.log)", False),
    ],
)
def test_uses_log(tmp_path: Path, body: str, expected: bool) -> None:
    source = f"class Model:\n    def validation_step(self, batch, batch_idx):\n        {body}\n"
    assert facts(tmp_path, "m.Model", {"m.py": source}).uses_log is expected


def test_uses_log_with_another_instance_name(tmp_path: Path) -> None:
    source = "class Model:\n    def training_step(me, batch, batch_idx):\n        me.log('loss', 1.0)\n"
    assert facts(tmp_path, "m.Model", {"m.py": source}).uses_log


@pytest.mark.parametrize(
    "source",
    [
        "from .missing import Base\nclass Model(Base):\n    def setup(self, stage): pass\n",
        "from typing import Generic, TypeVar\nT = TypeVar('T')\nclass Model(Generic[T]):\n    def setup(self, stage): pass\n",
    ],
)
def test_bases_outside_the_project_are_not_read(tmp_path: Path, source: str) -> None:
    """(A base the source does not show at all, `make_base()`, is refused: tests/test_names.py.)"""
    found = facts(tmp_path, "m.Model", {"m.py": source})
    assert found.methods == {"setup": ("stage",)} and not found.is_lightning_module


def test_import_and_inheritance_cycles_terminate(tmp_path: Path) -> None:
    files = {
        "cyc/__init__.py": "",
        "cyc/a.py": "from .b import B, Ghost\nclass A(B):\n    def from_a(self): pass\n",
        "cyc/b.py": "from .a import A, Ghost\nclass B(A):\n    def from_b(self): pass\n",
        "cyc/c.py": "from .a import Ghost\nclass C(Ghost): pass\n",
    }
    assert facts(tmp_path, "cyc.a.A", files).methods == {"from_a": (), "from_b": ()}
    with pytest.raises(LoopgenError, match="cannot tell which class the base `Ghost` of C is"):
        facts(tmp_path, "cyc.c.C", {})
    with pytest.raises(LoopgenError, match="defines no class 'Ghost'"):
        find_class_source("cyc.a.Ghost", [tmp_path])


@pytest.mark.parametrize("broken", ["model.py", "base.py"])
@pytest.mark.parametrize(
    "bad, message",
    [("x = = 1", "invalid syntax"), ("def oops(self):\n    return )", "unmatched ')'")],
)
def test_syntax_error_names_file_and_line(tmp_path: Path, broken: str, bad: str, message: str) -> None:
    files = {
        "model.py": "from base import Base\nclass Model(Base):\n    pass\n",
        "base.py": "class Base:\n    pass\n",
    }
    files[broken] += f"\n{bad}\n"
    with pytest.raises(LoopgenError) as excinfo:
        facts(tmp_path, "model.Model", files)
    (problem,) = excinfo.value.problems
    assert problem == Problem(
        str(tmp_path / broken),
        f"syntax error: {message} (reading it for model.class_path)",
        len(files[broken].splitlines()),
    )


def test_default_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path = tmp_path.resolve()
    spec = tmp_path / "configs" / "exp" / "spec.yaml"
    work = tmp_path / "configs"
    write(tmp_path, {"configs/exp/spec.yaml": "model: a.B\n"})
    monkeypatch.chdir(work)
    roots = default_roots(Path("exp/spec.yaml"))
    assert roots[:2] == [work, spec.parent] and work.parent not in roots  # no project: nothing above cwd
    assert len(roots) == len(set(roots)) and all(root.is_absolute() for root in roots)


def test_attributes_read_and_scheduler_mentions(tmp_path: Path) -> None:
    source = (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        return self.layer(batch).sum() * self.current_epoch\n"
        "    def configure_optimizers(self):\n"
        "        opt = torch.optim.SGD(self.parameters(), lr=0.1)\n"
        "        return {'optimizer': opt, 'lr_scheduler': torch.optim.lr_scheduler.StepLR(opt, 1)}\n"
        "class N(torch.nn.Module):\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.SGD(self.parameters(), lr=0.1)\n"
    )
    files = {"proj/__init__.py": "", "proj/models.py": source}
    m = facts(tmp_path, "proj.models.M", files)
    assert {"layer", "current_epoch", "parameters"} <= m.attributes_read
    assert m.mentions_scheduler
    assert not facts(tmp_path, "proj.models.N", files).mentions_scheduler


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("return DataLoader(self.val_set)", None),
        ("return [DataLoader(self.val_set)]", None),
        ("return [DataLoader(self.a), DataLoader(self.b)]", 4),
        ("return {'a': DataLoader(self.a), 'b': DataLoader(self.b)}", 4),
        ("return [DataLoader(s) for s in self.sets]", 4),
        ("return (*self.loaders,)", 4),
        ("loaders = [DataLoader(self.a), DataLoader(self.b)]\n                return loaders", 5),
        ("def make():\n                    return [1, 2]\n                return DataLoader(make())", None),
    ],
)
def test_a_val_dataloader_returning_several_loaders(tmp_path: Path, body: str, line: int | None) -> None:
    source = f"""
        class Data:
            def val_dataloader(self):
                {body}
    """
    found = facts(tmp_path, "m.Data", {"m.py": source})
    assert found.val_loaders_listed_at == (f"{tmp_path / 'm.py'}:{line}" if line else "")


@pytest.mark.parametrize(
    ("body", "built"),
    [
        ("return DataLoader(self.val_set)", True),
        ("if self.a:\n                    return DataLoader(self.a)\n                return DataLoader(self.b)", True),
        # a nested function's return is its own: the loader is still built on every path
        (
            "def collate(batch):\n                    return batch\n                return DataLoader(self.a, collate_fn=collate)",
            True,
        ),
        ("return [DataLoader(self.val_set)]", False),
        ("return self.make()", False),
        ("if not self.a:\n                    return\n                return DataLoader(self.a)", False),
    ],
    ids=["one", "both-branches", "nested-function", "list", "helper", "bare-return"],
)
def test_a_val_dataloader_building_one_loader_on_every_path(tmp_path: Path, body: str, built: bool) -> None:
    """Where every return builds a DataLoader, the script has no list check for val_dataloader's result."""
    source = f"""
        class Data:
            def val_dataloader(self):
                {body}
    """
    assert facts(tmp_path, "m.Data", {"m.py": source}).val_loader_built is built


@pytest.mark.parametrize(
    ("body", "built"),
    [
        ("return DataLoader(self.val_set)", True),
        ("return torch.utils.data.DataLoader(self.val_set)", True),
        ("return [DataLoader(self.val_set)]", False),
        ("return self.make_loader()", False),
    ],
)
def test_a_val_dataloader_that_builds_one_loader(tmp_path: Path, body: str, built: bool) -> None:
    """A val_dataloader that returns `DataLoader(...)` on every path needs no check for a list of loaders."""
    source = f"""
        class Data:
            def val_dataloader(self):
                {body}
    """
    assert facts(tmp_path, "m.Data", {"m.py": source}).val_loader_built == built


PASSED_TO_HELPERS = {
    "pkg/__init__.py": "",
    "pkg/utils.py": """
        def warmup(module, loss):
            return loss * min(1.0, (module.trainer.global_step + 1) / 10)

        def report(module, value):
            module.log("scaled", value)
    """,
    "pkg/model.py": """
        import pytorch_lightning as pl
        from pkg.utils import warmup
        from pkg import utils

        def scaled(module, loss):
            return warmup(module, loss) * (1 + module.trainer.current_epoch)

        def anything(*parts):
            return parts[0].trainer

        class Net(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = scaled(self, batch.sum())
                utils.report(module=self, value=loss)
                print(self)
                return loss

            def validation_step(self, batch, batch_idx):
                return anything(self, batch)
    """,
}


def test_the_project_s_functions_the_module_is_passed_to_are_followed(tmp_path: Path) -> None:
    """A helper outside the class reading `module.trainer` (in the same module, or imported from the project,
    and the helpers it hands the module to) counts as the module's own read; one logging through it counts as
    the module logging; one taking it by *args may read anything; print(self) is not the project's code."""
    files = dict(PASSED_TO_HELPERS)
    found = facts(tmp_path, "pkg.model.Net", files)
    assert found.trainer_reads is None  # anything(*parts) may read any attribute
    assert found.uses_log and "training_step" in found.logs_in

    files["pkg/model.py"] = files["pkg/model.py"].replace("return anything(self, batch)", "return batch")
    found = facts(tmp_path / "followed", "pkg.model.Net", files)
    assert found.trainer_reads == {"current_epoch", "global_step"}


STREAMS = """
    import pytorch_lightning as pl
    from torch.utils.data import DataLoader, Dataset, IterableDataset


    class Blocks(IterableDataset):
        def __iter__(self):
            yield from range(4)


    def stream():
        return Blocks()


    class Windows(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            return index


    class MapData(pl.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(Windows())


    class StreamData(pl.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(Blocks())


    class HelperStreamData(pl.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(stream())


    class OwnStreamData(pl.LightningDataModule):
        def train_dataloader(self):
            return DataLoader(IterableDataset())
"""


@pytest.mark.parametrize(
    ("cls", "unsized"),
    [("MapData", False), ("StreamData", True), ("HelperStreamData", True), ("OwnStreamData", True)],
)
def test_iterable_datasets_are_those_the_code_names(tmp_path: Path, cls: str, unsized: bool) -> None:
    """A loader may have no length where the data module names IterableDataset, or a class or function of the files
    read that does (to any depth); an IterableDataset beside it that it never names does not count."""
    found = inspect_class(f"m.{cls}", [write(tmp_path, {"m.py": STREAMS})], where="data.class_path")
    assert found.mentions_iterable_dataset is unsized


def test_parameters_typed_as_functions_or_classes(tmp_path: Path) -> None:
    """jsonargparse imports a string given for a parameter typed Callable or as a class, not one also typed str."""
    source = """
        from typing import Callable, Optional, Type, Union

        import torch


        class Model:
            def __init__(self, optimizer_cls: Callable = torch.optim.Adam, scheduler_cls: Optional[Type] = None,
                         activation: type[torch.nn.Module] = torch.nn.ReLU, loss: Union[str, Callable] = "mse",
                         name: str = "x", hidden: int = 4, plain=None):
                pass
    """
    init = facts(tmp_path, "m.Model", {"m.py": source}).init
    assert init.imported == ("optimizer_cls", "scheduler_cls", "activation")
