"""Command line: render, run, check, diff, schema, plot. Bad input: one line per problem, exit status 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from loopgen import __version__
from loopgen.errors import LoopgenError

EXIT_BAD_INPUT = 2


EXIT_INTERNAL = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a C tool killed by a closed pipe exits with
REPORT_URL = "https://github.com/loopgen/loopgen/issues"


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
    except BrokenPipeError:
        return _closed_pipe()
    except Exception as error:  # noqa: BLE001 - a bug in loopgen: one line, the traceback on request
        if args.debug:
            import traceback

            traceback.print_exc()
        print(
            f"loopgen: internal error ({type(error).__name__}{f': {error}' if str(error) else ''}); this is a bug in loopgen, please report it"
            f" at {REPORT_URL}" + ("" if args.debug else " with the output of the same command run with --debug"),
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _closed_pipe() -> int:
    """The reader of stdout went away (`loopgen schema | head`): end quietly, as `cat` would. Python would
    otherwise complain again when it flushes stdout at exit, so stdout is pointed at /dev/null first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopgen", description="Compile a training spec into one flat PyTorch script."
    )
    parser.add_argument("--version", action="version", version=f"loopgen {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an internal error")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    render = commands.add_parser("render", help="print the script (or write it to OUT)")
    render.add_argument("spec", type=Path)
    render.add_argument("-o", "--output", type=Path, help="write here, atomically, instead of stdout")
    render.set_defaults(command=_render)

    run = commands.add_parser("run", help="render the script and run it; its exit status is loopgen's")
    run.add_argument("spec", type=Path)
    run.add_argument(
        "--keep", type=Path, metavar="DIR", help="write the script into DIR (as SPEC's name .py) and keep it there"
    )
    run.add_argument("script_args", nargs=argparse.REMAINDER, help="after --: arguments for the script")
    run.set_defaults(command=_run)

    check = commands.add_parser(
        "check",
        help="exit 0 when SCRIPT is what SPEC renders to now; else say what changed (the spec, loopgen, or the"
        " script by hand), show the difference and exit 1",
    )
    check.add_argument("spec", type=Path)
    check.add_argument("script", type=Path)
    check.set_defaults(command=_check)

    diff = commands.add_parser(
        "diff", help="unified diff of the scripts two specs render to; exit 1 when they differ, as diff does"
    )
    diff.add_argument("spec_a", type=Path)
    diff.add_argument("spec_b", type=Path)
    diff.set_defaults(command=_diff)

    schema = commands.add_parser("schema", help="print the JSON Schema of the spec")
    schema.set_defaults(command=_schema)

    verify = commands.add_parser(
        "verify",
        help="train SPEC with Lightning's Trainer and with its script, compare the weights after every optimizer"
        " step; exit 0 identical, 1 different (the first difference), 2 could not compare (and why) (needs Lightning:"
        " the `verify` extra)",
    )
    verify.add_argument("spec", type=Path)
    verify.add_argument("--steps", type=_positive, metavar="N", help="compare the first N optimizer steps only")
    verify.set_defaults(command=_verify)

    plot = commands.add_parser(
        "plot", help="draw a run's metrics.csv (losses, learning rate, each metric) as one PNG; needs matplotlib"
    )
    plot.add_argument("run", type=Path, help="metrics.csv, a run's version_N directory, or a directory of runs")
    plot.add_argument(
        "-o", "--output", type=Path, help="the PNG, written atomically (default: curves.png beside metrics.csv)"
    )
    plot.set_defaults(command=_plot)
    return parser


