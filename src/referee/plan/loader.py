"""Load and validate a plan file; every error names the file, YAML line and column, step, rule and fix."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from referee.errors import PlanError, PluginError, RefereeError
from referee.plan.captures import BUILTIN_SPECS, CaptureParams, CaptureSpec, capture_specs
from referee.plan.envcheck import EnvCheck, Needs
from referee.plan.model import Plan, Step, name_from
from referee.plan.validators import (
    ARIA,
    DOM,
    SCREEN,
    CaptureRequest,
    ValidatorParams,
    ValidatorSpec,
    reserved_name,
    validator_specs,
)
from referee.plan.yamlnodes import Pos, compose, to_data


@dataclass(frozen=True)
class TypedValidator:
    """A validator entry resolved to its kind's spec (plan data) and typed parameters; the grader
    checks it with the checker registered for its kind (`referee.validators.checker`)."""

    index: int
    spec: ValidatorSpec
    params: ValidatorParams  # the kind's own subclass, its `${NAME}` values as written (filled when checked)
    public: frozenset[str] = frozenset()  # the plan's `public_env`: shown with their values in what it says
    sent: frozenset[str] = frozenset()  # what the runner substitutes: a secret one is `${NAME}` in the evidence

    @property
    def label(self) -> str:
        return self.params.name or f"{self.params.kind}#{self.index}"


@dataclass(frozen=True)
class TypedCapture:
    """A capture entry resolved to its kind's spec (plan data) and typed parameters; the runner performs it."""

    spec: CaptureSpec
    params: CaptureParams


@dataclass(frozen=True)
class LoadedPlan:
    """A plan that validated: the model plus each step's typed validators and captures."""

    path: Path
    text: str
    plan: Plan
    validators: dict[str, tuple[TypedValidator, ...]]
    captures: dict[str, tuple[TypedCapture, ...]]
    env_names: frozenset[str] = frozenset()  # `${NAME}` variables the runner substitutes (captures, app, actor)
    check_names: frozenset[str] = frozenset()  # `${NAME}` variables of validator values (filled when graded)
    where: "_Where | None" = dc_field(default=None, repr=False, compare=False)  # YAML positions, for later checks

    @property
    def name(self) -> str:
        return self.plan.name

    def error(self, msg: str, loc: tuple, fix: str | None = None) -> PlanError:
        """A PlanError at `loc` (a path into the plan, e.g. ("steps", 0, "capture", 1)) with its file:line:col."""
        if self.where is None:
            return PlanError(msg, file=str(self.path), fix=fix)
        return self.where.error(msg, loc, fix)

    def step(self, step_id: str) -> Step:
        return self._steps[step_id]

    @cached_property
    def _steps(self) -> dict[str, Step]:  # a plan may have thousands of steps, each looked up
        steps: dict[str, Step] = {}
        for s in self.plan.steps:
            steps.setdefault(s.id, s)  # the first of a repeated id, as a search would find
        return steps


class _Where:
    def __init__(self, file: str, positions: dict[tuple, Pos], data: Any,
                 sink: list[PlanError] | None = None) -> None:
        self.file, self.positions, self.data = file, positions, data
        self.sink = sink  # collect-all mode (`referee check`): errors are gathered here, not raised
        self._said: set[str] = {str(e) for e in sink or ()}

    def report(self, err: PlanError) -> None:
        """Raise `err`, or in collect-all mode note it so loading goes on to find the next one."""
        if self.sink is None:
            raise err
        if str(err) not in self._said:  # a set: a hostile plan may hold thousands of errors
            self._said.add(str(err))
            self.sink.append(err)

    def place(self, loc: tuple) -> str | None:
        loc = tuple(loc)
        # a missing key has no position: walk up to the nearest parent that has one
        while loc:
            if loc in self.positions:
                line, col = self.positions[loc]
                return f"{line}:{col}"
            loc = loc[:-1]
        pos = self.positions.get(())
        return f"{pos[0]}:{pos[1]}" if pos else None

    def step_label(self, loc: tuple) -> str:
        if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
            try:
                sid = self.data["steps"][loc[1]].get("id")
            except Exception:
                sid = None
            if isinstance(sid, str) and len(sid) > 40:
                sid = sid[:37] + "..."
            return f" in step '{sid}'" if sid else f" in step #{loc[1] + 1}"
        return ""

    def error(self, msg: str, loc: tuple, fix: str | None = None) -> PlanError:
        return PlanError(msg + self.step_label(loc), file=self.file, place=self.place(loc), fix=fix)


