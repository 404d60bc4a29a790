"""The reader resolves names as Python would at run time with Lightning installed (loopgen/source/names.py,
loopgen/source/modules.py): a name bound in `try` / `except ImportError`, in `if` / `else` (under `TYPE_CHECKING`,
on `sys.version_info`), re-exported by a project module (names and module aliases, star imports), or aliased
(`L.pytorch.LightningModule`); what it cannot resolve is refused at render time naming the file and the line."""

from __future__ import annotations

import ast
import os
import sys
import textwrap
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from loopgen.source.names import module_scope
from loopgen.source.reader import inspect_class
from tests.test_inspect import write

COMPAT = """
    try:
        import lightning.pytorch as pl
        from lightning.pytorch.callbacks import BasePredictionWriter
    except ImportError:
        import pytorch_lightning as pl
        from pytorch_lightning.callbacks import BasePredictionWriter
"""

MODULE_BODY = "\n    def training_step(self, batch, batch_idx):\n        pass\n"


def read(root: Path, class_path: str, files: dict[str, str], where: str = "model.class_path"):
    return inspect_class(class_path, [write(root, files)], where=where)


def problem(excinfo: pytest.ExceptionInfo[LoopgenError]) -> str:
    (found,) = excinfo.value.problems
    return str(found)


@pytest.mark.parametrize(
    "header, base",
    [
        ("from proj.compat import pl", "pl.LightningModule"),
        ("from .compat import pl", "pl.LightningModule"),
        ("from proj import compat", "compat.pl.LightningModule"),
        ("from . import compat", "compat.pl.LightningModule"),
        ("import proj.compat", "proj.compat.pl.LightningModule"),
        ("import proj.compat as c", "c.pl.LightningModule"),
        ("from .compat import *", "pl.LightningModule"),
        ("from proj import pl", "pl.LightningModule"),  # re-exported by the package's __init__
        ("import proj", "proj.pl.LightningModule"),
        ("from .compat import pl as lightning", "lightning.LightningModule"),
        ("from .compat import pl\nBase = pl.LightningModule", "Base"),
        ("from .again import pl", "pl.LightningModule"),  # re-exported twice
    ],
)
def test_a_module_alias_re_exported_by_a_project_module(tmp_path: Path, header: str, base: str) -> None:
    """`pl` bound in proj/compat.py under try / except ImportError, used from another module: a LightningModule
    (the reader once took `proj.compat.pl.LightningModule` for a class outside Lightning)."""
    files = {
        "proj/__init__.py": "from .compat import pl\n",
        "proj/compat.py": COMPAT,
        "proj/again.py": "from proj.compat import *\n",
        "proj/model.py": f"{header}\n\nclass Model({base}):{MODULE_BODY}",
    }
    found = read(tmp_path, "proj.model.Model", files)
    assert found.is_lightning_module and found.lightning_bases == ("LightningModule",)


@pytest.mark.parametrize(
    "header, base",
    [
        ("from proj.compat import BasePredictionWriter", "BasePredictionWriter"),
        ("from proj.compat import pl", "pl.callbacks.BasePredictionWriter"),
        ("from proj import compat", "compat.pl.callbacks.BasePredictionWriter"),
        ("from lightning.pytorch import callbacks as cb", "cb.BasePredictionWriter"),
        ("import lightning as L", "L.pytorch.callbacks.BasePredictionWriter"),
    ],
)
def test_a_prediction_writer_through_aliases(tmp_path: Path, header: str, base: str) -> None:
    files = {
        "proj/__init__.py": "",
        "proj/compat.py": COMPAT,
        "proj/writer.py": f"{header}\n\nclass Writer({base}):\n    def write_on_epoch_end(self, *args):\n        pass\n",
    }
    found = read(tmp_path, "proj.writer.Writer", files, "trainer.callbacks[0]")
    assert found.is_prediction_writer and found.is_lightning_callback and not found.is_lightning_module


