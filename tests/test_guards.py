"""The script's guards: it never trains on code it was not specialised for.

A project (a LightningModule, a LightningDataModule, a callback, a helper the module is handed to) is rendered
once; each mutation edits the project after the render, as a vendored script meets a model that keeps evolving.
The script must refuse to start (status 2, before it seeds or writes anything) and name what changed; an edit to
code the render did not read must run. The mutations are checked in one interpreter (`tests/guards_driver.py`
imports the script afresh for each), three of them end to end with `python train.py`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import ROOT, env_with_root, write_spec

pytestmark = pytest.mark.slow

MODEL = '''
try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl
import torch

from guarded.helpers import scaled


def unrelated_function():
    return 1


class Net(pl.LightningModule):
    """A small regression."""

    def __init__(self, lr: float = 0.1):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.lr = lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        return scaled(self, loss)

    def on_train_start(self):
        self.started = True

    def __scale(self):  # private: Python names it _Net__scale in the class
        return 1.0

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr * self.__scale())


class Unrelated:
    def method(self):
        return 2
'''

DATA = """
try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


class Data(pl.LightningDataModule):
    def setup(self, stage):
        g = torch.Generator().manual_seed(0)
        self.dataset = TensorDataset(torch.randn(16, 4, generator=g), torch.randn(16, 1, generator=g))

    def train_dataloader(self):
        return DataLoader(self.dataset, batch_size=4)

    def teardown(self, stage):
        self.dataset = None
"""

CALLBACKS = """
try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl


class Counter(pl.Callback):
    def __init__(self):
        self.batches = 0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.batches += 1
"""

HELPERS = """
def scaled(module, loss):
    return loss * 1.0


def not_followed():
    return 3