def _pydantic_error(where: _Where, exc: ValidationError, base: tuple = (),
                    model: type[BaseModel] | None = None) -> PlanError:
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")  # a typo explains a "missing"
    return _one_error(where, errors[0], base, model)


def _pydantic_errors(where: _Where, exc: ValidationError, base: tuple = (),
                     model: type[BaseModel] | None = None) -> list[PlanError]:
    """Every error of a validation, one PlanError each; a "missing" beside an unknown field (a typo) is left out,
    and the errors of one field that may take several forms (`str | list[str]`) are one."""
    errors = [_untagged(where.data, base, e) for e in exc.errors()]
    typo_at = {tuple(e["loc"][:-1]) for e in errors if e["type"] == "extra_forbidden"}
    merged: dict[tuple, dict] = {}
    for e in errors:
        if e["type"] == "missing" and tuple(e["loc"][:-1]) in typo_at:
            continue
        first = merged.setdefault(tuple(e["loc"]), e)
        if first is not e and e["msg"] not in first["msg"]:
            merged[tuple(e["loc"])] = {**first, "msg": f"{first['msg']}; or {e['msg'][:1].lower()}{e['msg'][1:]}"}
    return [_one_error(where, e, base, model) for e in merged.values()]


def _untagged(data: Any, base: tuple, err: Any) -> Any:
    """`err` with the union members pydantic names in its loc (`('evidence', 'list[str]')`) left out: they are
    no field of the plan, and the message would name a Python type instead of the field."""
    for part in base:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return err
    loc: list = []
    for i, part in enumerate(err["loc"]):
        last = i == len(err["loc"]) - 1
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and last and err["type"] in ("missing", "extra_forbidden"):
            pass  # a field not given, or one the model does not know: named as written
        else:
            continue  # a union member's tag
        loc.append(part)
    return {**err, "loc": tuple(loc)} if len(loc) != len(err["loc"]) else err


# what to write instead, by pydantic's error type (the message says what was wrong)
_TYPE_FIXES = {
    "int_type": "give a whole number", "int_parsing": "give a whole number", "int_from_float": "give a whole number",
    "float_type": "give a number", "float_parsing": "give a number",
    "bool_type": "give true or false", "bool_parsing": "give true or false",
    "string_type": "give a text (quote it if YAML reads it as something else)",
    "list_type": "give a list, e.g. [a, b] or one '- item' per line",
    "dict_type": "give a mapping, e.g. {name: value}", "model_type": "give a mapping, e.g. {name: value}",
    "model_attributes_type": "give a mapping, e.g. {name: value}",
    "literal_error": "use one of the values the message lists", "enum": "use one of the values the message lists",
    "string_too_short": "give a text that is not empty",
}

# what to write instead of a number out of its field's range, by field (any other: the message says the range)
_RANGE_FIXES = {"min_rows": "give a whole number of 1 or more: the least number of rows that must be found",
                "min_size": "give a size in bytes of 0 or more", "expected": "give an HTTP status, e.g. 200",
                "min_confidence": "give a number from 0 to 1, e.g. 0.6"}
_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


# what to write instead, for a value a field's own rule refused
_FIELD_FIXES = {"pattern": "write a Python regular expression (the `re` module's syntax)",
                "path": "write a JSON path such as $.items[0].name"}