@pytest.mark.parametrize(
    "header",
    [
        # the try body imports what is installed: it wins, whatever the handler binds after it
        "try:\n    import lightning.pytorch as pl\nexcept ImportError:\n    pl = None",
        "try:\n    import pytorch_lightning as pl\nexcept ModuleNotFoundError:\n    from torch import nn as pl",
        "try:\n    from proj import base as pl\nexcept Exception:\n    pl = None",
        "try:\n    import torch\n    import lightning.pytorch as pl\nexcept:\n    pl = None",
        "try:\n    import lightning.pytorch as pl\nexcept (AttributeError, ImportError):\n    pl = None",
        "try:\n    import lightning.pytorch as pl\nexcept ImportError:\n    raise\nelse:\n    pass\nfinally:\n    pass",
        # the try body imports what is not there: the handler's binding
        "try:\n    import pl_not_installed_anywhere as pl\nexcept ImportError:\n    import lightning.pytorch as pl",
        "try:\n    from .missing_module import pl\nexcept ImportError:\n    import lightning.pytorch as pl",
        "try:\n    from .base import not_defined_there as pl\nexcept ImportError:\n    import lightning.pytorch as pl",
        # the import before the failing one binds; the else block does not run
        "try:\n    import lightning.pytorch as pl\n    import not_installed_x\nexcept ImportError:\n    pass\nelse:\n    pl = 0",
        # an if the source decides
        "if TYPE_CHECKING:\n    pl = None\nelse:\n    import lightning.pytorch as pl",
        "from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    import lightning.pytorch as pl\nelse:\n    pl = 1",
        "import typing\nif typing.TYPE_CHECKING:\n    pl = None\nelif True:\n    import pytorch_lightning as pl",
        "import sys\nif sys.version_info >= (3, 8):\n    import lightning.pytorch as pl\nelse:\n    pl = None",
        "import sys\nif sys.version_info[:2] < (3, 8):\n    pl = None\nelse:\n    import lightning.pytorch as pl",
        "from sys import version_info\nif version_info.major == 2 or version_info < (3,):\n    pl = 0\nelse:\n    import lightning as pl",
        "import lightning.pytorch as pl\nif __name__ == '__main__':\n    pl = None",
        "import sys\nif sys.platform == 'no-such-platform':\n    pl = None\nelse:\n    import lightning.pytorch as pl",
        # a condition it cannot decide, but every branch names Lightning's class
        "if USE_NEW:\n    import lightning.pytorch as pl\nelse:\n    import pytorch_lightning as pl",
        "import lightning.pytorch as pl\nif use_old():\n    import pytorch_lightning as pl",
        "import lightning as L\npl = L.pytorch if NEW else __import__('pytorch_lightning')\npl = L.pytorch",
    ],
)
def test_the_binding_python_runs_is_the_one_read(tmp_path: Path, header: str) -> None:
    files = {
        "proj/__init__.py": "",
        "proj/base.py": "import pytorch_lightning as pl\nLightningModule = pl.LightningModule\n",
        "proj/model.py": f"{header}\n\nclass Model(pl.LightningModule):{MODULE_BODY}",
    }
    found = read(tmp_path, "proj.model.Model", files)
    assert found.is_lightning_module and found.lightning_bases == ("LightningModule",)


PYG = """
    import torch

    try:
        import lightning.pytorch as pl
        _pl_is_available = True
    except ImportError:
        try:
            import pytorch_lightning as pl
            _pl_is_available = True
        except ImportError:
            _pl_is_available = False

    if _pl_is_available:
        LightningModule = pl.LightningModule
    else:
        pl = object
        LightningModule = torch.nn.Module
"""


def test_a_flag_the_try_body_sets_decides_a_later_condition(tmp_path: Path) -> None:
    """PyG's graphgym: `_pl_is_available = True` in the try body that runs, then `if _pl_is_available:` (refused as
    undecidable before flags were read)."""
    files = {
        "proj/__init__.py": "",
        "proj/imports.py": PYG,
        "proj/model.py": f"from proj.imports import LightningModule\n\nclass Model(LightningModule):{MODULE_BODY}",
    }
    assert read(tmp_path, "proj.model.Model", files).is_lightning_module
    files["proj/imports.py"] = PYG.replace("_pl_is_available = False", "_pl_is_available = maybe()")
    assert read(tmp_path / "again", "proj.model.Model", files).is_lightning_module  # that branch does not run
    files["proj/imports.py"] = PYG.replace("_pl_is_available = True", "_pl_is_available = probe()", 1)
    with pytest.raises(LoopgenError, match="'LightningModule' is lightning.pytorch.LightningModule"):
        read(tmp_path / "undecided", "proj.model.Model", files)


