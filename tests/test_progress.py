"""The progress bar, as a user sees it: what a rendered script draws on a terminal (a pseudo-terminal here) and
prints into a pipe, compared with what pytorch_lightning.Trainer's own bar draws for the same module, flags and
seed (tests/parity/runner.py trains the Lightning side).

Each drawing is read back as its frames (`frames`): description, batches done, total, and the postfix (v_num and
the prog_bar=True values). Timings differ between any two runs; the frames' other fields do not.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import env_with_root, render, write_spec

pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

MODEL = '''
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import RichProgressBar, TQDMProgressBar
from pytorch_lightning.callbacks.progress.rich_progress import RichProgressBarTheme
from rich.progress import TextColumn
from torch.utils.data import DataLoader, TensorDataset


class Quiet(TQDMProgressBar):
    """Lightning's bar without v_num, its training bar described by the subclass's own words."""

    def get_metrics(self, trainer, pl_module):
        items = super().get_metrics(trainer, pl_module)
        items.pop("v_num", None)
        return items

    def on_train_epoch_start(self, trainer, *_):
        super().on_train_epoch_start(trainer)
        self.train_progress_bar.set_description(f"Fitting {trainer.current_epoch + 1}/{trainer.max_epochs}")


class Styled(RichProgressBar):
    """Lightning's rich bar with a column of its own after the bar, the metrics to 2 places and set apart, no
    v_num."""

    def __init__(self):
        super().__init__(theme=RichProgressBarTheme(metrics_format=".2f", metrics_text_delimiter=" | "))

    def configure_columns(self, trainer):
        columns = super().configure_columns(trainer)
        return [*columns[:2], TextColumn(f"of {trainer.max_epochs}"), *columns[2:]]

    def get_metrics(self, trainer, pl_module):
        return {name: value for name, value in super().get_metrics(trainer, pl_module).items() if name != "v_num"}


class Shown(pl.LightningModule):
    """Logs to the progress bar: a step and epoch value, a step-only value, a validation value."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def _loader(self, n):
        g = torch.Generator().manual_seed(n)
        return DataLoader(TensorDataset(torch.randn(n, 4, generator=g), torch.randn(n, 1, generator=g)), batch_size=4)

    def train_dataloader(self):
        return self._loader(40)

    def val_dataloader(self):
        return self._loader(20)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss, prog_bar=True, on_step=True, on_epoch=True)
        self.log("shift", -loss.detach() / 2, prog_bar=True)  # a negative number
        self.log("hidden", loss)  # not on the bar
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Printing(Shown):
    """Shown, printing with self.print (Lightning's, through the bar's print while a bar is shown) in hooks before,
    during and after the bars."""

    def setup(self, stage):
        self.print("printed: setup")

    def on_train_start(self):
        self.print("printed: train start")

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if batch_idx in (0, 4):
            self.print("printed: batch", batch_idx, self.current_epoch, sep="|")

    def on_validation_epoch_end(self):
        self.print("printed: validation", self.trainer.sanity_checking)

    def on_train_end(self):
        self.print("printed: train end")


class Failing(Shown):
    """Shown, whose fourth training batch raises."""

    def training_step(self, batch, batch_idx):
        if batch_idx == 3:
            raise ValueError("the fourth batch")
        return super().training_step(batch, batch_idx)


class TwoVal(Shown):
    """Shown, validated on two loaders in fit (5 and 2 batches), each logging its own val_loss."""

    def val_dataloader(self):
        return [self._loader(20), self._loader(8)]

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.layer(x), y), prog_bar=True)


class Tested(Shown):
    """Shown, with a test step over two loaders: the test subcommand's bar."""

    def test_step(self, batch, batch_idx, dataloader_idx=0):
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self.layer(x), y))

    def test_dataloader(self):
        return [self._loader(24), self._loader(8)]

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return self.layer(batch[0])

    def predict_dataloader(self):
        return [self._loader(12), self._loader(16)]