def _one_error(where: _Where, err: Any, base: tuple, model: type[BaseModel] | None) -> PlanError:
    import difflib

    loc = base + tuple(err["loc"])
    names = [str(p) for p in err["loc"] if isinstance(p, str)]
    field = names[-1] if names else None
    etype = err["type"]
    fix = getattr((err.get("ctx") or {}).get("error"), "fix", None) or _TYPE_FIXES.get(etype)  # PlanValueError's
    if fix is None and etype == "value_error" and field:
        fix = _FIELD_FIXES.get(field) or (_SECONDS_FIX if field.endswith("timeout_s") else None)
    elif fix is None and etype in _RANGE_ERRORS and field:
        fix = _RANGE_FIXES.get(field, "give a number in the range the message says")
    if field is None:  # a rule over the whole entry (which fields go together): name the entry, not a field
        msg = f"{_entry(where.data, loc)}: {err['msg'].removeprefix('Value error, ')}"
        fix = fix or "see the kind's parameters in docs/runner.md (or `referee kinds`)"
    elif etype == "missing":
        msg, fix = f"missing required field '{field}'", "add it"
    elif etype == "extra_forbidden":
        msg = f"unknown field '{field}'"
        if (loc + ("__key__",)) in where.positions:
            loc = loc + ("__key__",)
        known = sorted(_fields_at(model, err["loc"][:-1])) if model else []
        near = difflib.get_close_matches(field, known, n=1, cutoff=0.6)
        fix = (f"did you mean '{near[0]}'? " if near else "") + (f"known fields: {', '.join(known)}" if known else
                                                                "remove it or check its spelling")
    else:
        msg = f"invalid '{field}': {err['msg'].removeprefix('Value error, ')}"
    return where.error(msg, loc, fix)


_SECONDS_FIX = "give a number of seconds in that range, e.g. 30"


def _entry(data: Any, loc: tuple) -> str:
    """What sits at `loc` in the plan, for a message about it as a whole: `sql_row_present validator`, `step`."""
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return "this entry"
    kind = data.get("kind") if isinstance(data, dict) else None
    what = {"validators": "validator", "capture": "capture", "steps": "step"}.get(
        str(loc[-2]) if len(loc) >= 2 else "", "plan")
    return f"{kind} {what}" if isinstance(kind, str) and len(kind) <= 40 else what


def _fields_at(model: type[BaseModel], loc: tuple) -> list[str]:
    """The field names of the (nested) pydantic model at `loc`, for did-you-mean hints."""
    from typing import get_args

    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if current else None
        if field is None:
            return []
        ann = field.annotation
        candidates = [ann, *get_args(ann)] + [a for arg in get_args(ann) for a in get_args(arg)]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
    return [n for n in current.model_fields if n != "kind"] if current else []


