"""The script's docstring: where it came from, what it is specialised for, how to run it."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen import __version__, parity
from loopgen.cache import templates_sha256
from loopgen.spec.model import Spec

SCRIPT_SHA256_PLACEHOLDER = "-" * 64  # the script's own sha256 is of its text with this in its place


@dataclass(frozen=True)
class Header:
    """Where the script came from, for its docstring (templates/header.j2 writes it, with what the script was
    specialised for and how to run it, from the parts that decide them)."""

    version: str
    spec_name: str
    spec_sha256: str
    script_name: str
    model_module: str
    model_package: str
    templates_sha256: str = ""  # of loopgen's templates (`loopgen check` tells a change of loopgen by it)
    script_sha256: str = SCRIPT_SHA256_PLACEHOLDER  # of the script itself: filled in once formatted
    # what its training was checked against in loopgen's tests: the Lightning the spec follows, and torch
    lightning: str = parity.LIGHTNING
    torch: str = parity.TORCH
    # a composed spec: each source (path from the script's directory and sha256, or an override's text and None),
    # which `loopgen check` and `loopgen upgrade` read again; and the render arguments that compose them
    sources: tuple[tuple[str, str | None], ...] = ()
    render_args: str = ""


def resolve_header(spec: Spec, script_name: str, follows_1_9_5: bool) -> Header:
    """Where the script comes from, and the versions its parity was checked against (Lightning 1.9.5 for a spec
    that follows it). What it was specialised for, the templates read from the parts that decide it (the device,
    the precision, the bounds, the optimization, the validation, the engine)."""
    return Header(
        version=__version__,
        spec_name=spec.name or spec.path.name,
        spec_sha256=spec.sha256,
        script_name=script_name,
        model_module=spec.model.module,
        model_package=spec.model.module.split(".")[0],
        templates_sha256=templates_sha256(),
        lightning=parity.LIGHTNING_SEED_FLAGS if follows_1_9_5 else parity.LIGHTNING,
        sources=spec.sources,
        render_args=spec.render_args or spec.path.name,
    )
