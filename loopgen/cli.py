"""Command line: render, run, check, diff, schema, plot. Bad input: one line per problem, exit status 2."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from loopgen import __version__
from loopgen.errors import LoopgenError

EXIT_BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.command(args)
    except LoopgenError as error:
        for problem in error.problems:
            print(f"loopgen: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopgen", description="Compile a training spec into one flat PyTorch script."
    )
    parser.add_argument("--version", action="version", version=f"loopgen {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    render = commands.add_parser("render", help="print the script (or write it to OUT)")
    render.add_argument("spec", type=Path)
    render.add_argument("-o", "--output", type=Path, help="write here, atomically, instead of stdout")
    render.set_defaults(command=_render)

    run = commands.add_parser("run", help="render the script and run it; its exit status is loopgen's")
    run.add_argument("spec", type=Path)
    run.add_argument("script_args", nargs=argparse.REMAINDER, help="after --: arguments for the script")
    run.set_defaults(command=_run)

    check = commands.add_parser(
        "check", help="exit 0 when SCRIPT is what SPEC renders to now; else show the difference"
    )
    check.add_argument("spec", type=Path)
    check.add_argument("script", type=Path)
    check.set_defaults(command=_check)

    diff = commands.add_parser("diff", help="unified diff of the scripts two specs render to")
    diff.add_argument("spec_a", type=Path)
    diff.add_argument("spec_b", type=Path)
    diff.set_defaults(command=_diff)

    schema = commands.add_parser("schema", help="print the JSON Schema of the spec")
    schema.set_defaults(command=_schema)

    plot = commands.add_parser(
        "plot", help="draw a run's metrics.csv (losses, learning rate, each metric) as one PNG; needs matplotlib"
    )
    plot.add_argument("run", type=Path, help="metrics.csv, a run's version_N directory, or a directory of runs")
    plot.add_argument(
        "-o", "--output", type=Path, help="the PNG, written atomically (default: curves.png beside metrics.csv)"
    )
    plot.set_defaults(command=_plot)
    return parser


def _render_text(spec: Path, output: Path = Path("train.py")) -> str:
    """The script as written to `output`: named after it, formatted as black is configured there."""
    from loopgen.pipeline import render_spec

    text, notices = render_spec(spec, output)
    for notice in notices:
        print(f"loopgen: note: {notice}", file=sys.stderr)
    return text


def _render(args: argparse.Namespace) -> int:
    if args.output is None:
        sys.stdout.write(_render_text(args.spec))
        return 0
    text = _render_text(args.spec, args.output)
    write_atomically(args.output, text)
    return 0


def write_atomically(path: Path, content: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename it over: `path` is never half-written.

    The file gets the mode a plain open() would give it (the old file's, else 0o666 less the umask), not
    mkstemp's 0o600.
    """
    directory = _output_directory(path)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise LoopgenError(f"-o {path}: cannot write in {directory}: {error.strerror}") from None
    try:
        text = isinstance(content, str)
        with os.fdopen(fd, "w" if text else "wb", encoding="utf-8" if text else None) as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _output_directory(path: Path) -> Path:
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise LoopgenError(f"-o {path}: directory {directory} does not exist")
    if path.is_dir():
        raise LoopgenError(f"-o {path}: is a directory")
    return directory


def _run(args: argparse.Namespace) -> int:
    from loopgen.pipeline import project_root

    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    text = _render_text(args.spec)
    root = project_root(args.spec)
    with tempfile.TemporaryDirectory(prefix="loopgen-") as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(text, encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
        return subprocess.call([*_launcher(args.spec), str(script), *script_args], env=env)


def _launcher(spec_path: Path) -> list[str]:
    """How `loopgen run` starts the script: python, or torchrun with one process per device for DDP."""
    from loopgen.plan import strategy_args
    from loopgen.spec import load_spec

    trainer = load_spec(spec_path).trainer
    if strategy_args(trainer.strategy)[0] != "ddp":
        return [sys.executable]
    if trainer.num_nodes > 1:
        raise LoopgenError(
            f"trainer.num_nodes: {trainer.num_nodes} nodes: loopgen run starts one; render the script and run the"
            " torchrun command of its header on each node"
        )
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={trainer.devices}"]


def _check(args: argparse.Namespace) -> int:
    expected = _render_text(args.spec, args.script)
    try:
        actual = args.script.read_text(encoding="utf-8")
    except OSError as error:
        raise LoopgenError(f"{args.script}: cannot read: {error.strerror}") from None
    if actual == expected:
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            actual.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            fromfile=str(args.script),
            tofile=f"rendered from {args.spec}",
        )
    )
    return 1


def _diff(args: argparse.Namespace) -> int:
    a, b = _render_text(args.spec_a), _render_text(args.spec_b)
    sys.stdout.writelines(
        difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True), fromfile=str(args.spec_a), tofile=str(args.spec_b)
        )
    )
    return 0


def _schema(args: argparse.Namespace) -> int:
    from loopgen.schema import spec_schema

    print(json.dumps(spec_schema(), indent=2))
    return 0


def _plot(args: argparse.Namespace) -> int:
    from loopgen import plot

    csv_path, note = plot.find_metrics(args.run)
    output = args.output if args.output is not None else csv_path.parent / plot.DEFAULT_OUTPUT
    if output.suffix.lower() != ".png":
        raise LoopgenError(f"-o {output}: the plot is a PNG; name the file *.png")
    _output_directory(output)
    panels = plot.layout(plot.read_metrics(csv_path))
    data = plot.png(plot.figure(panels, plot.run_title(csv_path)))
    write_atomically(output, data)
    plural = "s" if len(panels) != 1 else ""
    print(f"{output}: {len(panels)} panel{plural} from {csv_path}" + (f" ({note})" if note else ""))
    return 0


def main_exit() -> None:
    """Console-script entry point."""
    sys.exit(main())