def load_plan_text(text: str, file: str = "<plan>", *, frozen: bool = False,
                   env: Mapping[str, str] | None = None, errors: list[PlanError] | None = None,
                   needs: Needs = "all") -> LoadedPlan:
    """Parse and validate plan text. Capture and validator kinds are plan data (`referee.plan.captures`,
    `referee.plan.validators`): loading a plan imports neither the runner nor the validators' checks,
    so the grader loads the frozen plan like any other.

    `frozen`: the plan a run directory holds. Its captures were taken already and lie on disk, so a
    capture kind from a plugin is kept as written (the grader needs only its name): grading imports
    no capture plugin, and a run stays gradeable after the plugin that captured it is gone.

    `env` (default: the process's environment): a `${NAME}` without default where the plan takes
    variables (capture parameters, validator values, app.start/build/env, actor.command/env; docs/runner.md,
    "Environment variables") must be set in it, or with `needs="checks"` only those of validator values;
    each unset one is one error, at its first use. A frozen plan is not checked: grading fills validator
    values from its own environment, and a value it lacks makes that validator ERROR.

    `errors`: collect-all mode (`referee check`). Each error found is added to this list and
    loading goes on past it (the step, capture or validator at fault is left out), so one pass
    finds them all; only a plan that is not YAML, or not a plan at all, still raises.

    >>> lp = load_plan_text("- id: a\\n  do: nothing\\n", "p.yaml")
    >>> (lp.name, [s.id for s in lp.plan.steps])
    ('p', ['a'])
    """
    node = compose(text, file)
    if node is None:
        raise PlanError("the plan is empty", file=file, fix="add a `steps:` list")
    positions: dict[tuple, Pos] = {}
    data = to_data(node, file, positions)
    if isinstance(data, list):  # the seed format: a bare list of steps
        positions = {("steps",) + k: v for k, v in positions.items()}
        data = {"steps": data}
    if not isinstance(data, dict):
        raise PlanError("a plan must be a mapping with `steps:` or a list of steps", file=file, place="1:1",
                        fix="see DESIGN.md, plan v1")
    where = _Where(file, positions, data, errors)
    stem = Path(file).stem if file != "<plan>" else "plan"
    data.setdefault("name", name_from(stem))  # a file stem need not be a name; the plan's `name:` must be
    context = {"frozen": frozen}
    try:
        plan = Plan.model_validate(data, context=context)
        indexed = list(enumerate(plan.steps))
    except ValidationError as exc:
        if errors is None:
            raise _pydantic_error(where, exc, (), Plan) from None
        for err in _pydantic_errors(where, exc, (), Plan):
            where.report(err)
        plan, indexed = _salvage(data)

    env_check = EnvCheck(where, None if frozen else (os.environ if env is None else env), needs)
    env_check.specs(plan)
    public = frozenset(plan.public_env)
    seen: dict[str, int] = {}
    typed_v: dict[str, tuple[TypedValidator, ...]] = {}
    typed_c: dict[str, tuple[TypedCapture, ...]] = {}
    for si, step in indexed:
        if step.id in seen:
            where.report(where.error(f"duplicate step id '{step.id}' (first at step #{seen[step.id] + 1})",
                                     ("steps", si, "id"), fix="give every step its own id"))
            continue
        seen[step.id] = si
        if not frozen and not step.do.strip() and not step.script:  # a frozen plan ran already: it still grades
            where.report(where.error("a step without `do:`: the agent would be handed an empty task",
                                     ("steps", si), fix="add `do: <what the agent should do>`"))
        caps: list[TypedCapture] = []
        names: set[str] = set()
        files = StepFiles(where, check=not frozen)
        for ci, raw in enumerate(step.capture):
            loc = ("steps", si, "capture", ci)
            try:
                if frozen and isinstance(raw, dict) and str(raw.get("kind")) not in BUILTIN_SPECS:
                    ck, params = _kept(where, raw, loc)
                else:
                    ck, params = _typed(where, capture_specs, raw, loc, "capture", context)
            except PlanError as exc:
                where.report(exc)
                continue
            try:
                _check_url(where, plan, params, loc)
            except PlanError as exc:
                where.report(exc)
            env_check(params, loc)
            if params.name in names:
                where.report(where.error(f"duplicate capture name '{params.name}'", loc + ("name",),
                                         fix="give each capture its own name"))
                continue
            if not frozen and reserved_name(params.name):  # it would take the place of a validator's capture
                where.report(where.error(
                    f"capture name '{params.name}' is reserved for the runner's own captures of validators "
                    "(_v<N>_<kind>, _screen, _aria, _dom)", loc + ("name",),
                    fix=f"rename it, e.g. '{params.name.lstrip('_') or 'capture'}'"))
                continue
            clash = files.add(params, loc)
            if clash is not None:
                where.report(clash)
                continue
            names.add(params.name)
            caps.append(TypedCapture(ck, params))
        requested: dict[str, CaptureRequest] = {}  # the captures validators asked for, by name
        vals: list[TypedValidator] = []
        for vi, raw in enumerate(step.validators):
            loc = ("steps", si, "validators", vi)
            try:
                vs, params = _typed(where, validator_specs, raw, loc, "validator", context)
            except PlanError as exc:
                where.report(exc)
                continue
            tv = TypedValidator(vi, vs, params, public)
            env_check(params, loc, sent=False)
            try:
                for req in _requests(vs, params, vi):
                    if req.name in names:
                        if frozen or requested.get(req.name) == req:
                            continue  # the same capture for several validators (the runner's `_screen`)
                        raise where.error(f"validator #{vi + 1} ({params.kind}) has the runner take a capture "
                                          f"named '{req.name}', and this step already has a different capture "
                                          "of that name", loc, fix=f"rename the step's capture '{req.name}'")
                    ck = capture_specs.get(req.kind)
                    try:
                        cparams = ck.Params.model_validate({"kind": req.kind, "name": req.name, **req.params},
                                                           context=context)
                    except ValidationError as exc:
                        raise _pydantic_error(where, exc, loc) from None
                    _check_url(where, plan, cparams, loc)
                    env_check(cparams, loc)
                    clash = files.add(cparams, loc)
                    if clash is not None:
                        raise clash
                    names.add(req.name)
                    requested[req.name] = req
                    caps.append(TypedCapture(ck, cparams))
                for ref in vs.evidence_refs(params, vi):
                    _check_ref(where, loc, ref)
            except PlanError as exc:
                where.report(exc)
                continue
            vals.append(tv)
        typed_v[step.id] = tuple(vals)
        typed_c[step.id] = tuple(caps)
    env_check.finish()
    sent = frozenset(env_check.names)
    if sent & env_check.check_names:  # a validator compares with a variable the runner also sends
        typed_v = {sid: tuple(replace(tv, sent=sent) for tv in tvs) for sid, tvs in typed_v.items()}
    return LoadedPlan(Path(file), text, plan, typed_v, typed_c, frozenset(env_check.names),
                      frozenset(env_check.check_names), where=where)


