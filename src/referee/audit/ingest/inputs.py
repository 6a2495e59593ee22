"""What `referee audit` reads: files, run folders, folders walked for them, and quoted globs.

A path given is read as it is: a file with the reader sniffed from its content (or `--format`), a
run folder (a referee run directory, a BrowserGym / AgentLab experiment folder, an OpenHands
session) with its folder reader. Any other folder is walked, sorted, depth first: each run folder
in it is one item (never walked into), each file whose name says trace (`.json`, `.jsonl`,
`.traj`, `.eval`; not a SWE-bench `*.report.json`) is one item, each with its own reader. Names
starting with a dot are not walked (but a session log a tool names so: `.aider.chat.history.md`),
nor referee's own outputs (audit, gold and summary files, known by their first record's fields,
whatever their name), nor a Claude Code subagent's `<session>/subagents/agent-*.jsonl` when the walk
reads its `<session>.jsonl` (whose runs hold the subagent's work).

Narrowing a walk: `--include GLOB` (repeatable) keeps the items whose path below the walked folder,
or whose name, matches a glob (then any file name may match, not only trace names); `--format F`
reads every file with F and leaves out run folders of another format, which are named in one note.
Nothing is dropped silently: an unreadable folder or one past the depth limit is a bad item with a
one-line error, counted and listed like a bad record.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from referee.core.fstree import glob_paths, identity
from referee.errors import UsageError

if TYPE_CHECKING:  # the readers (and the trace model) load when a folder or a file is first read: not for a name
    from referee.audit.trace import TraceItem

TRACE_SUFFIXES = (".json", ".jsonl", ".traj", ".eval")
NOT_TRACES = (".report.json",)  # SWE-bench harness reports: gold beside trajectories, not traces
NOT_TRACE_NAMES = frozenset({"report.json"})  # the harness's `logs/<instance>/report.json`: gold too
# session logs a tool writes under a fixed name, a dot name the walk would skip: read wherever a walk meets them
SESSION_NAMES = frozenset({".aider.chat.history.md"})
MAX_DEPTH = 8
LOG_SUFFIXES = (".md", ".log", ".txt", ".ndjson", ".out")  # names a walk skips, looked into to say what it skipped


@dataclass(frozen=True)
class InputOptions:
    """How to read the inputs: globs that narrow a walk, whether pickles may be loaded, who hears of
    run folders that `--format` leaves out."""

    include: tuple[str, ...] = ()
    allow_pickle: bool = False
    session_runs: str = "per-prompt"  # a coding agent's session: a run per prompt, or `whole`
    on_left_out: Callable[[Path, str], None] | None = None  # (folder, its format) left out by --format
    max_depth: int = MAX_DEPTH
    outputs: frozenset[Path] = frozenset()  # this audit's own files (real paths): never read as input by a walk
    on_own_output: Callable[[Path, str], None] | None = None  # (file, what it is): an earlier audit's output, left out
    # (file, what it looks like): a file a walk leaves out by its name although it looks like an agent's log
    on_skipped: Callable[[Path, str], None] | None = None


@dataclass(frozen=True)
class InputItem:
    """One thing to read: a file or a run folder, and the format to read it with (None: sniff the file)."""

    path: Path
    fmt: str | None


def is_trace_name(path: Path) -> bool:
    """A file whose name says it holds traces.

    >>> is_trace_name(Path("a.traj.json")), is_trace_name(Path("x.report.json")), is_trace_name(Path("notes.md"))
    (True, False, False)
    >>> is_trace_name(Path("logs/a__b-1/report.json")), is_trace_name(Path("repo/.aider.chat.history.md"))
    (False, True)
    """
    name = Path(path).name
    return (name.endswith(TRACE_SUFFIXES) and not name.endswith(NOT_TRACES) and name not in NOT_TRACE_NAMES) \
        or name in SESSION_NAMES


def _included(rel: str, name: str, include: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(name, g) for g in include)


def expand_args(args: Iterable[str | Path]) -> list[Path]:
    """Command-line inputs as paths; an argument that is no path but a glob (`'runs/**/summary_info.json'`,
    quoted so the shell left it alone) is expanded, sorted, each folder entered once (`fstree.glob_paths`). No match,
    or a path that does not exist, is a UsageError.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "a.json").write_text("{}")
    >>> [p.name for p in expand_args([str(d / "*.json")])]
    ['a.json']
    """
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.exists():
            out.append(p)
            continue
        if glob.has_magic(str(a)):
            # not glob.glob: it follows `up -> ..` links round and round (two such links never finish)
            hits = glob_paths(str(a))
            if not hits:
                raise UsageError(f"no file or folder matches {str(a)!r}", fix="check the pattern (quote it so the "
                                 "shell leaves it to referee; ** walks folders)")
            out.extend(Path(h) for h in hits)
            continue
        raise UsageError(f"no such file or folder: {a}", fix="give trace files, run folders or folders of them")
    return out


def own_outputs(inputs: Iterable[Path], **outputs: Path | None) -> frozenset[Path]:
    """The real paths of a command's output files (by option: `out=...`, `gold_out=...`), after checking that no two
    are one file and that no input file is one of them (either would write over what it reads or wrote).

    One file is one device and inode, so a symbolic or a hard link to an input is that input; an output that does
    not exist yet is compared by its real path. Inputs that are no file (a folder, a policy name) are left out.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> own_outputs([d / "t.jsonl"], out=d / "a.jsonl", gold_out=d / "a.jsonl")
    Traceback (most recent call last):
    ...
    referee.errors.UsageError: ...a.jsonl: given as --out and as --gold-out; give each output a file of its own
    >>> _ = (d / "t.jsonl").write_text("{}"); os.link(d / "t.jsonl", d / "hard.jsonl")
    >>> own_outputs([d / "t.jsonl"], output=d / "hard.jsonl")
    Traceback (most recent call last):
    ...
    referee.errors.UsageError: ...t.jsonl: given as an input and as --output; write --output to another file ...
    """
    real: set[Path] = set()
    named: dict[object, str] = {}  # (device, inode), or the real path of a file still to be made -> its option
    for option, path in outputs.items():
        if path is None:
            continue
        name = "--" + option.replace("_", "-")
        if Path(path).is_dir():
            raise UsageError(f"{name} is a folder", file=str(path), fix=f"give {name} a file name")
        at = Path(os.path.realpath(path))
        key = identity(path) or at
        if key in named:
            raise UsageError(f"given as {named[key]} and as {name}", file=str(path),
                             fix="give each output a file of its own")
        named[key] = name
        real.add(at)
    for p in inputs:
        p = Path(p)
        if p.is_dir():
            continue
        # a link to nothing yet (a glob's hit) would lead to the output once it is written
        held = identity(p) or (Path(os.path.realpath(p)) if p.is_symlink() else None)
        if held is not None and held in named:
            raise UsageError(f"given as an input and as {named[held]}", file=str(p),
                             fix=f"write {named[held]} to another file (it would be written over what is read)")
    return frozenset(real)


def walk(paths: Iterable[Path], fmt: str | None = None,
         options: InputOptions | None = None) -> Iterator[InputItem | TraceItem]:
    """The items under `paths`, in order; a TraceItem with `error` for a folder that could not be walked."""
    options = options or InputOptions()
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            if p.is_symlink() and not p.exists():  # a glob's hit can be a link to nothing
                yield _dangling(p)
            else:
                yield InputItem(p, fmt)
            continue
        from referee.audit.ingest.readers import sniff_dir

        kind = sniff_dir(p)
        if kind is not None:
            yield InputItem(p, fmt or kind)  # a run folder named on purpose: read, --format overrides
            continue
        yield from _walk(p, p, 0, fmt, options, set())


def _sibling_link(path: Path) -> bool:
    """A link to something in its own folder (a plan's runs folder's `latest`): walked once, as its target."""
    if not path.is_symlink():
        return False
    try:
        return path.resolve().parent == path.parent.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a link loop (Python before 3.13)
        return False


def _walk(folder: Path, root: Path, depth: int, fmt: str | None, options: InputOptions,
          walked: set[tuple[int, int]]) -> Iterator[InputItem | TraceItem]:
    from referee.audit.ingest.misread import looks_like
    from referee.audit.ingest.readers import sniff_dir

    # a folder reached again through a link (`up -> ..`, or two links to one folder) is walked once: its
    # files read twice would be every run a duplicate of itself
    if (ident := identity(folder)) is not None:
        if ident in walked:
            return
        walked.add(ident)
    try:
        children = sorted(folder.iterdir())
    except OSError as exc:
        yield _bad(folder, f"cannot list this folder: {exc.strerror or exc}")
        return
    for child in children:
        if child.name.startswith(".") and child.name not in SESSION_NAMES:
            continue
        rel = child.relative_to(root).as_posix()
        if child.is_symlink() and not child.exists():  # a loop (`self -> self`) or a target gone
            # with --include, only what it matches is this walk's business, a broken link included
            if _included(rel, child.name, options.include) if options.include else is_trace_name(child):
                yield _dangling(child)
            continue
        if _sibling_link(child):
            continue
        if child.is_dir():
            kind = sniff_dir(child)
            if kind is None:
                if depth + 1 >= options.max_depth:
                    yield _bad(child, f"more than {options.max_depth} folders below {root}: not walked")
                else:
                    yield from _walk(child, root, depth + 1, fmt, options, walked)
            elif options.include and not _included(rel, child.name, options.include):
                continue
            elif fmt is not None and fmt != kind:
                if options.on_left_out:
                    options.on_left_out(child, kind)
            elif _first_time(child, walked):
                yield InputItem(child, kind)
        elif child.is_file():
            if options.outputs and Path(os.path.realpath(child)) in options.outputs:
                continue  # this audit's own output (`referee audit . --out audit.jsonl`, run again)
            wanted = _included(rel, child.name, options.include) if options.include else is_trace_name(child)
            # a line file only: this process opens it anyway (to count its lines), while a small .json file is
            # opened by a worker alone (docs/scale.md); an earlier --summary-json there is one bad record saying so
            if wanted and child.name.endswith(".jsonl") and (own := own_output(child)) is not None:
                if options.on_own_output:  # an earlier audit's files, with another --out: never traces
                    options.on_own_output(child, own)
                continue
            if wanted and not _subagent_of_walked_session(child, root, options) and _first_time(child, walked):
                yield InputItem(child, fmt)
            elif not wanted and not options.include and options.on_skipped is not None and \
                    child.name.endswith(LOG_SUFFIXES) and (seems := looks_like(child)) is not None:
                options.on_skipped(child, seems)


def _subagent_of_walked_session(path: Path, root: Path, options: InputOptions) -> bool:
    """A Claude Code 2.x subagent's transcript (`<session>/subagents/agent-<id>.jsonl`) whose session file
    (`<session>.jsonl`) this walk reads too: the session's reader reads it as part of the prompt whose Task call
    started it, so on its own it would be the same work audited twice. The compaction agent's file is no
    subagent's work (the session's reader leaves it out), so it stays, and says what it is.

    >>> import tempfile; r = Path(tempfile.mkdtemp()); a = r / "s1" / "subagents" / "agent-a1.jsonl"
    >>> a.parent.mkdir(parents=True); _ = a.write_text("{}"); _subagent_of_walked_session(a, r, InputOptions())
    False
    >>> _ = (r / "s1.jsonl").write_text("{}"); _subagent_of_walked_session(a, r, InputOptions())
    True
    >>> _subagent_of_walked_session(a, a.parent, InputOptions())  # a walk of the subagents folder alone
    False
    """
    if not (path.name.startswith("agent-") and path.suffix == ".jsonl" and path.parent.name == "subagents") or \
            path.name.startswith("agent-acompact"):
        return False
    folder = path.parent.parent
    session = folder.parent / f"{folder.name}.jsonl"
    if root not in session.parents or not session.is_file():
        return False
    if options.include:
        return _included(session.relative_to(root).as_posix(), session.name, options.include)
    return is_trace_name(session)


OWN_HEAD = 1 << 16  # bytes read to tell one of referee's own outputs: its first record (a line, or a small summary)


def own_output(path: Path) -> str | None:
    """What referee output a `.json` / `.jsonl` file is (an audit file, a gold file, an audit summary), by the shape of
    its first record (`referee_v1.referee_output`); None for anything else, or a first record too long to tell.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); p = d / "g.jsonl"
    >>> _ = p.write_text('{"gold_version": 1, "run_id": "a", "completed": true}\\n')
    >>> own_output(p), own_output(d / "missing.json")
    ('a gold label (referee audit --gold-out, referee eval gold)', None)
    """
    import json

    from referee.audit.ingest.readers.referee_v1 import referee_output

    if not Path(path).name.endswith((".json", ".jsonl")):
        return None
    try:
        with open(path, "rb") as fh:
            head = fh.read(OWN_HEAD).decode("utf-8", "replace").lstrip()
        if not head.startswith("{"):
            return None
        value, _ = json.JSONDecoder().raw_decode(head)
    except (OSError, ValueError, RecursionError):
        return None
    return referee_output(value)


def _first_time(path: Path, seen: set[tuple[int, int]]) -> bool:
    """Whether this walk meets the file or run folder `path` leads to (by device and inode) for the first time."""
    # a file reached again through a link (`sub/same.jsonl -> ../a.jsonl`, or a hard link) read twice would
    # make each of its runs a duplicate of itself, blamed on "files that reuse run_ids"
    if (ident := identity(path)) is None:
        return True
    if ident in seen:
        return False
    seen.add(ident)
    return True


def _dangling(path: Path) -> TraceItem:
    return _bad(path, "a link that leads to no file (its target is missing, or it is a loop)",
                fix="remove the link, or point it at the file")


def _bad(path: Path, msg: str, fix: str = "give that folder itself, or fix its permissions") -> TraceItem:
    from referee.audit.trace import TraceItem, record_error

    err = record_error(msg, file=str(path), line=None)
    err.fix = fix
    return TraceItem(file=str(path), line=None, run_id=None, error=err)


def iter_inputs(paths: Iterable[Path], fmt: str | None = None,
                options: InputOptions | None = None) -> Iterator[TraceItem]:
    """The TraceItems of every input: each file or run folder read by its own reader (see the module docstring)."""
    from referee.audit.ingest.readers import read_traces

    options = options or InputOptions()
    for item in walk(paths, fmt, options):
        if not isinstance(item, InputItem):
            yield item
        else:
            yield from read_traces(item.path, item.fmt, allow_pickle=options.allow_pickle,
                                   session_runs=options.session_runs)


def pickle_only_folders(paths: Iterable[Path], fmt: str | None = None) -> list[Path]:
    """The BrowserGym experiment folders among `paths` (named, not walked) that can only be read from pickles."""
    out = []
    for p in paths:
        p = Path(p)
        if not p.is_dir():
            continue  # a file names no experiment folder: the readers need not load for it
        from referee.audit.ingest.readers import sniff_dir
        from referee.audit.ingest.readers.browsergym import needs_pickle

        if (fmt or sniff_dir(p)) == "browsergym" and needs_pickle(p):
            out.append(p)
    return out


SIZE_ENTRIES = 100_000  # files and folders looked at to size an input (more: it is big)
MEDIA_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".mp4", ".webm")


def input_size(paths: list[Path], entries: int = SIZE_ENTRIES) -> int:
    """The bytes of the regular files under `paths` (links not followed) but images and videos in folders, which no
    reader parses (a run folder's screenshots), looking at no more than `entries` files and folders: past that, a
    size as big as any input.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "a").write_bytes(b"12345")
    >>> _ = (d / "step_1.PNG").write_bytes(b"x" * 1000)
    >>> input_size([d]), input_size([d / "a", d / "missing"]), input_size([d], entries=1) > 1 << 40
    (5, 5, True)
    """
    total, seen, big = 0, 0, 1 << 50
    stack = [str(p) for p in reversed(paths)]
    while stack:
        top = stack.pop()
        seen += 1
        if seen > entries:
            return big
        try:
            if not (os.path.isdir(top) and not os.path.islink(top)):
                total += os.stat(top).st_size
                continue
            with os.scandir(top) as it:
                for e in it:  # counted entry by entry: one folder of a million files is looked at no further
                    seen += 1
                    if seen > entries:
                        return big
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False) and not e.name.lower().endswith(MEDIA_SUFFIXES):
                        total += e.stat(follow_symlinks=False).st_size
        except OSError:
            continue  # the reader says what is wrong with it
    return total