def test_a_star_import_in_a_try_body(tmp_path: Path) -> None:
    """NNI's evaluators: `try: from .lightning import *` / `except ImportError: raise` binds what the module
    exports (a star import once counted as failing, the handler's path taken)."""
    files = {
        "nas/__init__.py": "try:\n    from .lightning import *\nexcept ImportError:\n    raise\n",
        "nas/lightning.py": "import pytorch_lightning as pl\n\nclass LightningModule(pl.LightningModule):\n    pass\n",
        "nas/model.py": f"from nas import LightningModule\n\nclass Model(LightningModule):{MODULE_BODY}",
    }
    assert read(tmp_path, "nas.model.Model", files).is_lightning_module


@pytest.mark.parametrize(
    "header, where",
    [
        ("if USE_NEW:\n    import lightning.pytorch as pl\nelse:\n    from torch import nn as pl", 1),
        ("import lightning.pytorch as pl\nfor _ in range(3):\n    if flag():\n        from proj import base as pl", 3),
        ("Base = object\nif flag:\n    import lightning.pytorch as pl\n    Base = pl.LightningModule", 2),
        ("import lightning.pytorch as pl\nmatch mode:\n    case 'plain':\n        from torch import nn as pl", 2),
        ("import lightning.pytorch as pl\nimport torch\nBase = pl.LightningModule if fast else torch.nn.Module", 3),
    ],
)
def test_branches_that_bind_a_base_differently_are_refused(tmp_path: Path, header: str, where: int) -> None:
    """A condition loopgen cannot decide whose branches give the class another base: refused, naming the file and
    the condition's line, never a silent choice."""
    base = "Base" if "Base =" in header else "pl.LightningModule"
    files = {
        "proj/__init__.py": "",
        "proj/base.py": "class LightningModule:\n    pass\n",
        "proj/model.py": f"{header}\n\nclass Model({base}):{MODULE_BODY}",
    }
    with pytest.raises(LoopgenError) as excinfo:
        read(tmp_path, "proj.model.Model", files)
    message = problem(excinfo)
    assert message.startswith(f"{tmp_path / 'proj' / 'model.py'} (line {where}): '")
    assert "as a condition loopgen cannot decide goes" in message and "(reading it for model.class_path)" in message


def test_a_conflict_in_a_re_exporting_module_names_that_module(tmp_path: Path) -> None:
    files = {
        "proj/__init__.py": "",
        "proj/compat.py": "if NEW:\n    import lightning.pytorch as pl\nelse:\n    import torch.nn as pl\n",
        "proj/model.py": f"from proj.compat import pl\n\nclass Model(pl.LightningModule):{MODULE_BODY}",
    }
    with pytest.raises(LoopgenError) as excinfo:
        read(tmp_path, "proj.model.Model", files)
    message = problem(excinfo)
    assert message.startswith(f"{tmp_path / 'proj' / 'compat.py'} (line 1): 'pl.LightningModule' is ")
    assert "lightning.pytorch.LightningModule (line 2) or torch.nn.LightningModule (line 4)" in message


GENERIC = "from typing import Generic, TypeVar\nimport lightning as L\nT = TypeVar('T')\nclass Base(L.LightningModule, Generic[T]): pass"


@pytest.mark.parametrize(
    "header, base",
    [
        ("import lightning as L", "L.LightningModule"),
        ("import lightning as L", "L.pytorch.LightningModule"),
        ("import lightning", "lightning.LightningModule"),
        ("from lightning import pytorch as pl", "pl.LightningModule"),
        ("import lightning.pytorch as pl", "pl.core.LightningModule"),
        ("from pytorch_lightning import *", "LightningModule"),
        ("from torch.nn import *\nfrom lightning.pytorch import *", "LightningModule"),
        (GENERIC, "Base[int]"),
    ],
)
def test_aliases_of_lightning(tmp_path: Path, header: str, base: str) -> None:
    found = read(tmp_path, "m.Model", {"m.py": f"{header}\n\nclass Model({base}):{MODULE_BODY}"})
    assert found.is_lightning_module and "LightningModule" in found.lightning_bases