def _render_text(spec: Path, output: Path = Path("train.py"), inputs: bool = False) -> str:
    """The script as written to `output`: named after it, formatted as black is configured there.

    `inputs`: `output` is where it will be written; refuse it when it is the spec or one of the modules read.
    """
    from loopgen.pipeline import render_spec_sources

    text, notices, sources = render_spec_sources(spec, output)
    if inputs:
        for source in (spec, *sources):
            if _same_file(output, source):
                what = "the spec" if source is spec else "a module the script is made from"
                raise LoopgenError(f"-o {output}: that is {what} ({source}); name another file")
    for notice in notices:
        print(f"loopgen: note: {notice}", file=sys.stderr)
    return text


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _render(args: argparse.Namespace) -> int:
    if args.output is None:
        sys.stdout.write(_render_text(args.spec))
        sys.stdout.flush()  # a closed pipe shows here, inside main's handlers
        return 0
    _output_directory(args.output)
    text = _render_text(args.spec, args.output, inputs=True)
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
    import tempfile

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
    """The directory `path` is to be written into; a LoopgenError when it cannot be (checked before rendering)."""
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise LoopgenError(f"-o {path}: is a directory; name a file in it")
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise LoopgenError(f"-o {path}: directory {directory} {what}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise LoopgenError(f"-o {path}: cannot write in {directory}: permission denied")
    if path.exists() and not os.access(path, os.W_OK):
        raise LoopgenError(f"-o {path}: the file is read-only")
    return directory


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of steps, got {text!r}")
    return value


def _verify(args: argparse.Namespace) -> int:
    from loopgen.verify import verify

    return verify(args.spec, args.steps)


def _run(args: argparse.Namespace) -> int:
    import subprocess
    import tempfile

    from loopgen.pipeline import project_root

    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    name = f"{args.spec.stem}.py" if args.keep else "train.py"
    if args.keep is not None:
        _output_directory(args.keep / name)
    text = _render_text(args.spec, args.keep / name if args.keep else Path(name), inputs=args.keep is not None)
    root = project_root(args.spec)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    if args.keep is not None:
        script = args.keep / name
        write_atomically(script, text)
        print(f"loopgen: the script is kept at {script}", file=sys.stderr)
        return subprocess.call([*_launcher(args.spec), str(script), *script_args], env=env)
    with tempfile.TemporaryDirectory(prefix="loopgen-") as tmp:
        script = Path(tmp) / name
        script.write_text(text, encoding="utf-8")
        return subprocess.call([*_launcher(args.spec), str(script), *script_args], env=env)


def _launcher(spec_path: Path) -> list[str]:
    """How `loopgen run` starts the script: python, or torchrun with one process per device for DDP,
    ModelParallelStrategy and FSDPStrategy."""
    from loopgen.plan.distributed import strategy_args
    from loopgen.spec.load import load_spec

    trainer = load_spec(spec_path).trainer
    if strategy_args(trainer.strategy)[0] not in ("ddp", "model_parallel", "fsdp"):
        return [sys.executable]
    if trainer.num_nodes > 1:
        raise LoopgenError(
            f"trainer.num_nodes: {trainer.num_nodes} nodes: loopgen run starts one; render the script and run the"
            " torchrun command of its header on each node"
        )
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={trainer.devices}"]


def _check(args: argparse.Namespace) -> int:
    import difflib

    from loopgen.render.header import what_changed

    expected = _render_text(args.spec, args.script)
    try:
        actual = args.script.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LoopgenError(f"{args.script}: no such file; render it first: loopgen render {args.spec} -o {args.script}")
    except (OSError, UnicodeDecodeError) as error:
        raise LoopgenError(f"{args.script}: cannot read: {getattr(error, 'strerror', None) or error}") from None
    if actual == expected:
        return 0
    for reason in what_changed(actual, expected):
        print(f"loopgen: {args.script} is not what {args.spec} renders to: {reason}", file=sys.stderr)
    sys.stdout.writelines(
        difflib.unified_diff(
            actual.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            fromfile=str(args.script),
            tofile=f"rendered from {args.spec}",
        )
    )
    sys.stdout.flush()
    return 1


def _diff(args: argparse.Namespace) -> int:
    """Like diff(1): exit 0 when the scripts are the same, 1 when they differ."""
    import difflib

    a, b = _render_text(args.spec_a), _render_text(args.spec_b)
    lines = list(
        difflib.unified_diff(
            a.splitlines(keepends=True), b.splitlines(keepends=True), fromfile=str(args.spec_a), tofile=str(args.spec_b)
        )
    )
    sys.stdout.writelines(lines)
    sys.stdout.flush()
    return 1 if lines else 0


def _schema(args: argparse.Namespace) -> int:
    import json

    from loopgen.spec.schema import spec_schema

    print(json.dumps(spec_schema(), indent=2))
    sys.stdout.flush()
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
