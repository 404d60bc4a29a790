"""The script's guards: what it was specialised on in the user's code, which it checks before anything runs.

A script is specialised on the code its render read: which hooks each class defines, what they log and read,
which Lightning class each subclasses. It records a fingerprint of every class and function the render read (part
by part, loopgen/source/fingerprints.py) and the Lightning classes each of the classes it calls hooks on was read to
subclass; when it starts it computes both again from the code it imported and stops, saying what changed, unless
they agree (templates/guards.j2). An edit to code the render did not read changes neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loopgen.plan.build import Build
from loopgen.plan.distributed import Distributed
from loopgen.source.facts import ClassFacts
from loopgen.source.fingerprints import LIGHTNING_PACKAGES, NOT_USER_PACKAGES, Read
from loopgen.spec.model import Spec

# a fingerprint string's pieces are at most this long, so that the script's lines stay short whatever its classes
PIECE = 60


@dataclass(frozen=True)
class Object:
    """A class or function the render read: its parts' fingerprints as `part:fingerprint` words (the part "" first),
    in pieces of at most PIECE characters."""

    name: str
    pieces: tuple[str, ...]


@dataclass(frozen=True)
class Module:
    module: str  # its dotted name: the script finds its file by it
    path: str  # its file, from the root it was found under
    digest: str  # of the file's bytes: the script parses the file only when it changed
    objects: tuple[Object, ...]


@dataclass(frozen=True)
class Guarded:
    """A class the script calls hooks on (the model, the data, a callback): its name in the script, and the Lightning
    classes it and its bases in the user's code subclass, by name, sorted."""

    cls: str
    bases: tuple[str, ...]


@dataclass(frozen=True)
class Guards:
    modules: tuple[Module, ...]
    classes: tuple[Guarded, ...]
    # the environment variables that hold a process's rank in a run its launcher starts several of (torchrun's,
    # horovodrun's): the first process says what changed; none on one process
    rank_variables: tuple[str, ...] = ()
    lightning_packages: tuple[str, ...] = LIGHTNING_PACKAGES
    # the other packages whose classes may be bases of the user's classes and are not the user's (with the standard
    # library's): torch's and lightning_fabric's, and torchmetrics' where the user's code imports it
    other_packages: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.modules or self.classes)


def resolve_guards(
    spec: Spec,
    build: Build,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts | None, ...],
    objects: Mapping[str, ClassFacts | None],
    distributed: Distributed,
) -> Guards:
    """What the script checks of the user's code: everything the facts were read from, and the Lightning bases of
    the model, the data class and the user's callbacks (those the script builds from the user's classes)."""
    facts = [model, data, *callbacks, *objects.values()]
    read: dict[tuple[str, str], Read] = {}
    for found in facts:
        for item in found.read if found is not None else ():
            read.setdefault((item.module, item.name), item)
    by_module: dict[str, list[Read]] = {}
    for item in read.values():
        by_module.setdefault(item.module, []).append(item)
    modules = tuple(
        Module(name, items[0].path, items[0].digest, tuple(Object(item.name, _pieces(item.parts)) for item in items))
        for name, items in sorted(by_module.items())
    )
    classes = [Guarded(build.model.cls, _bases(model))]
    if data is not None and build.data is not None:
        classes.append(Guarded(build.data.cls, _bases(data)))
    for ref, found in zip(spec.trainer.callbacks, callbacks):
        if found is not None and found.read:  # the user's class (Lightning's the script carries read nothing)
            classes.append(Guarded(ref.name, _bases(found)))
    launched = {"ddp": ("RANK",), "model_parallel": ("RANK",), "fsdp": ("RANK",),
                "horovod": ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK")}  # fmt: skip
    imported = {"torchmetrics": any(found is not None and found.imports_torchmetrics for found in facts)}
    others = tuple(name for name in NOT_USER_PACKAGES if name not in LIGHTNING_PACKAGES and imported.get(name, True))
    return Guards(
        modules, tuple(dict.fromkeys(classes)), launched.get(distributed.kind or "", ()), other_packages=others
    )


def _bases(facts: ClassFacts) -> tuple[str, ...]:
    return tuple(sorted(set(facts.lightning_bases)))


def _pieces(parts: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """`part:fingerprint` words, joined by spaces, cut between words into pieces of at most PIECE characters (each
    piece but the first starts with its space)."""
    pieces: list[str] = []
    for word in (f"{part}:{fingerprint}" for part, fingerprint in parts):
        if pieces and len(pieces[-1]) + 1 + len(word) <= PIECE:
            pieces[-1] += f" {word}"
        else:
            pieces.append(f" {word}" if pieces else word)
    return tuple(pieces)