"""

SPEC = {
    "seed_everything": 0,
    "model": {"class_path": "guarded.models.Net", "init_args": {"lr": 0.1}},
    "data": {"class_path": "guarded.data.Data"},
    "trainer": {
        "accelerator": "cpu",
        "max_epochs": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "callbacks": [{"class_path": "guarded.callbacks.Counter"}],
    },
}

FILES = {"models.py": MODEL, "data.py": DATA, "callbacks.py": CALLBACKS, "helpers.py": HELPERS}


def replaced(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


HOOK = "\n    def on_train_epoch_end(self):\n        self.ended = True\n"

# Each kind of edit after the render: (file, how its text changes, what the script must name). The message lines
# are `<what>: added | edited | gone`, or the structural checks' own.
MUTATIONS = {
    "module_hook_added": (
        "models.py",
        lambda t: replaced(t, "\n    def configure_optimizers", HOOK + "\n    def configure_optimizers"),
        ["Net.on_train_epoch_end: added"],
    ),
    "module_hook_removed": (
        "models.py",
        lambda t: replaced(t, "    def on_train_start(self):\n        self.started = True\n", ""),
        ["Net.on_train_start: gone"],
    ),
    "data_hook_added": (
        "data.py",
        lambda t: replaced(
            t,
            "\n    def teardown",
            "\n    def on_after_batch_transfer(self, batch, dataloader_idx):\n        return batch\n\n    def teardown",
        ),
        ["Data.on_after_batch_transfer: added"],
    ),
    "data_hook_removed": (
        "data.py",
        lambda t: replaced(t, "\n    def teardown(self, stage):\n        self.dataset = None\n", ""),
        ["Data.teardown: gone"],
    ),
    "callback_hook_added": (
        "callbacks.py",
        lambda t: t
        + "\n    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):\n        pass\n",
        ["Counter.on_train_batch_end: added"],
    ),
    "callback_hook_removed": (
        "callbacks.py",
        lambda t: t.split("\n    def on_train_batch_start")[0] + "\n",
        ["Counter.on_train_batch_start: gone"],
    ),
    "log_added": (
        "models.py",
        lambda t: replaced(
            t, "        return scaled(self, loss)", "        self.log('loss', loss)\n        return scaled(self, loss)"
        ),
        ["Net.training_step: edited"],
    ),
    "module_base_changed": (
        "models.py",
        lambda t: replaced(t, "class Net(pl.LightningModule):", "class Net(torch.nn.Module):"),
        ["Net: edited", "Net: subclasses no Lightning class, not LightningModule"],
    ),
    "callback_base_changed": (
        "callbacks.py",
        lambda t: replaced(t, "class Counter(pl.Callback):", "class Counter:"),
        ["Counter: edited", "Counter: subclasses no Lightning class, not Callback"],
    ),
    "optimizers_shape_changed": (
        "models.py",
        lambda t: replaced(
            t,
            "        return torch.optim.SGD(self.parameters(), lr=self.lr * self.__scale())",
            "        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr)\n        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 1)]",
        ),
        ["Net.configure_optimizers: edited"],
    ),
    "private_method_edited": (
        "models.py",
        lambda t: replaced(t, "        return 1.0", "        return 2.0"),
        ["Net.__scale: edited"],
    ),
    "trainer_read_added": (
        "callbacks.py",
        lambda t: replaced(
            t, "        self.batches += 1", "        self.batches += trainer.estimated_stepping_batches"
        ),
        ["Counter.on_train_batch_start: edited"],
    ),
    "helper_edited": (
        "helpers.py",
        lambda t: replaced(t, "return loss * 1.0", "return loss * 2.0"),
        ["scaled: edited"],
    ),
    "module_removed_class": (
        "models.py",
        lambda t: replaced(t, "class Net(", "class Renamed(") + "\nNet = Renamed\n",
        ["Net: gone"],
    ),
    # not in the class's source: a hook set on the class when its module runs, and a base of it the render never
    # read (made at run time): only the structural checks see them
    "hook_set_at_import": (
        "models.py",
        lambda t: t + "\n\ndef _hook(self):\n    pass\n\n\nNet.on_validation_epoch_end = _hook\n",
        ["Net.on_validation_epoch_end: added"],
    ),
    "base_made_at_run_time": (
        "models.py",
        lambda t: t
        + "\n\nNet.__bases__ = (type('Mixin', (pl.LightningModule,), {'on_fit_start': lambda self: None}),)\n",
        ["Net: its base guarded.models.Mixin was not read"],
    ),
}

# edits to code the render did not read, or to nothing the code does: the script runs
UNRELATED = {
    "other_class": ("models.py", lambda t: replaced(t, "        return 2", "        return 3")),
    "other_function": (
        "models.py",
        lambda t: replaced(t, "def unrelated_function():\n    return 1", "def unrelated_function():\n    return 10"),
    ),
    "function_not_followed": ("helpers.py", lambda t: replaced(t, "return 3", "return 4")),
    "imports_moved": ("models.py", lambda t: "import os  # a new import above everything\n" + t),
    "comments_and_blank_lines": (
        "models.py",
        lambda t: replaced(
            t, "    def on_train_start(self):", "    # starts here\n\n\n    def on_train_start(self):  "
        ),
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The project and its script, rendered once."""
    directory = tmp_path_factory.mktemp("guards")
    write_project(directory / "guarded")
    spec = write_spec(directory, SPEC)
    result = subprocess.run(
        [sys.executable, "-m", "loopgen", "render", str(spec), "-o", str(directory / "train.py")],
        cwd=directory, env=env_with_root(), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return directory


def write_project(package: Path, edits: dict[str, object] | None = None) -> None:
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    for name, text in FILES.items():
        edit = (edits or {}).get(name)
        (package / name).write_text(edit(text) if callable(edit) else text)  # type: ignore[operator]


def copy_with(project: Path, destination: Path, file: str | None = None, edit=None) -> Path:
    """The project and its script copied to `destination`, `file` edited by `edit`."""
    shutil.copytree(project, destination, ignore=shutil.ignore_patterns("__pycache__"))
    if file is not None:
        path = destination / "guarded" / file
        path.write_text(edit(path.read_text()))
    return destination


@pytest.fixture(scope="module")
def verdicts(project: Path, tmp_path_factory) -> dict[str, dict]:
    """What check_user_code says of each edited copy of the project: one interpreter for all of them."""
    base = tmp_path_factory.mktemp("edits")
    cases = {
        name: str(copy_with(project, base / name, file, edit))
        for name, (file, edit, *_) in {**MUTATIONS, **UNRELATED, "none": (None, None)}.items()
    }
    result = subprocess.run(
        [sys.executable, "-m", "tests.guards_driver", json.dumps(cases)],
        cwd=ROOT, env=env_with_root(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_an_edit_to_code_the_render_read_stops_the_script(name: str, verdicts: dict[str, dict]) -> None:
    verdict = verdicts[name]
    assert verdict["status"] == 2, f"{name}: the script would run ({verdict})"
    lines = verdict["message"].splitlines()
    for expected in MUTATIONS[name][2]:
        assert f"  {expected}" in lines, f"{name}: {expected!r} not said in\n{verdict['message']}"


@pytest.mark.parametrize("name", [*UNRELATED, "none"])
def test_an_edit_the_render_did_not_read_runs(name: str, verdicts: dict[str, dict]) -> None:
    assert verdicts[name] == {"status": 0, "message": ""}, verdicts[name]


def run_script(directory: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "train.py", *args], cwd=directory, env=env_with_root(directory), capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def test_python_train_py_refuses_before_anything_runs(project: Path, tmp_path: Path) -> None:
    """End to end: exit status 2, the file and the change named with the commands that fix it, nothing written
    (the script runs in an empty directory: it would write lightning_logs there)."""
    file, edit, _ = MUTATIONS["module_hook_added"]
    directory = copy_with(project, tmp_path / "p", file, edit)
    before = sorted(p.name for p in directory.iterdir())
    result = run_script(directory)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert str(directory / "guarded" / "models.py") in result.stderr
    assert "  Net.on_train_epoch_end: added" in result.stderr.splitlines()
    assert "loopgen upgrade train.py" in result.stderr and "--allow-changed-code" in result.stderr
    assert "Seed set" not in result.stdout and result.stdout == ""
    assert sorted(p.name for p in directory.iterdir() if p.name != "__pycache__") == before


def test_help_works_whatever_the_code(project: Path, tmp_path: Path) -> None:
    file, edit, _ = MUTATIONS["module_hook_added"]
    result = run_script(copy_with(project, tmp_path / "p", file, edit), "--help")
    assert result.returncode == 0 and "--allow-changed-code" in result.stdout, result.stderr


def test_allow_changed_code_runs_with_a_warning(project: Path, tmp_path: Path) -> None:
    file, edit, _ = MUTATIONS["module_hook_added"]
    result = run_script(copy_with(project, tmp_path / "p", file, edit), "--allow-changed-code")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.startswith("warning: train.py was rendered from other code than it imports")
    assert "Training stopped after 1 epochs and 4 optimizer steps." in result.stdout


def test_an_unrelated_edit_trains(project: Path, tmp_path: Path) -> None:
    file, edit = UNRELATED["other_class"]
    result = run_script(copy_with(project, tmp_path / "p", file, edit))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr == "" and "Training stopped after 1 epochs and 4 optimizer steps." in result.stdout


def test_loopgen_check_names_the_changed_code(project: Path, tmp_path: Path) -> None:
    file, edit, _ = MUTATIONS["log_added"]
    directory = copy_with(project, tmp_path / "p", file, edit)
    result = subprocess.run(
        [sys.executable, "-m", "loopgen", "check", "spec.yaml", "train.py"], cwd=directory, env=env_with_root(),
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert "your code changed since the script was rendered (guarded.models.Net)" in result.stdout + result.stderr


def test_the_header_lists_what_was_read(project: Path) -> None:
    header = (project / "train.py").read_text().split('"""')[1]
    assert (
        " ".join(header.split()).count(
            "guarded/callbacks.py (Counter); guarded/data.py (Data); guarded/helpers.py (scaled);"
            " guarded/models.py (Net)."
        )
        == 1
    ), header


def test_the_render_and_the_script_fingerprint_alike(tmp_path: Path) -> None:
    """loopgen.source.fingerprints and the script's twin agree on code written every way Python allows: decorators,
    definitions in `if` blocks, a property's setter, async methods, a generic base, CRLF line ends, a coding line."""
    package = tmp_path / "tricky"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = textwrap.dedent('''\
        # -*- coding: utf-8 -*-
        import functools
        import typing
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        if torch.__version__:
            def helper():
                return 1
        else:
            def helper():
                return 2


        def decorate(cls):
            return cls


        T = typing.TypeVar("T")


        class Base(torch.nn.Module, typing.Generic[T]):
            def on_train_start(self):
                self.started = True


        @decorate
        class Model(
            Base[int],
        ):
            """Caf\u00e9."""
            scale = 1

            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(2, 1)

            @property
            def width(self):
                return 2

            @width.setter
            def width(self, value):
                pass

            async def later(self):
                return None

            @functools.wraps(helper)
            def training_step(self, batch, batch_idx):
                return self.layer(batch[0]).sum()

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

            def train_dataloader(self):
                return DataLoader(TensorDataset(torch.randn(4, 2)), batch_size=2)
        ''').replace("\n", "\r\n")
    (package / "models.py").write_bytes(module.encode())
    spec = {
        "model": "tricky.models.Model",
        "trainer": {"accelerator": "cpu", "max_epochs": 1, "logger": False, "enable_checkpointing": False,
                    "enable_progress_bar": False, "enable_model_summary": False},
    }  # fmt: skip
    write_spec(tmp_path, spec)
    render = [sys.executable, "-m", "loopgen", "render", "spec.yaml", "-o", "train.py"]
    rendered = subprocess.run(render, cwd=tmp_path, env=env_with_root(), capture_output=True, text=True)
    assert rendered.returncode == 0, rendered.stderr
    assert "model.on_train_start()" in (tmp_path / "train.py").read_text()  # a generic base's hook: read
    result = run_script(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rendered from other code" not in result.stderr


@pytest.mark.parametrize("hook", ["state_dict", "load_state_dict"])
def test_a_data_hook_the_script_would_not_call_is_refused_at_render(hook: str, tmp_path: Path, monkeypatch) -> None:
    """What the render knows the script would not call is refused there, with its line, never skipped."""
    from loopgen.errors import LoopgenError
    from loopgen.pipeline import render_spec

    method = f"\n    def {hook}(self, *args):\n        return args[0] if args else {{}}\n"
    write_project(tmp_path / "guarded", {"data.py": lambda t: t + method})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPGEN_NO_CACHE", "1")
    spec = {**SPEC, "trainer": {**SPEC["trainer"], "enable_checkpointing": True}}
    with pytest.raises(LoopgenError) as refused:
        render_spec(write_spec(tmp_path, spec))
    (problem,) = refused.value.problems
    assert (
        problem.where.endswith("guarded/data.py:21") and f"guarded.data.Data.{hook} is not supported" in problem.message
    )
    render_spec(write_spec(tmp_path, SPEC))  # without checkpoints, Lightning never asks the data module for its state


def test_aliases_and_class_attributes_are_parts(tmp_path: Path) -> None:
    """A method given another name in the class body (`on_train_epoch_end = shared_end`) is that hook, which the
    script calls; it and a class attribute are parts of the class: the script stops when one changes."""
    alias = "\n    def shared_end(self):\n        pass\n\n    on_train_epoch_end = shared_end\n    flag = True\n"
    write_project(
        tmp_path / "guarded",
        {"models.py": lambda t: replaced(t, "\n    def on_train_start", alias + "\n    def on_train_start")},
    )
    write_spec(tmp_path, SPEC)
    render = [sys.executable, "-m", "loopgen", "render", "spec.yaml", "-o", "train.py"]
    assert subprocess.run(render, cwd=tmp_path, env=env_with_root(), capture_output=True).returncode == 0
    assert "model.on_train_epoch_end()" in (tmp_path / "train.py").read_text()  # the alias is the hook: called
    assert run_script(tmp_path, "--max-epochs", "0").returncode == 0
    models = tmp_path / "guarded" / "models.py"
    models.write_text(replaced(models.read_text(), "    flag = True", "    flag = False"))
    result = run_script(tmp_path, "--max-epochs", "0")
    assert result.returncode == 2 and "  Net.flag: edited" in result.stderr.splitlines(), result.stderr


def test_loopgen_run_renders_the_code_as_it_is(project: Path, tmp_path: Path) -> None:
    """`loopgen run` renders before it runs: an edit after the last render never stops it."""
    file, edit, _ = MUTATIONS["module_hook_added"]
    directory = copy_with(project, tmp_path / "p", file, edit)
    result = subprocess.run(
        [sys.executable, "-m", "loopgen", "run", "spec.yaml"], cwd=directory, env=env_with_root(directory),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "rendered from other code" not in result.stderr