@pytest.mark.parametrize(
    "source, code",
    [
        ("class Model(make_base()):\n    pass\n", "make_base()"),
        ("class Model(Undefined):\n    pass\n", "Undefined"),
        ("BASES = []\nclass Model(*BASES):\n    pass\n", "*BASES"),
        ("import torch\nBase = torch.nn.Module if False else make()\nclass Model(Base):\n    pass\n", "Base"),
        ("from .missing import Base\nclass Model(Base):\n    pass\n", "Base"),
        ("from torch.nn import *\nclass Model(LightningModule):\n    pass\n", "LightningModule"),
        ("def Base():\n    pass\nclass Model(Base):\n    pass\n", "Base"),
    ],
)
def test_a_base_the_source_does_not_show_is_refused(tmp_path: Path, source: str, code: str) -> None:
    """A base class loopgen cannot follow may be Lightning's and may define hooks: refused with its line, never
    read as no base at all."""
    files = {"proj/__init__.py": "", "proj/model.py": source}
    with pytest.raises(LoopgenError) as excinfo:
        read(tmp_path, "proj.model.Model", files)
    line = source.splitlines().index(next(line for line in source.splitlines() if "class Model" in line)) + 1
    assert problem(excinfo) == (
        f"{tmp_path / 'proj' / 'model.py'} (line {line}): cannot tell which class the base `{code}` of Model is"
        " (loopgen reads the source; nothing runs), so neither whether it is Lightning's nor which hooks it has:"
        " name a class imported from a package or defined in the project (reading it for model.class_path)"
    )


def test_a_class_defined_under_type_checking_is_not_the_one_that_runs(tmp_path: Path) -> None:
    source = """
        from typing import TYPE_CHECKING
        import lightning.pytorch as pl

        if TYPE_CHECKING:
            class Model:
                def typing_only(self):
                    pass
        else:
            class Model(pl.LightningModule):
                def training_step(self, batch, batch_idx):
                    pass
    """
    found = read(tmp_path, "m.Model", {"m.py": source})
    assert found.is_lightning_module and set(found.methods) == {"training_step"}


def test_a_class_is_read_with_the_names_bound_before_it(tmp_path: Path) -> None:
    """`class Model(Model)`: the base is the name as bound when the class statement runs, also in a branch."""
    source = """
        import lightning.pytorch as pl
        try:
            from proj.base import Model
            class Model(Model):
                def own(self):
                    pass
        except ImportError:
            pass
    """
    files = {
        "proj/__init__.py": "",
        "proj/base.py": f"import lightning.pytorch as pl\nclass Model(pl.LightningModule):{MODULE_BODY}",
        "proj/model.py": source,
    }
    found = read(tmp_path, "proj.model.Model", files)
    assert found.is_lightning_module and set(found.methods) == {"own", "training_step"}


def test_an_import_cycle_is_refused_where_it_is_used(tmp_path: Path) -> None:
    files = {
        "cyc/__init__.py": "",
        "cyc/a.py": "from .b import Ghost\n",
        "cyc/b.py": "from .a import Ghost\n",
        "cyc/c.py": "from .a import Ghost\nclass C(Ghost): pass\n",
    }
    with pytest.raises(LoopgenError, match="cannot tell which class the base `Ghost` of C is"):
        read(tmp_path, "cyc.c.C", files)


def test_a_project_class_the_module_is_handed_to_may_read_anything(tmp_path: Path) -> None:
    """`self.net = Wrapper(ptl_module=self)` with Wrapper a dataclass of the module: once an internal error (a
    class taken for a function); the object keeps the module, so any of its methods may read the trainer."""
    source = """
        from dataclasses import dataclass
        import lightning.pytorch as pl

        @dataclass
        class Wrapper:
            ptl_module: object

            def epoch(self):
                return self.ptl_module.trainer.current_epoch

        class Model(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = Wrapper(ptl_module=self)

            def training_step(self, batch, batch_idx):
                pass
    """
    assert read(tmp_path, "m.Model", {"m.py": source}).trainer_reads is None


def scope_of(source: str, name: str = "pkg.mod") -> dict[str, list[object]]:
    """The values each name may have: dotted names, and class / function names for definitions."""
    body = ast.parse(textwrap.dedent(source)).body
    scope = module_scope(name, name.rpartition(".")[0], body, lambda module, _: module != "missing")
    shown = {}
    for key, bounds in scope.names.items():
        shown[key] = [
            b.value.value if isinstance(b.value, ast.Constant) else getattr(b.value, "name", b.value) for b in bounds
        ]
    return shown


