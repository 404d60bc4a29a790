"""A vendored script over time: `loopgen check` (is SCRIPT what its spec renders to now?) and `loopgen upgrade`
(render again and carry the script's hand edits into the new render).

upgrade is a three-way merge (loopgen/merge.py): base = the render the script came from, found by the sha256 its
header records (`--base FILE`, else loopgen's cache of renders, else the newest commit of SCRIPT in git whose
text is that render, else the spec as it was, its files' recorded sha256 found in git, rendered again); ours = the script as it is; theirs = the new render. The merged script's header records the
new render's sha256 and the hand edits it carries:

    hand edits carried by loopgen upgrade: 2 hunks
    edited script sha256: <sha256 of the merged text, this line holding dashes>

so that `check` tells "edited by hand, carried from the last upgrade" from a fresh edit, and the next upgrade
merges again from the new render.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from loopgen.errors import LoopgenError
from loopgen.render.header import PLACEHOLDER, Header, edited, what_changed
from loopgen.render.header import recorded_sources as header_sources
from loopgen.spec.sources import Source, Sources

EXIT_CONFLICT = 1
_CARRIED = re.compile(
    r"^hand edits carried by loopgen upgrade: (\d+) hunks?\nedited script sha256: ([0-9a-f]{64})\n", re.MULTILINE
)
_MARKERS = re.compile(r"^(<{7} |>{7} |\|{7} )", re.MULTILINE)
GIT_COMMITS = 200  # how far back upgrade looks in SCRIPT's git history for the render it came from


def recorded_sources(script: Path) -> Sources:
    """The sources a composed spec's script records in its header, its files found from the script's directory."""
    import os

    text = _read(script)
    recorded = header_sources(text)
    if Header.read(text).script is None:
        raise LoopgenError(
            f"{script}: is not a script loopgen rendered (its header has no script sha256); name the spec, then the"
            f" script: loopgen check|upgrade SPEC... SCRIPT"
        )
    if not recorded:
        raise LoopgenError(
            f"{script}: its header records no composed spec (a script rendered from one file names it in its first"
            f" line); name the spec: loopgen check|upgrade SPEC {script}"
        )
    items = []
    for entry, sha256 in recorded:
        if sha256 is None:
            items.append(Source(entry))
            continue
        path = script.parent / entry
        shown = os.path.relpath(path) if not Path(entry).is_absolute() else entry
        items.append(Source(shown, Path(shown)))
    return Sources(tuple(items))


def carried(text: str) -> tuple[str, int | None, bool]:
    """`text` without the lines recording carried hand edits, how many hunks they record (None: none), and whether
    the text is still the one upgrade wrote (no edit since)."""
    found = _CARRIED.search(text)
    if found is None:
        return text, None, False
    stripped = text[: found.start()] + text[found.end() :]
    own = text.replace(f"edited script sha256: {found.group(2)}\n", f"edited script sha256: {PLACEHOLDER}\n", 1)
    return stripped, int(found.group(1)), hashlib.sha256(own.encode()).hexdigest() == found.group(2)


def with_carried(text: str, hunks: int) -> str:
    """The merged script with the lines recording its carried hand edits, after its `script sha256:` line."""
    digest = Header.read(text).script
    line = f"script sha256: {digest}\n"
    record = f"hand edits carried by loopgen upgrade: {hunks} hunk{'s' if hunks != 1 else ''}\n"
    marked = text.replace(line, f"{line}{record}edited script sha256: {PLACEHOLDER}\n", 1)
    own = hashlib.sha256(marked.encode()).hexdigest()
    return marked.replace(f"edited script sha256: {PLACEHOLDER}\n", f"edited script sha256: {own}\n", 1)


def check(spec: Sources, script: Path, render: Callable[[Sources, Path], str]) -> int:
    """0 when SCRIPT is what SPEC renders to now (`render`: the script SPEC renders to, written to SCRIPT) (or that with exactly the hand edits the last upgrade carried);
    else the reasons and the difference, 1."""
    expected = render(spec, script)
    actual = _read(script, spec)
    if actual == expected:
        return 0
    body, hunks, intact = carried(actual)
    same_render = Header.read(body).script == Header.read(expected).script
    if hunks is not None and intact and same_render:
        print(
            f"loopgen: {script} is what {_named(spec)} renders to, edited by hand ({_hunks(hunks)}, carried from the last"
            " upgrade)",
            file=sys.stderr,
        )
        return 0
    reasons = [_which_files(reason, actual, spec, script) for reason in what_changed(body, expected)]
    if hunks is not None:
        reasons = [r for r in reasons if not r.startswith("the script was edited by hand")]
        since = "" if intact else "; and edited by hand again since"
        reasons.insert(0, f"the script was edited by hand ({_hunks(hunks)}, carried from the last upgrade{since})")
        if same_render and intact:
            reasons = reasons[:1]
    for reason in reasons:
        print(f"loopgen: {script} is not what {_named(spec)} renders to: {reason}", file=sys.stderr)
    if any(r.startswith("the script was edited") for r in reasons) and not same_render:
        print(f"loopgen: `loopgen upgrade {script}` renders it again and carries the hand edits", file=sys.stderr)
    sys.stdout.writelines(
        difflib.unified_diff(
            actual.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            fromfile=str(script),
            tofile=f"rendered from {_named(spec)}",
        )
    )
    sys.stdout.flush()
    return 1


def _which_files(reason: str, actual: str, spec: Sources, script: Path) -> str:
    """ "the spec changed" naming the files that changed, for a script that records its composed sources."""
    recorded = header_sources(actual)
    if not reason.startswith("the spec changed") or not recorded:
        return reason
    try:
        now = dict(spec.recorded(script.absolute().parent))
    except LoopgenError:
        return reason
    changed = [path for path, sha256 in recorded if sha256 is not None and now.get(path, sha256) != sha256]
    if not changed or len(now) != len(recorded):
        return reason
    return f"the spec changed ({', '.join(changed)}: edited since the script was rendered)"


def upgrade(
    spec: Sources,
    script: Path,
    render: Callable[[Sources, Path], str],
    *,
    base: Path | None = None,
    conflicts: bool = False,
) -> int:
    """Render SCRIPT again from SPEC and carry its hand edits: 0 merged (or nothing to carry), 1 conflicts (the
    file untouched unless `conflicts`), a LoopgenError (exit 2) when the render it came from cannot be found."""
    from loopgen.files import output_directory, write_atomically
    from loopgen.merge import merge3

    full = _read(script, spec)
    if _MARKERS.search(full):
        raise LoopgenError(
            f"{script}: still has conflict markers (<<<<<<<, |||||||, >>>>>>>) from the last upgrade; resolve them"
            " first, then upgrade again"
        )
    output_directory(script)
    body, _, _ = carried(full)
    theirs = render(spec, script)
    if not edited(body):
        if body == theirs:
            print(f"loopgen: {script} is up to date: no hand edits, and the render is the same")
            return 0
        write_atomically(script, theirs)
        print(f"loopgen: {script}: rendered again (it had no hand edits to carry)")
        return 0
    digest = Header.read(body).script
    if digest is None:
        raise LoopgenError(
            f"{script}: has no loopgen header (script sha256: ...), so the render it came from cannot be found;"
            " render it again (loopgen render ... -o SCRIPT) and move your edits over by hand"
        )
    base_text, found_in = find_base(digest, script, base, spec, full)
    # the lines recording the last upgrade's carried edits are loopgen's, not an edit: the base holds them too, so
    # they are the new render's to drop, and the hunks are numbered as in the file
    record = _CARRIED.search(full)
    if record is not None:
        line = f"script sha256: {digest}\n"
        base_text = base_text.replace(line, line + record.group(0), 1)
    ours = full
    result = merge3(
        base_text, ours, theirs, ours_label=f"{script} (your edits)", theirs_label="new render", base_label="old render"
    )
    ours_lines = ours.splitlines(keepends=True)
    if result.clean:
        if not result.carried:
            write_atomically(script, theirs)
            print(f"loopgen: {script}: rendered again (its edits are in the new render too)")
            return 0
        write_atomically(script, with_carried(result.text, len(result.carried)))
        print(
            f"loopgen: {script}: rendered again, carrying {_hunks(len(result.carried))} of hand edits (base: {found_in}):"
        )
        for hunk in result.carried:
            print(f"  {hunk.describe(ours_lines)}")
        return 0
    count = len(result.conflicts)
    print(
        f"loopgen: {script}: {count} conflict{'s' if count > 1 else ''} between your edits and the new render"
        f" (base: {found_in}):"
    )
    for conflict in result.conflicts:
        print(f"  {conflict.describe()}")
        sys.stdout.writelines(
            f"    {'-' if line in conflict.ours and line not in conflict.theirs else '+'} {line}"
            for line in (*conflict.ours, *conflict.theirs)
            if line not in conflict.ours or line not in conflict.theirs
        )
    if conflicts:
        write_atomically(script, result.text)
        print(
            f"loopgen: wrote {script} with conflict markers: resolve them, then `loopgen upgrade {script}` records the"
            " edits it carries"
        )
    else:
        print(
            f"loopgen: {script} is unchanged; `loopgen upgrade --conflicts` writes it with conflict markers to resolve"
        )
    return EXIT_CONFLICT


def find_base(digest: str, script: Path, given: Path | None, spec: Sources, script_text: str) -> tuple[str, str]:
    """The render whose header records `digest` (the text the script was edited from), and where it was found:
    `given`, else loopgen's cache, else SCRIPT's git history, else the spec as it was (`script_text`'s header
    records it) rendered again."""
    from loopgen import cache

    if given is not None:
        text = _read(given)
        if Header.read(text).script != digest or edited(text):
            raise LoopgenError(
                f"--base {given}: is not the render {script} came from (its header records sha256"
                f" {_short(Header.read(text).script)}{', and it was edited' if edited(text) else ''}; {script}'s records"
                f" {_short(digest)})"
            )
        return text, str(given)
    text = cache.kept_script(digest)
    if text is not None:
        return text, "loopgen's cache"
    found = _from_git(digest, script) or _rendered_as_it_was(digest, script, spec, script_text)
    if found is not None:
        return found
    raise LoopgenError(
        f"{script}: the render it came from (sha256 {_short(digest)}) is neither in loopgen's cache nor committed in"
        " its git history, and the spec as it was does not render to it again (its version is not in git, or"
        " loopgen or your code changed since);"
        " give it with --base FILE (or render it again and move your edits over by hand)"
    )


def _from_git(digest: str, script: Path) -> tuple[str, str] | None:
    """The newest committed version of SCRIPT that is the render `digest` names, unedited."""
    for commit, data in _versions(script):
        text = data.decode("utf-8", errors="replace")
        if Header.read(text).script == digest and not edited(text):
            return text, f"git commit {commit[:12]}"
    return None


def _rendered_as_it_was(digest: str, script: Path, spec: Sources, text: str) -> tuple[str, str] | None:
    """The render `digest` names, made again: the spec as it was when SCRIPT was rendered (each file's recorded
    sha256 found in the working tree or in the file's git history), with loopgen and your code as they are now;
    None unless that gives the very render (neither changed since, as after an upgrade whose render only the
    cache kept)."""
    import os

    from loopgen.pipeline import render_spec

    recorded = header_sources(text)
    if recorded is None:
        recorded = [(spec.items[0].text, Header.read(text).spec)] if spec.single else []
        base_dir = Path(".")
    else:
        base_dir = script.parent
    items, commits = [], set()
    for entry, sha256 in recorded:
        if sha256 is None:
            items.append(Source(entry))
            continue
        path = base_dir / entry
        shown = entry if Path(entry).is_absolute() else os.path.relpath(path)
        found = _version_of(Path(shown), sha256)
        if found is None:
            return None
        commits.add(found[0])
        items.append(Source(shown, Path(shown), content=found[1]))
    if not items:
        return None
    try:
        again, _ = render_spec(Sources(tuple(items)), script)
    except LoopgenError:
        return None
    if Header.read(again).script != digest or edited(again):
        return None
    where = "the working tree" if commits <= {None} else f"git commit {', '.join(sorted(c[:12] for c in commits if c))}"
    return again, f"the spec as it was (from {where}), rendered again"


def _version_of(path: Path, sha256: str | None) -> tuple[str | None, bytes] | None:
    """The content of `path` whose sha256 is `sha256`: the file as it is (commit None), else the newest committed
    version that has it."""
    try:
        data = path.read_bytes()
    except OSError:
        data = None
    if data is not None and hashlib.sha256(data).hexdigest() == sha256:
        return None, data
    for commit, old in _versions(path):
        if hashlib.sha256(old).hexdigest() == sha256:
            return commit, old
    return None


def _versions(path: Path) -> list[tuple[str, bytes]]:
    """The committed versions of `path`, newest first (at most GIT_COMMITS); none outside a git repository or
    without git."""

    def git(*args: str, cwd: Path) -> bytes | None:
        try:
            done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
        except OSError:  # no git
            return None
        return done.stdout if done.returncode == 0 else None

    directory = path.absolute().parent
    if not directory.is_dir():
        return []
    top = git("rev-parse", "--show-toplevel", cwd=directory)
    if top is None:
        return []
    try:
        relative = path.absolute().resolve().relative_to(Path(top.decode().strip()).resolve()).as_posix()
    except ValueError:
        return []
    log = git("log", f"-{GIT_COMMITS}", "--format=%H", "--", relative, cwd=directory) or b""
    versions = []
    for commit in log.decode().split():
        data = git("show", f"{commit}:{relative}", cwd=directory)
        if data is not None:
            versions.append((commit, data))
    return versions


def _read(script: Path, spec: Sources | None = None) -> str:
    try:
        return script.read_text(encoding="utf-8")
    except FileNotFoundError:
        again = f"; render it first: loopgen render {_named(spec)} -o {script}" if spec is not None else ""
        raise LoopgenError(f"{script}: no such file{again}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise LoopgenError(f"{script}: cannot read: {getattr(error, 'strerror', None) or error}") from None


def _named(spec: Sources) -> str:
    return " ".join(
        item.text if item.path is None or i == 0 else f"-c {item.text}" for i, item in enumerate(spec.items)
    )


def _hunks(count: int) -> str:
    return f"{count} hunk{'s' if count != 1 else ''}"


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "none"