'''

BASE = {
    "seed_everything": 0,
    "model": "barproj.models.Shown",
    # the default logger (v_num) and the bar, said explicitly: the Lightning runner's defaults are off
    # the model summary off: what the script prints before training is the bar's alone
    "trainer": {
        "accelerator": "cpu",
        "enable_checkpointing": False,
        "logger": True,
        "enable_progress_bar": True,
        "enable_model_summary": False,
    },
}
CASES = {
    # a sanity check, validation at each epoch's end
    "epochs": {"max_epochs": 2},
    # validation in the middle of the epochs, the last epoch's total cut to the steps left (13 - 10)
    "steps": {"max_steps": 13, "val_check_interval": 0.5, "num_sanity_val_steps": 0},
}
COLUMNS = 250  # wide enough for every frame: none is cut

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
FRAME = re.compile(
    r"(?P<description>[^\r\n]+?): +(?:(?P<percent>\d+)%)?\|(?P<bar>[^|]*)\| (?P<n>\d+)/(?P<total>\d+|\?) "
    r"\[(?P<elapsed>\d\d:\d\d)<(?P<remaining>\d\d:\d\d|\?), (?P<rate>[ \d.]+|\?)it/s(?:, (?P<postfix>[^\]]*))?\]"
)
PLAIN = re.compile(
    r"(?P<description>.+?):(?: +(?P<percent>\d+)%)? (?P<n>\d+)/(?P<total>\d+|\?) "
    r"\[(?P<elapsed>\d\d:\d\d)<(?P<remaining>\d\d:\d\d|\?), (?P<rate>[ \d.]+|\?)it/s(?:, (?P<postfix>[^\]]*))?\]"
)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bar")
    (root / "barproj").mkdir()
    (root / "barproj" / "__init__.py").write_text("")
    (root / "barproj" / "models.py").write_text(MODEL)
    return root


def spec_of(**trainer: Any) -> dict[str, Any]:
    return {**BASE, "trainer": {**BASE["trainer"], **trainer}}


def in_pty(command: list[str], cwd: Path, env: dict[str, str], returncode: int = 0) -> str:
    """What `command` writes to its terminal: a pseudo-terminal COLUMNS wide (stderr apart); it must exit with
    `returncode`."""
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))
    env = {**env, "COLUMNS": str(COLUMNS), "PYTHONIOENCODING": "utf-8"}
    process = subprocess.Popen(command, stdin=terminal, stdout=terminal, stderr=subprocess.PIPE, cwd=cwd, env=env)
    os.close(terminal)
    output = b""
    while True:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                data = os.read(main, 1 << 16)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            output += data
        elif process.poll() is not None:
            break
    stderr = process.communicate(timeout=300)[1]
    os.close(main)
    assert process.returncode == returncode, stderr.decode()[-4000:]
    return output.decode("utf-8")


def run_script(project: Path, spec: dict[str, Any], name: str, terminal: bool, args: list[str] = ()) -> str:
    """Render `spec`, run the script in its own directory, on a terminal or into a pipe; what it wrote."""
    directory = project / name
    directory.mkdir(exist_ok=True)
    script = directory / "train.py"
    cwd = os.getcwd()
    os.chdir(project)
    try:
        script.write_text(render(write_spec(directory, spec)))
    finally:
        os.chdir(cwd)
    env = env_with_root(project)
    if terminal:
        return in_pty([sys.executable, str(script), *args], directory, env)
    result = subprocess.run(
        [sys.executable, str(script), *args], cwd=directory, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


# what run_lightning drew, by spec: tests that compare with the same Lightning run share it (tests/schedule.py
# runs this module's tests on one worker)
LIGHTNING_RUNS: dict[str, str] = {}


def run_lightning(project: Path, spec: dict[str, Any], name: str) -> str:
    """pytorch_lightning.Trainer on the same spec, on a terminal, in its own directory (its CSVLogger's
    version_0, as the script's); a spec already run here is not run again."""
    key = json.dumps(spec, sort_keys=True)
    if key not in LIGHTNING_RUNS:
        LIGHTNING_RUNS[key] = lightning_on_a_terminal(project, spec, name)
    return LIGHTNING_RUNS[key]


def lightning_on_a_terminal(project: Path, spec: dict[str, Any], name: str) -> str:
    directory = project / name
    directory.mkdir(exist_ok=True)
    spec_file = write_spec(directory, spec)
    code = f"import yaml; from tests.parity.runner import run_lightning; run_lightning(yaml.safe_load(open({str(spec_file)!r})))"
    return in_pty([sys.executable, "-c", code], directory, env_with_root(project))


def frames(output: str) -> list[dict[str, str]]:
    """Every bar drawn on the terminal, in order (tqdm's format)."""
    return [match.groupdict() for match in FRAME.finditer(ANSI.sub("", output))]


def states(output: str) -> list[tuple[str, int, str, str]]:
    """What each bar shows once its batch is done: (description, n, total, postfix) per run of frames of one
    description and count, the last of the run. Frames at n = 0 are left out: tqdm draws a bar when it is made
    and reset, before any batch."""
    found: list[tuple[str, int, str, str]] = []
    for frame in frames(output):
        state = (frame["description"], int(frame["n"]), frame["total"], frame["postfix"] or "")
        if state[1] == 0:
            continue
        if found and found[-1][:3] == state[:3]:
            found[-1] = state
        else:
            found.append(state)
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_bar_redraws_in_place_and_shows_what_lightnings_shows(project, case):
    ours = run_script(project, spec_of(**CASES[case]), f"ours_{case}", terminal=True)
    lightning = run_lightning(project, spec_of(callbacks=["TQDMProgressBar"], **CASES[case]), f"lightning_{case}")
    # redrawn in place: one frame after another on the same line, the next epoch on it too
    assert re.search(r"\rEpoch 0:  10%\|[^\n]*\rEpoch 0:  20%\|[^\n]*\rEpoch 0:  50%\|", ours)
    assert re.search(r"\rEpoch 0: 100%\|[^\n]*\rEpoch 1:   0%\|", ours)
    for frame in frames(ours):
        assert len(frame["bar"]) > 10 and set(frame["bar"]) <= set(" ▏▎▍▌▋▊▉█")  # the bar fills the line
    assert states(ours) == states(lightning)
    shown = [postfix for description, *_, postfix in states(ours) if description.startswith("Epoch")]
    assert shown[0].startswith("v_num=0, loss_step=") and ", shift=-0." in shown[0]
    assert any("val_loss=" in postfix and "loss_epoch=" in postfix for postfix in shown)
    assert not any("hidden" in postfix for postfix in shown)
    if case == "steps":
        assert ("Epoch 1", 3, "3") in [state[:3] for state in states(ours)]  # the 3 steps left


def test_without_a_terminal_a_plain_line_every_n_batches(project):
    lightning = run_lightning(project, spec_of(callbacks=["TQDMProgressBar"], max_epochs=2), "lightning_plain")
    settled = {state[:3]: state[3] for state in states(lightning)}
    # (flags, the batches of epoch 0 with a line, the batches of each validation with a line)
    for flags, train, val in (({}, [10], [5]), ({"progress_bar_refresh_rate": 4}, [4, 8, 10], [4, 5])):
        ours = run_script(project, spec_of(max_epochs=2, **flags), f"ours_plain_{len(train)}", terminal=False)
        assert "\r" not in ours and "\x1b" not in ours
        lines = ours.splitlines()
        bars = [
            PLAIN.fullmatch(line)
            for line in lines[: lines.index("Training stopped after 2 epochs and 20 optimizer steps.")]
        ]
        assert all(bars), lines
        assert [(bar["description"], bar["n"]) for bar in bars[:1]] == [("Sanity Checking DataLoader 0", "2")]
        epoch_0 = [bar for bar in bars if bar["description"] == "Epoch 0"]
        assert [int(bar["n"]) for bar in epoch_0] == train
        for bar in epoch_0:
            n = int(bar["n"])
            assert bar["percent"] == str(100 * n // 10) and bar["total"] == "10"
            # the postfix is Lightning's at that batch; at the epoch's end, after its validation
            assert bar["postfix"] == settled[("Epoch 0", n, "10")]
        validation = [int(bar["n"]) for bar in bars if bar["description"] == "Validation DataLoader 0"]
        assert validation == val * 2


@pytest.mark.parametrize("bar", ["own", "TQDMProgressBar", "RichProgressBar", "off"])
def test_self_print_goes_where_lightnings_goes(project, bar):
    """LightningModule.print: through the bar's print while one is shown (TQDMProgressBar's prints nothing before
    its first bar), plain print without a bar; on a terminal, as Lightning's."""
    flags = {"max_epochs": 2, "enable_progress_bar": bar != "off"}
    if bar not in ("own", "off"):
        flags["callbacks"] = [bar]
    spec = {**spec_of(**flags), "model": "barproj.models.Printing"}
    # the script's own bar is Lightning's TQDMProgressBar (Lightning's default is its RichProgressBar with rich)
    theirs = {**spec, "trainer": {**spec["trainer"], "callbacks": ["TQDMProgressBar"]}} if bar == "own" else spec
    lightning = run_lightning(project, theirs, f"lightning_print_{bar}")
    ours = run_script(project, spec, f"ours_print_{bar}", terminal=True)

    def printed(output: str) -> list[str]:
        return [
            line[line.index("printed: ") :].rstrip()
            for line in ANSI.sub("", output).replace("\r", "\n").splitlines()
            if "printed: " in line
        ]

    assert printed(ours) == printed(lightning)
    assert ("printed: setup" in printed(ours)) == (bar in ("off", "RichProgressBar"))
    assert "printed: batch|4|1" in printed(ours)


TQDM_EVERY_2 = {"class_path": "TQDMProgressBar", "init_args": {"refresh_rate": 2}}
QUIET_EVERY_2 = {"class_path": "barproj.models.Quiet", "init_args": {"refresh_rate": 2}}


@pytest.mark.parametrize(
    ("command", "bar"),
    [
        ("test", None),
        ("validate", None),
        ("predict", None),
        ("test", TQDM_EVERY_2),
        ("predict", TQDM_EVERY_2),
        ("validate", QUIET_EVERY_2),
        ("test", QUIET_EVERY_2),
        ("predict", QUIET_EVERY_2),
    ],
    ids=[
        "test",
        "validate",
        "predict",
        "test_tqdm",
        "predict_tqdm",
        "validate_subclass",
        "test_subclass",
        "predict_subclass",
    ],
)
def test_an_evaluation_bar_shows_what_lightnings_shows(project, command, bar):
    """validate, test and predict: one bar per loader, "Testing DataLoader N" / "Validation DataLoader 0" /
    "Predicting DataLoader N", which stays; the script's own bar (Lightning's default TQDMProgressBar), the
    spec's TQDMProgressBar, drawn by tqdm, or a subclass of it, every `refresh_rate` batches."""
    spec = {**spec_of(max_epochs=1, **({"callbacks": [bar]} if bar else {})), "model": "barproj.models.Tested"}
    name = f"{command}_{bar['class_path'].rpartition('.')[2] if bar else 'own'}"
    ours = run_script(project, spec, f"ours_{name}", terminal=True, args=[command])
    directory = project / f"lightning_{name}"
    directory.mkdir(exist_ok=True)
    spec_file = write_spec(directory, {**spec, "trainer": {**spec["trainer"], "callbacks": [bar or "TQDMProgressBar"]}})
    code = (
        "import yaml, pytorch_lightning as pl; from tests.harness import instantiate;"
        " from tests.parity.runner import lightning_trainer_kwargs;"
        f" spec = yaml.safe_load(open({str(spec_file)!r})); pl.seed_everything(spec['seed_everything'], workers=True);"
        f" pl.Trainer(**lightning_trainer_kwargs(spec['trainer'])).{command}(instantiate(spec['model']))"
    )
    lightning = in_pty([sys.executable, "-c", code], directory, env_with_root(project))
    # a frame every refresh_rate batches and at the last, each loader on its own bar
    loaders = {
        "test": [("Testing DataLoader 0", 6), ("Testing DataLoader 1", 2)],
        "validate": [("Validation DataLoader 0", 5)],
        "predict": [("Predicting DataLoader 0", 3), ("Predicting DataLoader 1", 4)],
    }[command]
    every = bar["init_args"]["refresh_rate"] if bar else 1
    expected = [
        (description, n, str(total), "")
        for description, total in loaders
        for n in range(1, total + 1)
        if n % every == 0 or n == total
    ]
    assert states(ours) == states(lightning) == expected
    assert re.search(r"DataLoader \d: 100%\|[^\r\n]*\]\r?\n", ours)  # it stays on its line


def test_a_subclass_of_tqdmprogressbar_draws_as_under_lightning(project):
    """A user's TQDMProgressBar subclass draws on the script's base class: its overrides (no v_num, its own
    description) and the base's bars, frame for frame as Lightning's Trainer draws them with the same class."""
    spec = spec_of(callbacks=[QUIET_EVERY_2], max_epochs=2)
    ours = run_script(project, spec, "ours_quiet", terminal=True)
    lightning = run_lightning(project, spec, "lightning_quiet")
    assert states(ours) == states(lightning)
    described = [state[:3] for state in states(ours)]
    assert ("Fitting 1/2", 10, "10") in described and ("Validation DataLoader 0", 5, "5") in described
    assert "Sanity Checking DataLoader 0" in {state[0] for state in states(ours)}
    assert not any("v_num" in state[3] for state in states(ours)) and "loss_step=" in states(ours)[-1][3]


def test_tqdm_when_the_spec_names_tqdmprogressbar(project):
    bar = {"class_path": "TQDMProgressBar", "init_args": {"refresh_rate": 2, "leave": True}}
    ours = run_script(project, spec_of(callbacks=[bar], max_epochs=2), "ours_tqdm", terminal=True)
    lightning = run_lightning(project, spec_of(callbacks=[bar], max_epochs=2), "lightning_tqdm")
    assert states(ours) == states(lightning)
    # every 2 batches, and the last again after the validation
    assert [state[1] for state in states(ours) if state[0] == "Epoch 0"] == [2, 4, 6, 8, 10, 10]
    assert re.search(r"Epoch 0: 100%\|[^\r\n]*\]\r\n", ours)  # leave: each epoch's bar stays on its line


def test_rich_when_the_spec_names_richprogressbar(project):
    bar = {"class_path": "RichProgressBar"}
    ours = ANSI.sub("", run_script(project, spec_of(callbacks=[bar], max_epochs=2), "ours_rich", terminal=True))
    lightning = ANSI.sub("", run_lightning(project, spec_of(callbacks=[bar], max_epochs=2), "lightning_rich"))
    ours_words = last_epoch_words(ours)
    assert ours_words == last_epoch_words(lightning)
    assert ours_words[:2] == ["Epoch", "1/1"] and "10/10" in ours_words and "v_num:" in ours_words


def test_a_subclass_of_richprogressbar_draws_as_under_lightning(project):
    """A user's RichProgressBar subclass draws on the script's base class: its column, its theme's format and its
    metrics beside the epoch's task, as Lightning's Trainer draws them with the same class."""
    spec = spec_of(callbacks=["barproj.models.Styled"], max_epochs=2)
    ours = ANSI.sub("", run_script(project, spec, "ours_styled", terminal=True))
    lightning = ANSI.sub("", run_lightning(project, spec, "lightning_styled"))
    assert last_epoch_words(ours) == last_epoch_words(lightning)
    words = last_epoch_words(ours)
    assert words[:4] == ["Epoch", "1/1", "of", "10/10"] and " of 2 " in ours  # its column, after the bar
    assert "|" in words  # its delimiter
    assert "v_num:" not in words and re.fullmatch(r"-?\d+\.\d\d", words[words.index("loss_step:") + 1])


def last_epoch_words(output: str) -> list[str]:
    """The last frame of the last epoch's rich task, less the bar, the times and the speed."""
    line = [line for line in re.split(r"[\r\n]", output) if line.startswith("Epoch 1/1")][-1]
    return [word for word in line.split() if not re.fullmatch(r"[━╺╸]+|[\d:]+|•|[\d.]+it/s", word)]


@pytest.mark.parametrize("bar", ["own", "TQDMProgressBar"])
def test_several_val_loaders_in_fit_as_lightnings(project, bar):
    """Two val loaders in fit: the sanity check's and each validation's bar restarts for the second loader
    ("DataLoader 1", its own total), and each loader's value shows under its suffixed name."""
    spec = {**spec_of(max_epochs=2, **({"callbacks": [bar]} if bar != "own" else {})), "model": "barproj.models.TwoVal"}
    ours = run_script(project, spec, f"ours_two_val_{bar}", terminal=True)
    lightning = run_lightning(
        project, {**spec_of(max_epochs=2, callbacks=["TQDMProgressBar"]), "model": spec["model"]}, "lightning_two_val"
    )
    assert states(ours) == states(lightning)
    described = [state[:3] for state in states(ours)]
    assert ("Sanity Checking DataLoader 1", 2, "2") in described and ("Validation DataLoader 1", 2, "2") in described
    assert "val_loss/dataloader_idx_1=" in states(ours)[-1][3]


def test_rich_stops_its_display_when_fit_raises(project):
    """RichProgressBar.on_exception stops the display, as Lightning's does: the cursor is shown again after the
    last frame, and the error's traceback is not drawn into the bar (rich's display redirects the output)."""
    directory = project / "ours_rich_failing"
    directory.mkdir(exist_ok=True)
    spec = {**spec_of(max_epochs=1, callbacks=["RichProgressBar"]), "model": "barproj.models.Failing"}
    cwd = os.getcwd()
    os.chdir(project)
    try:
        (directory / "train.py").write_text(render(write_spec(directory, spec)))
    finally:
        os.chdir(cwd)
    output = in_pty([sys.executable, "train.py"], directory, env_with_root(project), returncode=1)
    assert output.rfind("\x1b[?25h") > output.rfind("\x1b[?25l") >= 0
    assert "3/10" in ANSI.sub("", output) and "ValueError" not in output


@pytest.mark.parametrize("bar", ["RichProgressBar", "barproj.models.Styled"])
def test_rich_evaluation_bar_and_table_as_lightnings(project, bar):
    """test with a RichProgressBar (or a subclass) on a terminal: the last loader's task, "Testing", and rich's
    results table drawn as Lightning draws them."""
    spec = {**spec_of(max_epochs=1, callbacks=[bar]), "model": "barproj.models.Tested"}
    name = bar.rsplit(".", 1)[-1]
    ours = ANSI.sub("", run_script(project, spec, f"ours_test_{name}", terminal=True, args=["test"]))
    directory = project / f"lightning_test_{name}"
    directory.mkdir(exist_ok=True)
    spec_file = write_spec(directory, spec)
    code = (
        "import yaml, pytorch_lightning as pl; from tests.harness import instantiate;"
        " from tests.parity.runner import lightning_trainer_kwargs;"
        f" spec = yaml.safe_load(open({str(spec_file)!r})); pl.seed_everything(spec['seed_everything'], workers=True);"
        " pl.Trainer(**lightning_trainer_kwargs(spec['trainer'])).test(instantiate(spec['model']))"
    )
    lightning = ANSI.sub("", in_pty([sys.executable, "-c", code], directory, env_with_root(project)))

    def shown(output: str) -> tuple[list[str], list[str]]:
        lines = re.split(r"[\r\n]+", output)
        task = [line for line in lines if line.startswith("Testing")][-1].split()
        task = [word for word in task if not re.fullmatch(r"[━╺╸]+|[\d:]+|•|[\d.]+it/s", word)]
        table = [line.rstrip() for line in lines if line[:1] in set("┏┃┡│└")]
        return task, table

    assert shown(ours) == shown(lightning)
    task, table = shown(ours)
    assert task[0] == "Testing" and "2/2" in task and "Test metric" in table[1] and "DataLoader 1" in table[1]


def test_scripts_import_a_bar_package_only_when_the_spec_names_its_bar(project):
    import ast

    def imported(spec: dict[str, Any]) -> set[str]:
        cwd = os.getcwd()
        os.chdir(project)
        try:
            tree = ast.parse(render(spec, project))
        finally:
            os.chdir(cwd)
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names.add((node.module or "").split(".")[0])
        return names - set(sys.stdlib_module_names)

    assert imported(spec_of(max_epochs=1)) == {"torch", "barproj"}
    assert imported(spec_of(max_epochs=1, enable_progress_bar=False)) == {"torch", "barproj"}
    assert imported(spec_of(max_epochs=1, callbacks=["TQDMProgressBar"])) == {"torch", "barproj", "tqdm"}
    assert imported(spec_of(max_epochs=1, callbacks=["RichProgressBar"])) == {"torch", "barproj", "rich"}


def test_a_bar_off_leaves_no_progress_code(project):
    cwd = os.getcwd()
    os.chdir(project)
    try:
        no_rate = {"class_path": "TQDMProgressBar", "init_args": {"refresh_rate": 0}}
        for trainer in ({"enable_progress_bar": False}, {"callbacks": [no_rate]}):
            text = render(spec_of(max_epochs=1, **trainer), project)
            assert "progress_bar" not in text and "PROGRESS" not in text and "class Bar" not in text
    finally:
        os.chdir(cwd)


def test_a_run_resumed_mid_epoch_counts_on_a_training_bar(project):
    """Lightning skips on_train_epoch_start when it resumes in the middle of an epoch: its bar stays "Training",
    without a total, and counts the epoch's batches."""
    every_3 = {"class_path": "ModelCheckpoint", "init_args": {"every_n_train_steps": 3, "save_top_k": -1}}
    spec = spec_of(max_epochs=2, enable_checkpointing=True, callbacks=[every_3])
    run_script(project, spec, "resumed", terminal=False)
    directory = project / "resumed"
    result = subprocess.run(
        [sys.executable, "train.py", "--ckpt-path", "lightning_logs/version_0/checkpoints/epoch=1-step=15.ckpt"],
        cwd=directory,
        env=env_with_root(project),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    bars = [PLAIN.fullmatch(line) for line in result.stdout.splitlines() if PLAIN.fullmatch(line)]
    assert [(bar["description"], bar["n"], bar["total"]) for bar in bars] == [
        ("Validation DataLoader 0", "5", "5"),
        ("Training", "10", "?"),
    ]
    assert bars[-1]["postfix"].startswith("v_num=1, loss_step=")