def test_module_scope_values() -> None:
    names = scope_of(
        """
        import a.b.c
        import a.b as ab
        from . import sibling
        from ..up import thing as other
        from .sub import *
        try:
            import missing
        except ImportError:
            missing = None
        A, (B, C) = ab.x, (ab.y, thing())
        D = E = ab.z
        F: type = ab.w
        H = True
        G = ab.q
        del G
        class K: pass
        def f(): pass
        for i in range(2):
            loop = ab.l
        with context():
            inside = ab.i
        if sys_version_unknown:
            maybe = ab.m
        """,
        "pkg.sub.mod",
    )
    assert names == {
        "a": ["a"],
        "ab": ["a.b"],
        "sibling": ["pkg.sub.sibling"],
        "other": ["pkg.up.thing"],
        "missing": [None],
        "A": ["a.b.x"],
        "B": ["a.b.y"],
        "C": [None],
        "D": ["a.b.z"],
        "E": ["a.b.z"],
        "F": ["a.b.w"],
        "H": [True],
        "K": ["K"],
        "f": ["f"],
        "i": [None],
        "loop": ["a.b.l"],
        "inside": ["a.b.i"],
        "maybe": ["a.b.m"],  # a branch that leaves it unbound adds nothing: using it there fails
    }


@pytest.mark.parametrize(
    "test, taken",
    [
        ("sys.version_info >= (3, 0)", True),
        ("sys.version_info < (3, 0)", False),
        (f"sys.version_info[:2] == {tuple(sys.version_info[:2])}", True),
        (f"sys.version_info.minor == {sys.version_info.minor}", True),
        ("sys.version_info[0] in (3, 4)", True),
        ("(3, 0) <= sys.version_info < (99, 0)", True),
        ("__name__ != '__main__'", True),
        ("not TYPE_CHECKING and True", True),
        ("TYPE_CHECKING or 0", False),
        ("sys.version_info < (3, 0) and unknown()", False),
        ("sys.version_info >= (3, 0) or unknown()", True),
        ("unknown() and sys.version_info >= (3, 0)", None),
        ("sys.version_info >= 'x'", None),  # values that do not compare
        ("sys.version_info[9] == 1", None),
        ("sys.maxsize > 2", None),
        (f"os.name == {os.name!r}", True),  # the pathlib pattern: `if os.name == "nt": Base = WindowsPath`
        ("os.environ.get('X') == 'nt'", None),
    ],
)
def test_conditions_the_source_decides(test: str, taken: bool | None) -> None:
    values = scope_of(f"import os, sys\nimport a\nif {test}:\n    x = a.yes\nelse:\n    x = a.no\n")["x"]
    assert values == {True: ["a.yes"], False: ["a.no"], None: ["a.yes", "a.no"]}[taken]


def test_an_elif_chain_is_read_as_one_however_long() -> None:
    """if / elif / else: the branches from the first condition loopgen cannot decide to the first that holds; a
    chain of 900 elifs (once a RecursionError, an internal error) reads as one."""
    names = scope_of(
        "import a, sys\nif unknown:\n    x = a.one\nelif sys.version_info > (3,):\n    x = a.two\nelse:\n    x = a.three\n"
    )
    assert names["x"] == ["a.one", "a.two"]
    names = scope_of(
        "import a, sys\nif sys.version_info < (3,):\n    x = a.one\nelif unknown:\n    x = a.two\nelse:\n    x = a.three\n"
    )
    assert names["x"] == ["a.two", "a.three"]
    chain = "".join(f"elif a.x == {i}:\n    x = a.v{i}\n" for i in range(1, 900))
    assert len(scope_of(f"import a\nif a.x == 0:\n    x = a.v0\n{chain}else:\n    x = a.last\n")["x"]) == 901


def test_a_module_too_deeply_nested_for_python_is_refused(tmp_path: Path) -> None:
    chain = "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 3000))
    files = {"m.py": f"x = 0\nif x == 0:\n    pass\n{chain}\nclass Model:\n    pass\n"}
    with pytest.raises(LoopgenError) as excinfo:
        read(tmp_path, "m.Model", files)
    assert problem(excinfo) == (
        f"{tmp_path / 'm.py'}: syntax error: too deeply nested for Python's parser (reading it for model.class_path)"
    )
