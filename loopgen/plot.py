"""`loopgen plot`: a run's metrics.csv (Lightning's CSVLogger layout) as one PNG, one panel per metric.

- `find_metrics`: which metrics.csv an argument names (a file, a run directory, a logger's or a root directory).
- `read_metrics`: the CSV's columns as series of (step, value), skipping the empty cells of its sparse rows.
- `layout`: which series share a panel (pure; the rules are in its docstring and docs/logging.md "Plotting a run").
- `figure` / `png`: the panels drawn with matplotlib's Agg canvas. Only these import matplotlib, an optional
  extra (`pip install 'loopgen[plot]'`); nothing else in loopgen, and no generated script, needs it.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopgen.errors import LoopgenError

METRICS_FILE = "metrics.csv"
DEFAULT_OUTPUT = "curves.png"
INSTALL_HINT = "loopgen plot needs matplotlib: pip install 'loopgen[plot]'"
NOT_PANELS = ("epoch", "step")
VERSION = re.compile(r"version_(\d+)")
STAGE = re.compile(r"(train|val)([_/])(.+)")
LR_PANELS = (("-momentum", "momentum"), ("-weight_decay", "weight decay"))


@dataclass(frozen=True)
class Series:
    """One column of metrics.csv: the steps of its non-empty cells, and their values."""

    column: str
    steps: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class Metrics:
    path: Path
    prefix: str  # CSVLogger's prefix ("" without one): every column but `step` starts with "{prefix}-"
    series: tuple[Series, ...]  # the metric columns, in the file's (sorted) order; not epoch, step


@dataclass(frozen=True)
class Panel:
    title: str
    series: tuple[Series, ...]
    held: bool = False  # a value holds until the next one (LearningRateMonitor's): drawn as steps


# ---------------------------------------------------------------------------
# which file


def find_metrics(path: Path) -> tuple[Path, str]:
    """The metrics.csv that `path` names, and a note when it was picked among several runs.

    `path` is the CSV file itself, a run directory (`version_N`, holding metrics.csv), a logger's directory
    (`save_dir/name`, holding `version_N/`) or a root directory (holding `lightning_logs/version_N/`). From the
    last two, the run with the highest N that has a metrics.csv: the newest, as loggers number runs.
    """
    if path.is_file():
        return path, ""
    if not path.exists():
        raise LoopgenError(f"{path}: no such file or directory")
    if not path.is_dir():
        raise LoopgenError(f"{path}: not a file or a directory")
    if (path / METRICS_FILE).is_file():
        return path / METRICS_FILE, ""
    for logs in (path, path / "lightning_logs"):
        runs = sorted(
            (int(match.group(1)), run)
            for run in (logs.iterdir() if logs.is_dir() else ())
            if (match := VERSION.fullmatch(run.name)) and (run / METRICS_FILE).is_file()
        )
        if runs:
            found = runs[-1][1] / METRICS_FILE
            return found, f"the newest of {len(runs)} runs in {logs}" if len(runs) > 1 else ""
    raise LoopgenError(
        f"{path}: no {METRICS_FILE} in it, nor in version_N/ or lightning_logs/version_N/ under it"
        " (is the run's logger on? `logger: true` or a CSVLogger writes one)"
    )


# ---------------------------------------------------------------------------
# the CSV


def read_metrics(path: Path) -> Metrics:
    """The metric columns of a CSVLogger's metrics.csv as series over `step`; bad content is a LoopgenError."""
    try:
        with open(path, newline="", encoding="utf-8") as file:
            rows = list(csv.reader(file))
    except OSError as error:
        raise LoopgenError(f"{path}: cannot read: {error.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise LoopgenError(f"{path}: not a CSV file ({error})") from None
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise LoopgenError(f"{path}: empty, no header row")
    header = [cell.strip() for cell in rows[0]]
    if "step" not in header:
        raise LoopgenError(f"{path}: no `step` column (header: {', '.join(header)}); is it a CSVLogger's metrics.csv?")
    prefix = _prefix(header)
    columns = [c for c in header if _bare(c, prefix) not in NOT_PANELS]
    if not columns:
        raise LoopgenError(f"{path}: no metric columns, only {', '.join(header)}")
    if len(rows) == 1:
        raise LoopgenError(f"{path}: no rows, only the header (nothing was logged yet)")
    index = {name: i for i, name in enumerate(header)}
    points: dict[str, tuple[list[int], list[float]]] = {c: ([], []) for c in columns}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise LoopgenError(f"{path} (line {line}): {len(row)} cells, the header has {len(header)}")
        step = _number(row[index["step"]], path, line, "step")
        if step is None or step != int(step):
            raise LoopgenError(f"{path} (line {line}): step: expected an integer, got {row[index['step']]!r}")
        for column in columns:
            value = _number(row[index[column]], path, line, column)
            if value is not None:
                points[column][0].append(int(step))
                points[column][1].append(value)
    series = tuple(Series(c, tuple(points[c][0]), tuple(points[c][1])) for c in columns if points[c][0])
    if not series:
        raise LoopgenError(f"{path}: every metric cell is empty")
    return Metrics(path, prefix, series)


def _prefix(header: list[str]) -> str:
    """CSVLogger's `prefix`: it writes `{prefix}-epoch` and `{prefix}-{name}` (not `step`)."""
    if "epoch" in header:
        return ""
    for column in header:
        if column.endswith("-epoch"):
            prefix = column[: -len("-epoch")]
            if all(c == "step" or c.startswith(f"{prefix}-") for c in header):
                return prefix
    return ""


def _bare(column: str, prefix: str) -> str:
    return column[len(prefix) + 1 :] if prefix and column.startswith(f"{prefix}-") else column


def _number(cell: str, path: Path, line: int, column: str) -> float | None:
    cell = cell.strip()
    if not cell:
        return None
    try:
        return float(cell)
    except ValueError:
        raise LoopgenError(f"{path} (line {line}): {column}: expected a number, got {cell!r}") from None


# ---------------------------------------------------------------------------
# the panels


def layout(metrics: Metrics) -> list[Panel]:
    """Which series share a panel; every series is in exactly one.

    - A metric logged on step and on epoch (`NAME_step`, `NAME_epoch`) is one panel, `NAME`.
    - `train_REST` and `val_REST` (or `train/REST`, `val/REST`), both present after the rule above, share a
      panel titled `REST (train, val)`; a `train_` or `val_` metric without its partner is a panel of its own.
    - LearningRateMonitor's columns (`lr-...`) share a panel `learning rate`; its `...-momentum` and
      `...-weight_decay` columns, one each; their values are drawn as steps (each holds until the next).
    - Every other column is a panel of its own. `epoch` and `step` are not panels (`step` is the x axis).
    Panels keep the order of their first column in the file (sorted, as CSVLogger writes it); the learning
    rate panels come last. Titles are without CSVLogger's prefix.
    """
    names = {s.column: _bare(s.column, metrics.prefix) for s in metrics.series}
    bases = {column: _base(name) for column, name in names.items()}
    stages = {column: STAGE.fullmatch(base) for column, base in bases.items()}
    present = {(m.group(1), m.group(3)) for m in stages.values() if m}
    groups: dict[tuple[int, str], list[Series]] = {}
    for series in metrics.series:
        name, base, stage = names[series.column], bases[series.column], stages[series.column]
        if name.startswith("lr-"):
            title = next((t for suffix, t in LR_PANELS if name.endswith(suffix)), "learning rate")
            key = (1, title)
        elif stage and {("train", stage.group(3)), ("val", stage.group(3))} <= present:
            key = (0, f"{stage.group(3)} (train, val)")
        else:
            key = (0, base)
        groups.setdefault(key, []).append(series)
    order = sorted(groups, key=lambda key: key[0])  # stable: the file's order within metrics and within lr panels
    return [Panel(title, tuple(groups[(rank, title)]), held=rank == 1) for rank, title in order]


def _base(name: str) -> str:
    for suffix in ("_step", "_epoch"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


# ---------------------------------------------------------------------------
# drawing (the only part that imports matplotlib)


def _matplotlib() -> Any:
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise LoopgenError(INSTALL_HINT) from None
    return matplotlib, Figure, FigureCanvasAgg


def figure(panels: list[Panel], title: str = "") -> Any:
    """A matplotlib Figure on an Agg canvas (no pyplot, no global backend), one axes per panel."""
    matplotlib, Figure, FigureCanvasAgg = _matplotlib()
    columns = 1 if len(panels) == 1 else 2 if len(panels) in (2, 4) else 3
    rows = math.ceil(len(panels) / columns)
    with matplotlib.rc_context({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8}):
        fig = Figure(figsize=(4.2 * columns, 3.0 * rows + (0.3 if title else 0)), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows, columns, squeeze=False).flatten()
        for ax, panel in zip(axes, panels):
            for series in panel.series:
                few = len(series.steps) <= 40
                ax.plot(
                    series.steps,
                    series.values,
                    drawstyle="steps-post" if panel.held else "default",
                    marker="o" if few else None,
                    markersize=3,
                    label=series.column,
                )
            ax.set_title(panel.title)
            ax.set_xlabel("step")
            ax.grid(True, alpha=0.3)
            if len(panel.series) > 1:
                ax.legend()
        for ax in axes[len(panels) :]:
            ax.set_visible(False)
        if title:
            fig.suptitle(title)
    return fig


def png(fig: Any) -> bytes:
    import io

    with io.BytesIO() as buffer:
        fig.savefig(buffer, format="png")
        return buffer.getvalue()


def run_title(csv_path: Path) -> str:
    """The figure's title: the run's directory as the logger names it (`name/version_N`)."""
    run = csv_path.absolute().parent
    return f"{run.parent.name}/{run.name}" if run.parent.name else run.name