RUNNER_SCREENS = {SCREEN: "screenshot", ARIA: "aria", DOM: "dom"}  # the runner's own after-step captures, by name


def _requests(vs: ValidatorSpec, params: ValidatorParams, index: int) -> list[CaptureRequest]:
    """The captures a validator has the runner take: its own, and the runner's `_screen`, `_aria` or `_dom`
    when its evidence names them (as a screen validator without `evidence` does by default)."""
    own = list(vs.captures(params, index))
    taken = {r.name for r in own}
    return own + [CaptureRequest(RUNNER_SCREENS[ref], ref) for ref in dict.fromkeys(vs.evidence_refs(params, index))
                  if isinstance(ref, str) and ref in RUNNER_SCREENS and ref not in taken]


def _salvage(data: dict[str, Any]) -> tuple[Plan, list[tuple[int, Step]]]:
    """The parts of a plan that do validate, with each step's index in the file (collect-all mode)."""
    from referee.plan.model import ActorSpec, AppSpec

    def valid(model: type[BaseModel], raw: Any) -> Any:
        try:
            return model.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    raw_steps = data.get("steps")
    indexed = [(i, st) for i, raw in enumerate(raw_steps if isinstance(raw_steps, list) else [])
               if (st := valid(Step, raw)) is not None]
    name, public = data.get("name"), data.get("public_env")
    public = [x for x in public if isinstance(x, str)] if isinstance(public, list) else []
    plan = Plan.model_construct(version=1, name=name if isinstance(name, str) else "plan",
                                app=valid(AppSpec, data.get("app")), actor=valid(ActorSpec, data.get("actor")),
                                controls=[], steps=[st for _, st in indexed], public_env=public)
    return plan, indexed


class StepFiles:
    """The files a step's captures write into one phase folder: a file two captures (or one capture twice)
    would write is a PlanError, since the second write would replace the first (a record lost, or a false
    "modified after capture")."""

    def __init__(self, where: _Where, check: bool = True) -> None:
        self.where, self.check = where, check
        self.owners: dict[str, tuple[str, str]] = {}  # file -> (capture name, what the file is to it)

    def add(self, params: CaptureParams, loc: tuple) -> PlanError | None:
        """Note `params`' files, or the error when one of them is taken already (nothing noted then)."""
        if not self.check:
            return None
        mine: dict[str, str] = {}
        for file, what in params.files():
            owner = (None, mine[file]) if file in mine else self.owners.get(file)
            if owner is not None:
                return self._clash(params, loc, file, what, owner)
            mine[file] = what
        self.owners.update({f: (params.name, w) for f, w in mine.items()})
        return None

    def _clash(self, params: CaptureParams, loc: tuple, file: str, what: str,
               owner: tuple[str | None, str]) -> PlanError:
        name, theirs = owner
        other = f"its own {theirs}" if name is None else f"the {theirs} of capture '{name}'"
        msg = f"'{file}' would be both the {what} of capture '{params.name}' and {other}: one would replace the other"
        if what == "stdout_as":
            return self.where.error(msg, loc + ("stdout_as",),
                                    fix=f"give stdout_as a name of its own, e.g. '{params.name}.out'")
        if theirs == "stdout_as":
            return self.where.error(msg, loc, fix=f"give stdout_as of capture '{name}' another name")
        return self.where.error(msg, loc + ("name",), fix="rename one of the two captures")


