"""Command line: render, run, check, upgrade, diff, verify, schema, plot. Bad input: one line per problem, exit status 2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from loopgen import __version__
from loopgen.errors import LoopgenError
from loopgen.files import output_directory as _output_directory
from loopgen.files import write_atomically

if TYPE_CHECKING:
    from loopgen.spec.sources import Source, Sources

EXIT_BAD_INPUT = 2


EXIT_INTERNAL = 3
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a C tool killed by a closed pipe exits with


# the commands that read a spec, and their own options that take a value (the rest of their arguments are the
# spec's sources: files, -c FILE, --KEY=VALUE overrides)
SPEC_COMMANDS = {
    "render": ("-o", "--output"),
    "run": ("--keep",),
    "check": (),
    "diff": (),
    "verify": ("--steps",),
    "upgrade": ("--base",),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    given = list(argv)
    try:
        argv, sources = _split_sources(argv)
    except LoopgenError as error:
        for problem in error.problems:
            print(f"loopgen: error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    args = _parser().parse_args(argv)
    args.sources = sources
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
        print(_internal_error(error, given, args.debug), file=sys.stderr)
        return EXIT_INTERNAL


def _internal_error(error: Exception, argv: list[str], debug: bool) -> str:
    """The one line an internal error prints: what failed, and what to report it with (the command that shows the
    traceback, the spec, loopgen's version)."""
    import shlex

    what = f"{type(error).__name__}{f': {error}' if str(error) else ''}"
    if debug:
        traceback = "the traceback above"
    else:
        prog = ["python", "-m", "loopgen"] if Path(sys.argv[0]).name == "__main__.py" else ["loopgen"]
        command = shlex.join([*prog, "--debug", *argv])
        traceback = f"the traceback that `{command}` prints"
    return (
        f"loopgen: internal error ({what}); this is a bug in loopgen. Report it with {traceback}, the spec (its"
        f" files and overrides), the source files it names, and loopgen's version ({__version__})"
    )


def _split_sources(argv: list[str]) -> tuple[list[str], list[list[Source]]]:
    """The arguments argparse reads, and the spec's sources taken out of them (for `diff`, one list per side:
    before and after `--`)."""
    from loopgen.spec.sources import split_arguments

    at = next((i for i, token in enumerate(argv) if not token.startswith("-")), None)
    if at is None or argv[at] not in SPEC_COMMANDS:
        return argv, []
    command, tail = argv[at], argv[at + 1 :]
    if any(token in ("-h", "--help") for token in tail[: tail.index("--") if "--" in tail else None]):
        return argv, []
    if command == "diff" and "--" in tail:
        cut = tail.index("--")
        (a, rest_a), (b, rest_b) = split_arguments(tail[:cut], ()), split_arguments(tail[cut + 1 :], ())
        return [*argv[: at + 1], *rest_a, *rest_b], [a, b]
    sources, rest = split_arguments(tail, SPEC_COMMANDS[command])
    return [*argv[: at + 1], *rest], [sources]


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

    spec = "[fit] SPEC... [-c FILE]... [--KEY=VALUE]..."
    sources_help = (
        "SPEC...: the spec, composed as LightningCLI composes a command line: config files (named alone or by"
        " -c/--config), later ones winning, and overrides of their keys (--trainer.max_epochs=5,"
        " --model.init_args.lr=0.01, --trainer.callbacks+=EarlyStopping, --trainer.callbacks.monitor=val_loss)"
    )
    render = commands.add_parser(
        "render",
        help="print the script (or write it to OUT)",
        usage=f"loopgen render {spec} [-o OUT]",
        epilog=sources_help,
    )
    render.add_argument("-o", "--output", type=Path, help="write here, atomically, instead of stdout")
    render.add_argument(
        "--print-config",
        "--print_config",
        action="store_true",
        help="print the composed spec (as LightningCLI's --print_config does) instead of the script",
    )
    render.set_defaults(command=_render)

    run = commands.add_parser(
        "run",
        help="render the script and run it; its exit status is loopgen's",
        usage=f"loopgen run {spec} [--keep DIR] [-- SCRIPT_ARGS...]",
        epilog=sources_help,
    )
    run.add_argument(
        "--keep", type=Path, metavar="DIR", help="write the script into DIR (as SPEC's name .py) and keep it there"
    )
    run.add_argument("script_args", nargs=argparse.REMAINDER, help="after --: arguments for the script")
    run.set_defaults(command=_run)

    check = commands.add_parser(
        "check",
        help="exit 0 when SCRIPT is what SPEC renders to now (with the hand edits the last upgrade carried, if"
        " any); else say what changed (the spec, loopgen, or the script by hand), show the difference and exit 1;"
        " without SPEC, the sources the script's header records",
        usage=f"loopgen check [{spec}] SCRIPT",
        epilog=sources_help,
    )
    check.set_defaults(command=_check)

    upgrade = commands.add_parser(
        "upgrade",
        help="render SCRIPT again and carry its hand edits into the new render (a three-way merge with the render it"
        " came from); exit 0 merged, 1 conflicts (SCRIPT untouched unless --conflicts), 2 could not merge; without"
        " SPEC, the sources the script's header records",
        usage=f"loopgen upgrade [{spec}] SCRIPT [--base FILE] [--conflicts]",
        epilog=sources_help,
    )
    upgrade.add_argument(
        "--base", type=Path, metavar="FILE", help="the render SCRIPT came from, when neither the cache nor git has it"
    )
    upgrade.add_argument(
        "--conflicts", action="store_true", help="on a conflict, write SCRIPT with conflict markers to resolve"
    )
    upgrade.set_defaults(command=_upgrade)

    diff = commands.add_parser(
        "diff",
        help="unified diff of the scripts two specs render to; exit 1 when they differ, as diff does",
        usage="loopgen diff SPEC_A SPEC_B | loopgen diff SOURCES_A... -- SOURCES_B...",
        epilog=sources_help,
    )
    diff.set_defaults(command=_diff)

    schema = commands.add_parser("schema", help="print the JSON Schema of the spec")
    schema.set_defaults(command=_schema)

    verify = commands.add_parser(
        "verify",
        usage=f"loopgen verify {spec} [--steps N]",
        epilog=sources_help,
        help="train SPEC with Lightning's Trainer and with its script, compare the weights after every optimizer"
        " step; exit 0 identical, 1 different (the first difference), 2 could not compare (and why) (needs Lightning:"
        " the `verify` extra)",
    )
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


def _spec(args: argparse.Namespace, side: int = 0) -> Sources:
    """The spec the command line names (its files and overrides, in order)."""
    from loopgen.spec.sources import Sources

    sources = Sources(tuple(args.sources[side] if len(args.sources) > side else ()))
    sources.check()
    return sources


def _render_text(spec: Sources, output: Path = Path("train.py"), inputs: bool = False) -> str:
    """The script as written to `output`: named after it, formatted as black is configured there.

    `inputs`: `output` is where it will be written; refuse it when it is the spec or one of the modules read.
    """
    from loopgen.pipeline import render_spec_sources

    text, notices, sources = render_spec_sources(spec, output)
    if inputs:
        for source in (*spec.files, *sources):
            if _same_file(output, source):
                what = "the spec" if source in spec.files else "a module the script is made from"
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
    spec = _spec(args)
    if args.print_config:
        return _print_config(spec)
    if args.output is None:
        sys.stdout.write(_render_text(spec))
        sys.stdout.flush()  # a closed pipe shows here, inside main's handlers
        return 0
    _output_directory(args.output)
    text = _render_text(spec, args.output, inputs=True)
    write_atomically(args.output, text)
    return 0


def _print_config(spec: Sources) -> int:
    """The composed spec as YAML, once it reads as a valid spec (as LightningCLI's --print_config)."""
    import yaml

    from loopgen.spec.load import class_accepts, load_spec

    load_spec(spec)
    sys.stdout.write(yaml.safe_dump(spec.compose(class_accepts(spec.path)).data, sort_keys=False))
    sys.stdout.flush()
    return 0


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

    return verify(_spec(args), args.steps)


def _run(args: argparse.Namespace) -> int:
    import subprocess
    import tempfile

    from loopgen.pipeline import project_root

    spec = _spec(args)
    script_args = args.script_args[1:] if args.script_args[:1] == ["--"] else args.script_args
    name = f"{spec.path.stem}.py" if args.keep else "train.py"
    if args.keep is not None:
        _output_directory(args.keep / name)
    text = _render_text(spec, args.keep / name if args.keep else Path(name), inputs=args.keep is not None)
    root = project_root(spec)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    if args.keep is not None:
        script = args.keep / name
        write_atomically(script, text)
        print(f"loopgen: the script is kept at {script}", file=sys.stderr)
        return subprocess.call([*_launcher(spec), str(script), *script_args], env=env)
    with tempfile.TemporaryDirectory(prefix="loopgen-") as tmp:
        script = Path(tmp) / name
        script.write_text(text, encoding="utf-8")
        return subprocess.call([*_launcher(spec), str(script), *script_args], env=env)


def _launcher(spec_path: Sources) -> list[str]:
    """How `loopgen run` starts the script: python, or torchrun with one process per device for DDP,
    ModelParallelStrategy and FSDPStrategy."""
    from loopgen.plan.distributed import LAUNCHERS, strategy_args
    from loopgen.spec.load import load_spec
    from loopgen.spec.plugins import cluster_environment

    trainer = load_spec(spec_path).trainer
    if strategy_args(trainer.strategy)[0] not in ("ddp", "model_parallel", "fsdp"):
        return [sys.executable]
    environment = cluster_environment(trainer.plugins)
    if environment is not None and LAUNCHERS.get(environment["class_path"]) != "torchrun":
        raise LoopgenError(
            f"trainer.plugins: {environment['class_path']}: the cluster's launcher starts the processes; render the"
            " script and launch it as its header says"
        )
    if trainer.num_nodes > 1:
        raise LoopgenError(
            f"trainer.num_nodes: {trainer.num_nodes} nodes: loopgen run starts one; render the script and run the"
            " torchrun command of its header on each node"
        )
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={trainer.devices}"]


def _check(args: argparse.Namespace) -> int:
    from loopgen.vendoring import check

    return check(*_spec_and_script(args), _render_text)


def _upgrade(args: argparse.Namespace) -> int:
    from loopgen.vendoring import upgrade

    spec, script = _spec_and_script(args)
    return upgrade(spec, script, _render_text, base=args.base, conflicts=args.conflicts)


def _spec_and_script(args: argparse.Namespace) -> tuple[Sources, Path]:
    """check's and upgrade's SCRIPT (the last file named alone) and the spec before it; without one, the sources
    the script's header records."""
    from loopgen.spec.sources import Sources
    from loopgen.vendoring import recorded_sources

    given = list(args.sources[0]) if args.sources else []
    alone = [i for i, source in enumerate(given) if source.alone]
    if not alone:
        raise LoopgenError("name the script: loopgen check|upgrade [SPEC...] SCRIPT")
    script = given.pop(alone[-1]).path
    if not given:
        return recorded_sources(script), script
    return Sources(tuple(given)), script


def _diff(args: argparse.Namespace) -> int:
    """Like diff(1): exit 0 when the scripts are the same, 1 when they differ."""
    import difflib

    from loopgen.spec.sources import Sources

    if len(args.sources) == 2:
        spec_a, spec_b = _spec(args, 0), _spec(args, 1)
    elif args.sources and len(args.sources[0]) == 2 and all(source.path for source in args.sources[0]):
        spec_a, spec_b = (Sources((source,)) for source in args.sources[0])
    else:
        raise LoopgenError("diff: name two specs (SPEC_A SPEC_B), or two lists of sources separated by --")
    a, b = _render_text(spec_a), _render_text(spec_b)
    lines = list(
        difflib.unified_diff(
            a.splitlines(keepends=True),
            b.splitlines(keepends=True),
            fromfile=" ".join(source.text for source in spec_a.items),
            tofile=" ".join(source.text for source in spec_b.items),
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
