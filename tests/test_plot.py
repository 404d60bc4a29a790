"""`loopgen plot`: which metrics.csv, which panels, the PNG, and bad input (one line, exit status 2, no file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loopgen import plot
from loopgen.cli import main as loopgen
from loopgen.errors import LoopgenError
from tests.helpers import ROOT
from tests.plot_example import example_run

pytest.importorskip("matplotlib")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Lightning's CSVLogger layout: sorted columns, sparse rows (a row has what was logged at its step)
SYNTHETIC = """\
epoch,lr-SGD,lr-SGD-momentum,lr-SGD/pg2,step,train/acc,train_loss_epoch,train_loss_step,val/acc,val_loss,weird
0,0.1,0.9,0.01,0,,,,,,
0,,,,1,,,0.9,,,
0,,,,3,0.5,,0.7,,,
0,,,,3,,,,0.6,0.8,
0,,,,3,,0.8,,,,7
1,0.05,0.9,0.005,4,,,,,,
1,,,,5,,,0.5,,,
1,,,,7,0.7,,0.4,,,
1,,,,7,,,,0.75,0.6,
1,,,,7,,0.45,,,,
"""


def write(tmp_path: Path, text: str, name: str = "metrics.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def panels_of(path: Path) -> dict[str, list[str]]:
    return {panel.title: [s.column for s in panel.series] for panel in plot.layout(plot.read_metrics(path))}


def run_cli(*args: str, capsys) -> tuple[int, str, str]:
    status = loopgen(["plot", *args])
    out, err = capsys.readouterr()
    return status, out, err


def is_png(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR" and data.endswith(b"IEND\xaeB`\x82")


# ---------------------------------------------------------------------------
# a real run


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """A metrics.csv written by a generated script (examples/lit_classifier.yaml, logger on, 2 epochs)."""
    return example_run(tmp_path_factory.mktemp("run"), max_epochs=2)


def test_a_generated_scripts_run_plots_its_losses_and_metrics(real_run, tmp_path, capsys):
    csv_path = real_run / "metrics.csv"
    assert panels_of(csv_path) == {
        "loss (train, val)": ["train_loss", "val_loss"],
        "val_acc": ["val_acc"],
        "learning rate": ["lr-SGD"],
    }
    metrics = plot.read_metrics(csv_path)
    steps = {s.column: s.steps for s in metrics.series}
    # 16 batches an epoch, a row every 2 steps; validation at each epoch's last step; the rate at each epoch's start
    assert steps["train_loss"] == tuple(range(1, 32, 2)) and steps["val_loss"] == (15, 31)
    assert steps["lr-SGD"] == (0, 16)

    output = tmp_path / "out.png"
    status, out, err = run_cli(str(real_run.parent.parent), "-o", str(output), capsys=capsys)
    assert (status, err) == (0, "")
    assert out == f"{output}: 3 panels from {csv_path}\n"
    assert is_png(output)


def test_the_default_output_is_curves_png_beside_metrics_csv(real_run, capsys):
    status, out, _ = run_cli(str(real_run), capsys=capsys)
    assert status == 0 and out.startswith(f"{real_run / 'curves.png'}: ")
    assert is_png(real_run / "curves.png")
    mode = (real_run / "curves.png").stat().st_mode & 0o777
    assert mode == (real_run / "metrics.csv").stat().st_mode & 0o777  # a plain file's mode, not mkstemp's 0o600


# ---------------------------------------------------------------------------
# the panels


def test_layout_rules(tmp_path):
    assert panels_of(write(tmp_path, SYNTHETIC)) == {
        "acc (train, val)": ["train/acc", "val/acc"],
        "loss (train, val)": ["train_loss_epoch", "train_loss_step", "val_loss"],
        "weird": ["weird"],
        "learning rate": ["lr-SGD", "lr-SGD/pg2"],
        "momentum": ["lr-SGD-momentum"],
    }


def test_series_keep_the_steps_of_their_non_empty_cells(tmp_path):
    metrics = plot.read_metrics(write(tmp_path, SYNTHETIC))
    series = {s.column: (s.steps, s.values) for s in metrics.series}
    assert series["train_loss_epoch"] == ((3, 7), (0.8, 0.45))
    assert series["train_loss_step"] == ((1, 3, 5, 7), (0.9, 0.7, 0.5, 0.4))
    assert series["lr-SGD"] == ((0, 4), (0.1, 0.05))
    assert "epoch" not in series and "step" not in series


def test_a_stage_without_its_partner_is_its_own_panel(tmp_path):
    text = "epoch,step,train_loss_epoch,train_loss_step,val_acc\n0,1,,0.5,\n0,1,0.5,,0.9\n"
    assert panels_of(write(tmp_path, text)) == {
        "train_loss": ["train_loss_epoch", "train_loss_step"],
        "val_acc": ["val_acc"],
    }


def test_csvloggers_prefix_is_left_out_of_the_titles(tmp_path):
    text = "exp-epoch,exp-lr-Adam,exp-train_loss,exp-val_loss,step\n0,0.001,0.5,0.6,3\n"
    assert panels_of(write(tmp_path, text)) == {
        "loss (train, val)": ["exp-train_loss", "exp-val_loss"],
        "learning rate": ["exp-lr-Adam"],
    }


def test_the_figure_has_one_axes_per_panel_with_its_series(tmp_path):
    metrics = plot.read_metrics(write(tmp_path, SYNTHETIC))
    panels = plot.layout(metrics)
    fig = plot.figure(panels, "lightning_logs/version_0")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == [p.title for p in panels]
    assert [[line.get_label() for line in ax.get_lines()] for ax in visible] == [
        [s.column for s in p.series] for p in panels
    ]
    assert all(ax.get_xlabel() == "step" for ax in visible)
    # a learning rate holds until the next logged value: steps; a metric: lines between its points
    assert [{line.get_drawstyle() for line in ax.get_lines()} for ax in visible] == [
        {"steps-post" if p.title in ("learning rate", "momentum") else "default"} for p in panels
    ]
    assert fig.get_suptitle() == "lightning_logs/version_0"
    assert type(fig.canvas).__name__ == "FigureCanvasAgg"
    assert plot.png(fig).startswith(PNG_SIGNATURE)


# ---------------------------------------------------------------------------
# which metrics.csv


def version(logs: Path, n: int | str, text: str | None = SYNTHETIC) -> Path:
    run = logs / (n if isinstance(n, str) else f"version_{n}")
    run.mkdir(parents=True)
    if text is not None:
        write(run, text)
    return run


def test_a_root_or_logger_directory_plots_its_newest_run(tmp_path, capsys):
    logs = tmp_path / "lightning_logs"
    for n in (0, 2, 10):
        version(logs, n)
    version(logs, 11, text=None)  # started, nothing logged yet
    version(logs, "custom")
    newest = logs / "version_10" / "metrics.csv"
    assert plot.find_metrics(tmp_path) == (newest, f"the newest of 3 runs in {logs}")
    assert plot.find_metrics(logs) == (newest, f"the newest of 3 runs in {logs}")
    assert plot.find_metrics(logs / "custom") == (logs / "custom" / "metrics.csv", "")
    assert plot.find_metrics(newest) == (newest, "")

    status, out, _ = run_cli(str(tmp_path), capsys=capsys)
    assert status == 0
    assert out == f"{newest.parent / 'curves.png'}: 5 panels from {newest} (the newest of 3 runs in {logs})\n"


def test_a_single_run_is_not_called_the_newest(tmp_path):
    run = version(tmp_path / "lightning_logs", 0)
    assert plot.find_metrics(tmp_path) == (run / "metrics.csv", "")


# ---------------------------------------------------------------------------
# bad input: one line, exit status 2, no output written or truncated


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ": empty, no header row"),
        ("epoch,step\n0,3\n", ": no metric columns, only epoch, step"),
        ("epoch,step,loss\n", ": no rows, only the header (nothing was logged yet)"),
        ("epoch,loss\n0,1.0\n", ": no `step` column (header: epoch, loss); is it a CSVLogger's metrics.csv?"),
        ("epoch,step,loss\n0,1,\n", ": every metric cell is empty"),
        ("epoch,step,loss\n0,1,abc\n", " (line 2): loss: expected a number, got 'abc'"),
        ("epoch,step,loss\n0,1.5,2\n", " (line 2): step: expected an integer, got '1.5'"),
        ("epoch,step,loss\n0,1\n", " (line 2): 2 cells, the header has 3"),
    ],
    ids=["empty", "no-metrics", "header-only", "no-step", "all-empty", "not-a-number", "fractional-step", "short-row"],
)
def test_bad_csv(tmp_path, capsys, text, expected):
    csv_path = write(tmp_path, text)
    output = write(tmp_path, "keep me", "curves.png")
    status, out, err = run_cli(str(csv_path), capsys=capsys)
    assert (status, out) == (2, "")
    assert err == f"loopgen: error: {csv_path}{expected}\n"
    assert output.read_text() == "keep me"


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("missing", "{path}: no such file or directory"),
        ("empty-dir", "{path}: no metrics.csv in it, nor in version_N/ or lightning_logs/version_N/ under it"),
    ],
)
def test_missing_input(tmp_path, capsys, where, expected):
    path = tmp_path / where
    if where == "empty-dir":
        version(path / "lightning_logs", 0, text=None)
    status, _, err = run_cli(str(path), capsys=capsys)
    assert status == 2 and err.startswith(f"loopgen: error: {expected.format(path=path)}") and err.count("\n") == 1


def test_bad_output(tmp_path, capsys):
    csv_path = write(tmp_path, SYNTHETIC)
    (tmp_path / "d.png").mkdir()
    for output, expected in [
        (tmp_path / "curves.pdf", "the plot is a PNG; name the file *.png"),
        (tmp_path / "nowhere" / "c.png", f"directory {tmp_path / 'nowhere'} does not exist"),
        (tmp_path / "d.png", "is a directory; name a file in it"),
    ]:
        status, _, err = run_cli(str(csv_path), "-o", str(output), capsys=capsys)
        assert (status, err) == (2, f"loopgen: error: -o {output}: {expected}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png", "metrics.csv"]


def test_without_matplotlib_it_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    csv_path = write(tmp_path, SYNTHETIC)
    output = write(tmp_path, "keep me", "curves.png")
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    status, out, err = run_cli(str(csv_path), capsys=capsys)
    assert (status, out) == (2, "")
    assert err == "loopgen: error: loopgen plot needs matplotlib: pip install 'loopgen[plot]'\n"
    assert output.read_text() == "keep me"
    with pytest.raises(LoopgenError, match=r"loopgen\[plot\]"):
        plot.figure([])


def test_rendering_and_the_cli_import_no_matplotlib():
    code = (
        "import sys; from pathlib import Path; from loopgen.cli import _parser; from loopgen.pipeline import"
        " render_spec; render_spec(Path('examples/lit_classifier.yaml'), 'train.py'); _parser();"
        " import loopgen.plot; print([m for m in sys.modules if m.split('.')[0] == 'matplotlib'])"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