class _KeptParams(CaptureParams):
    model_config = ConfigDict(extra="allow")


def _kept(where: _Where, raw: dict[str, Any], loc: tuple) -> tuple[CaptureSpec, CaptureParams]:
    kind = str(raw.get("kind"))
    spec = CaptureSpec(kind, _KeptParams, "a capture kind not installed here, kept as the run wrote it")
    try:
        return spec, _KeptParams.model_validate(raw, context={"frozen": True})
    except ValidationError as exc:
        raise _pydantic_error(where, exc, loc) from None


def _typed(where: _Where, registry, raw: Any, loc: tuple, what: str,
           context: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Resolve one `{kind: ..., ...}` entry to its registered kind and typed parameters, or a PlanError."""
    if not isinstance(raw, dict) or "kind" not in raw:
        raise where.error(f"a {what} needs a `kind`", loc, fix=f"known kinds: {', '.join(registry.names())}")
    try:
        kind = registry.get(str(raw["kind"]))
    except PluginError as exc:
        # an installed plugin is broken, not this line of the plan: said once, as itself, however many lines name it
        raise PlanError(exc.message, fix=exc.fix) from None
    except RefereeError as exc:
        raise where.error(exc.message, loc + ("kind",), fix=exc.fix) from None
    try:
        return kind, kind.Params.model_validate(raw, context=context)
    except ValidationError as exc:
        if where.sink is None:
            raise _pydantic_error(where, exc, loc, kind.Params) from None
        first, *more = _pydantic_errors(where, exc, loc, kind.Params)
        for err in more:
            where.report(err)
        raise first from None


def _check_url(where: _Where, plan: Plan, params: Any, loc: tuple) -> None:
    url = getattr(params, "url", None)
    if params.kind == "http" and isinstance(url, str) and "://" not in url and not (plan.app and plan.app.url):
        raise where.error(f"relative url '{url}' but the plan has no app.url to join it to", loc + ("url",),
                          fix="give a full http://127.0.0.1:PORT/... URL or set app.url")


def _check_ref(where: _Where, loc: tuple, ref: str) -> None:
    if not isinstance(ref, str) or not ref:
        raise where.error("an evidence reference must be a capture name or a relative path", loc + ("evidence",))
    if os.path.isabs(ref) or ".." in Path(ref).parts:
        raise where.error(f"evidence path '{ref}' escapes the run directory", loc + ("evidence",),
                          fix="use a capture name or a path relative to the agent's folder")


MAX_PLAN_BYTES = 16 << 20


def read_plan_file(path: str | Path) -> str:
    """A plan file's text (PlanError when it cannot be read; a FIFO is refused, not waited on)."""
    from referee.core.fsutil import read_regular

    path = Path(path)
    try:
        return read_regular(path, max_bytes=MAX_PLAN_BYTES, error=PlanError).decode("utf-8")
    except FileNotFoundError:
        raise PlanError("plan file not found", file=str(path), fix="check the path") from None
    except UnicodeDecodeError as exc:
        raise PlanError(f"cannot read plan: it is not UTF-8 text (byte {exc.start}: {exc.reason})", file=str(path),
                        fix="save the plan as UTF-8") from None
    except OSError as exc:
        raise PlanError(f"cannot read plan: {exc.strerror or exc}", file=str(path),
                        fix="check that the file is readable") from None


def load_plan(path: str | Path, *, needs: Needs = "all") -> LoadedPlan:
    """Read a plan file from disk and validate it (PlanError on any problem; a FIFO is refused, not waited on).

    `needs="checks"`: only the variables of validator values must be set (what `referee lint` evaluates).
    """
    return load_plan_text(read_plan_file(path), str(path), needs=needs)
