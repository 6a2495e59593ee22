"""What `referee check` (and `referee run`, before it starts anything) can tell about a plan that
loads but would fail at run time: screen captures or a `script:` without the browser actor, a
device's program or display this machine lacks (`adb`, `xcrun`, DISPLAY), a python actor target
that cannot be found, and evidence that names no capture of its step (an unset `${VAR}` is the
loader's own error). Reads the plan and the file system; runs nothing, imports no
agent code. `check_plan_file` loads a plan collecting every error, then adds these.
"""

from __future__ import annotations

import ast
import difflib
import os
import sys
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any, Mapping

from referee.errors import PlanError
from referee.errors import with_article as _a
from referee.plan.captures import BUILTIN_SPECS as CAPTURE_KINDS
from referee.plan.envcheck import Needs
from referee.plan.loader import LoadedPlan

# capture kinds that read the runner's browser page (a plugin kind says so with `needs_page = True`)
PAGE_CAPTURES = frozenset({"screenshot", "aria", "dom"})


@dataclass
class Findings:
    """A plan's problems: errors stop a run before it starts; warnings are worth a look."""

    errors: list[PlanError] = field(default_factory=list)
    warnings: list[PlanError] = field(default_factory=list)


def preflight(lp: LoadedPlan, *, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Findings:
    """Everything knowable about `lp` before running it (see the module docstring).

    >>> from referee.plan.loader import load_plan_text
    >>> lp = load_plan_text("steps:\\n- id: a\\n  script: [{goto: /}]\\n", "p.yaml")
    >>> [str(e) for e in preflight(lp).errors]  # doctest: +ELLIPSIS
    ["p.yaml:3:11: a `script:` needs the browser actor, and this plan's actor is 'command' in step 'a'; ..."]
    """
    env = os.environ if env is None else env
    found = Findings()
    kind = lp.plan.actor.kind if lp.plan.actor else "command"
    index = _step_index(lp)
    holders: dict[str, list[str]] = {}  # capture name -> the steps that take one by that name (made once: a plan
    for sid, caps in lp.captures.items():  # may have thousands of steps)
        for c in caps:
            holders.setdefault(c.params.name, []).append(sid)
    if kind == "python":
        _python_target(lp, cwd or Path.cwd(), env, found)
    if kind == "browser" and not _installed("playwright"):  # `run` refused it before starting; check said ok
        found.errors.append(lp.error("the browser actor needs playwright, which is not installed here", ("actor",),
                                     fix="install with: pip install 'referee[browser]'"))
    for step in lp.plan.steps:
        si = index.get(step.id, 0)
        locs = _capture_locs(lp, step.id, si)
        if kind != "browser" and step.script:
            found.errors.append(lp.error(f"a `script:` needs the browser actor, and this plan's actor is '{kind}'",
                                         ("steps", si, "script"), fix="set `actor: {kind: browser}` in the plan"))
        _script(lp, step.script, si, found)
        for cap in lp.captures.get(step.id, ()):
            loc = locs.get(cap.params.name, ("steps", si))
            needs_page = cap.params.kind in PAGE_CAPTURES or getattr(type(cap.params), "needs_page", False)
            if kind != "browser" and needs_page:
                found.errors.append(lp.error(
                    f"a {cap.params.kind} capture needs the browser actor (the runner's own page), and this "
                    f"plan's actor is '{kind}'", loc,
                    fix="set `actor: {kind: browser}` (an agent `command` then drives the runner's page over "
                        "CDP), or take the screen with a `command` capture (stdout_as: NAME.png)"))
        _evidence(lp, step.id, si, found, holders)
        _extras(lp, step.id, si, locs, found)
        for cap in lp.captures.get(step.id, ()):  # a program or a display this machine lacks (`adb`, DISPLAY)
            for why, fix in cap.params.unmet(env):
                found.errors.append(lp.error(why, locs.get(cap.params.name, ("steps", si)), fix=fix))
    return found


def _installed(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _extras(lp: LoadedPlan, step_id: str, si: int, locs: dict[str, tuple], found: Findings) -> None:
    """A kind whose optional dependency is not installed here (its spec's `needs`): known now, not as an ERROR
    after the agent acted. A validator that captures for itself is named once, through its capture."""
    wanted = [(tv.params.kind, tv.spec.needs, ("steps", si, "validators", tv.index))
              for tv in lp.validators.get(step_id, ())]
    wanted += [(c.params.kind, c.params.needs(), locs.get(c.params.name, ("steps", si)))
               for c in lp.captures.get(step_id, ())]
    for kind, need, loc in wanted:
        if need is not None and not _installed(need[0]):
            found.errors.append(lp.error(f"{kind} needs {need[0]}, which is not installed here", loc,
                                         fix=f"install with: pip install 'referee[{need[1]}]'"))


def _script(lp: LoadedPlan, items: list[Any], si: int, found: Findings) -> None:
    """Each `script:` action parsed as the browser actor will parse it (a bad `timeout_s` or target)."""
    from referee.plan.script import parse_action

    for i, item in enumerate(items):
        try:
            parse_action(item, i)
        except ValueError as exc:
            found.errors.append(lp.error(str(exc), ("steps", si, "script", i),
                                         fix="see the `script:` actions in docs/screens.md"))


def _step_index(lp: LoadedPlan) -> dict[str, int]:
    """Each step id's index in the file (the first one, when an id repeats)."""
    data = lp.where.data if lp.where is not None else {}
    raw = data.get("steps") if isinstance(data, dict) else None
    out: dict[str, int] = {}
    for i, st in enumerate(raw if isinstance(raw, list) else []):
        if isinstance(st, dict) and isinstance(st.get("id"), str):
            out.setdefault(st["id"], i)
    return out


def _capture_locs(lp: LoadedPlan, step_id: str, si: int) -> dict[str, tuple]:
    """Where each capture of a step is written: its `capture:` entry, or the validator that asks for it."""
    step = lp.step(step_id)
    locs: dict[str, tuple] = {}
    for tv in lp.validators.get(step_id, ()):
        for req in tv.spec.captures(tv.params, tv.index):
            locs.setdefault(req.name, ("steps", si, "validators", tv.index))
    for ci, raw in enumerate(step.capture):
        if isinstance(raw, dict) and isinstance(raw.get("name"), str):
            locs[raw["name"]] = ("steps", si, "capture", ci)
    return locs


def _evidence(lp: LoadedPlan, step_id: str, si: int, found: Findings, holders: dict[str, list[str]]) -> None:
    """Validator evidence that names no capture of its step: a near miss or another step's capture is an
    error; a bare name (no folder, no extension) is a warning: only a file the agent saves can match it."""
    kinds = {c.params.name: c.params.kind for c in lp.captures.get(step_id, ())}
    mine = set(kinds)
    # a file a capture of this step writes (`stdout_as: screen.png`) is named by its file name, not a near miss
    written = {f for c in lp.captures.get(step_id, ()) for f, _ in c.params.files()}
    for tv in lp.validators.get(step_id, ()):
        loc = ("steps", si, "validators", tv.index, "evidence")
        for ref in tv.spec.evidence_refs(tv.params, tv.index):
            want, got = tv.spec.evidence_kind, kinds.get(ref)
            # a plugin's capture may write the record the check reads; a built-in one of another kind never does
            if want and got in CAPTURE_KINDS and got != want:
                found.errors.append(lp.error(f"evidence '{ref}' is {_a(got)} capture, and {tv.params.kind} reads "
                                             f"{_a(want)} capture", loc,
                                             fix=f"name {_a(want)} capture of this step, or take one"))
                continue
            if ref in mine or ref in written:
                continue
            near = difflib.get_close_matches(ref, sorted(n for n in mine if not n.startswith("_v")), n=1, cutoff=0.75)
            if near:
                found.errors.append(lp.error(f"evidence '{ref}' names no capture of this step",
                                             loc, fix=f"did you mean '{near[0]}'?"))
            elif other := next((sid for sid in holders.get(ref, ()) if sid != step_id), None):
                found.errors.append(lp.error(
                    f"evidence '{ref}' is a capture of step '{other}', not of this step", loc,
                    fix="evidence is read per step: capture it in this step too"))
            elif tv.params.require_change:
                found.errors.append(lp.error(
                    f"require_change needs a capture of this step, and '{ref}' is not one", loc,
                    fix="name a capture: the runner takes it before and after the step"))
            elif "/" not in ref and "." not in ref:
                known = ", ".join(sorted(n for n in mine if not n.startswith("_v"))) or "none"
                found.warnings.append(lp.error(
                    f"evidence '{ref}' names no capture of this step (captures: {known})", loc,
                    fix=f"unless the agent saves a file agent/{step_id}/{ref}, the validator will be ERROR"))


def search_path(lp: LoadedPlan, cwd: Path, env: Mapping[str, str]) -> list[str]:
    """Where a python actor's module is looked for: the plan's folder, the working directory, PYTHONPATH."""
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [str(lp.path.resolve().parent), str(cwd), *extra]


def _python_target(lp: LoadedPlan, cwd: Path, env: Mapping[str, str], found: Findings) -> None:
    target = lp.plan.actor.target if lp.plan.actor else None
    loc = ("actor", "target")
    if not target:
        found.errors.append(lp.error("the python actor needs `target: module:ClassName`", ("actor",),
                                     fix="e.g. target: my_agent:MyAgent (a module in the plan's folder)"))
        return
    if ":" not in target:
        found.errors.append(lp.error(f"actor target '{target}' is not 'module:ClassName'", loc,
                                     fix="e.g. target: my_agent:MyAgent"))
        return
    mod_name, _, cls_name = target.partition(":")
    paths = search_path(lp, cwd, env)
    origin, missing = _find_module(mod_name, [*paths, *sys.path])
    if missing is not None:
        stems = sorted({p.stem for d in paths[:2] for p in Path(d).glob("*.py")})
        near = difflib.get_close_matches(missing, stems, n=1, cutoff=0.6)
        found.errors.append(lp.error(
            f"cannot import actor target '{target}': no module named '{missing}' (looked in the plan's folder "
            f"{paths[0]}, the working directory {paths[1]}, then PYTHONPATH)", loc,
            fix=(f"did you mean '{near[0]}'? " if near else "") + "put the module beside the plan"))
        return
    names = _top_level_names(origin) if origin else None
    if names is not None and cls_name not in names:
        near = difflib.get_close_matches(cls_name, sorted(names), n=1, cutoff=0.6)
        found.errors.append(lp.error(f"cannot import actor target '{target}': module '{mod_name}' defines no "
                                     f"'{cls_name}'", loc, fix=f"did you mean '{near[0]}'?" if near else
                                     "check the class name"))


def _find_module(name: str, paths: list[str]) -> tuple[str | None, str | None]:
    """(the module's source file or None, the dotted part that was not found or None), without importing it."""
    if name.split(".")[0] in sys.builtin_module_names:
        return None, None
    search: list[str] | None = paths
    origin = None
    parts = name.split(".")
    for i in range(len(parts)):
        spec = PathFinder.find_spec(parts[i], search)
        if spec is None:
            return None, ".".join(parts[:i + 1])
        origin = spec.origin
        search = list(spec.submodule_search_locations or [])
    return origin, None


def _top_level_names(origin: str) -> set[str] | None:
    """The names a module's source binds at top level (None: not Python source, or a `*` import/dynamic)."""
    if not origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(origin).read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            return None  # names bound conditionally: do not guess
    return names


def check_plan_file(path: str | Path, *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                    text: str | None = None, needs: Needs = "all") -> tuple[LoadedPlan | None, Findings]:
    """Load a plan collecting every error (not only the first), then `preflight` it.

    `text`: the plan's text as already read (what `referee run -j` validated before a plan's agent
    could rewrite the file); `path` then only names it and anchors its relative paths. `needs`: which `${NAME}`
    variables must be set (`load_plan_text`): "checks" for a regrade, which captures nothing.
    The plan comes back None only when it cannot be read at all (no such file, not YAML, not a plan).
    """
    from referee.plan.loader import load_plan_text, read_plan_file

    path = Path(path)
    found = Findings()
    try:
        lp = load_plan_text(read_plan_file(path) if text is None else text, str(path), env=env, errors=found.errors,
                            needs=needs)
    except PlanError as exc:
        found.errors.append(exc)
        return None, found
    more = preflight(lp, env=env, cwd=cwd)
    found.errors += [e for e in more.errors if str(e) not in {str(x) for x in found.errors}]
    found.warnings += more.warnings
    found.errors.sort(key=_line_of)
    found.warnings.sort(key=_line_of)
    return lp, found


def _line_of(err: PlanError) -> tuple[int, int]:
    try:
        line, col = (err.place or "0:0").split(":")[:2]
        return int(line), int(col)
    except ValueError:
        return 0, 0


def finding_json(err: PlanError) -> dict[str, Any]:
    """One error or warning for `referee check --json`: file, line, column, message, fix."""
    line, col = _line_of(err)
    return {"file": err.file, "line": line or None, "column": col or None, "message": err.message, "fix": err.fix}
