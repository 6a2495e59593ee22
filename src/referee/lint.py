"""Validator lint: run every validator over negative-control evidence; one that holds there is too loose."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Sequence

from referee.core.fsutil import atomic_write_json, loads_json, read_regular
from referee.errors import EvidenceError, MissingExtraError, UsageError
from referee.plan.script import parse_script
from referee.rundir.schema import CaptureFailure, CaptureRecord, sniff_record
from referee.validators import checker
from referee.validators.variables import check_with_values

Status = Literal["loose", "specific", "not_applicable", "negative"]
MAX_CONTROL_BYTES = 256 << 20  # one control file, or one lint cache file


@dataclass(frozen=True)
class Finding:
    """One validator checked against one control file."""

    step: str
    validator: str
    kind: str
    control: str
    status: Status
    reason: str
    matched: str | None = None

    def __str__(self) -> str:
        what = f" (matched {self.matched!r})" if self.matched else ""
        return (f"step '{self.step}': {self.validator} holds on control {self.control}{what}; "
                "match a string only the correct screen shows")


@dataclass(frozen=True)
class LintReport:
    """Everything the lint found. Iterating it yields the too-loose findings only.

    >>> r = LintReport(checks=(Finding("s", "ocr_contains#0", "ocr_contains", "home.png", "loose", "read", "shop"),))
    >>> for f in r: print(f)
    step 's': ocr_contains#0 holds on control home.png (matched 'shop'); match a string only the correct screen shows
    >>> r.ok
    False
    """

    checks: tuple[Finding, ...] = ()
    controls: tuple[str, ...] = ()
    script_problems: tuple[str, ...] = ()
    steps_passing_on_control: tuple[tuple[str, str], ...] = ()  # (step, control): every validator held there

    @property
    def loose(self) -> list[Finding]:
        return [f for f in self.checks if f.status == "loose"]

    @property
    def ok(self) -> bool:
        return not self.loose and not self.script_problems

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.loose)

    def __len__(self) -> int:
        return len(self.loose)

    def to_dict(self) -> dict[str, Any]:
        return {"lint_version": 1, "ok": self.ok, "controls": list(self.controls),
                "loose": [f.__dict__ for f in self.loose], "checks": [f.__dict__ for f in self.checks],
                "script_problems": list(self.script_problems),
                "steps_passing_on_control": [{"step": s, "control": c} for s, c in self.steps_passing_on_control]}


def _control_record(path: Path, data: bytes) -> CaptureRecord | None:
    """The capture record a JSON control is (a copy of a run's `<name>.json`), if it is one."""
    if not path.name.lower().endswith(".json"):
        return None
    try:
        return sniff_record(json.loads(data))
    except ValueError:
        return None


def _control_kind(path: Path, data: bytes, record: CaptureRecord | None) -> str:
    """What a control file looks like, named as the capture kind that would have made it."""
    name = path.name.lower()
    if data.startswith(b"\x89PNG") or data.startswith(b"\xff\xd8"):
        return "screenshot"
    if ".aria." in name:
        return "aria"
    if name.endswith((".html", ".htm")):
        return "dom"
    if record is not None and not isinstance(record, CaptureFailure):
        return record.kind
    return "file"


@dataclass(frozen=True)
class _ControlEntry:
    path: str
    kind: str
    capture: str | None
    captured_by: str = "runner"
    primary: bool = True
    error: str | None = None


@dataclass
class ControlView:
    """An EvidenceView where every reference resolves to one control file (phase "after")."""

    control: Path
    step_id: str = "control"
    phase: Literal["before", "after"] = "after"
    cache_table: dict[str, dict[str, Any]] = field(default_factory=dict)
    _data: bytes | None = None
    _record: tuple[CaptureRecord | None] | None = None  # parsed once: (record or None,)

    def _bytes(self) -> bytes:
        if self._data is None:
            try:
                self._data = read_regular(self.control, max_bytes=MAX_CONTROL_BYTES)
            except OSError as exc:
                raise EvidenceError(f"control {self.control} is unreadable: {exc}") from None
        return self._data

    def entry(self, ref: str) -> _ControlEntry:
        return _ControlEntry(path=str(self.control), kind=_control_kind(self.control, self._bytes(), self._parsed()),
                             capture=ref)

    def _parsed(self) -> CaptureRecord | None:
        if self._record is None:
            self._record = (_control_record(self.control, self._bytes()),)
        return self._record[0]

    def record(self, ref: str) -> CaptureRecord | None:
        record = self._parsed()
        if isinstance(record, CaptureFailure):
            raise EvidenceError(f"control {self.control.name} records a failed capture: {record.capture_error}")
        return record

    def path(self, ref: str) -> Path:
        return self.control

    def read_bytes(self, ref: str) -> bytes:
        return self._bytes()

    def read_text(self, ref: str) -> str:
        return self._bytes().decode("utf-8", errors="replace")

    def read_json(self, ref: str) -> Any:
        try:
            return json.loads(self._bytes())
        except ValueError as exc:
            raise EvidenceError(f"control {self.control.name} is not JSON: {exc}") from None

    def cached(self, namespace: str, key: str, compute: Callable[[], Any]) -> Any:
        table = self.cache_table.setdefault(namespace, {})
        if key not in table:
            table[key] = compute()
        return table[key]


def _is_negative(tv) -> bool:
    kind = tv.params.kind
    return tv.spec.negative or "_not_" in kind or kind.startswith("not_")


def resolve_controls(plan, controls: Sequence[str | Path] = ()) -> list[Path]:
    """The plan's `controls:` (relative to the plan file) plus extra ones (relative to the cwd), de-duplicated."""
    base = Path(plan.path).parent
    out: list[Path] = []
    for c in [*(base / c for c in plan.plan.controls), *(Path(c) for c in controls)]:
        if c.exists() and not c.is_file():  # a FIFO would hang the read, a device never end
            raise UsageError("control is not a regular file (a FIFO or a device is never read)", file=str(c),
                             fix="pass the screenshot, snapshot, page or capture JSON itself")
        if not c.is_file():
            raise UsageError(f"control file not found: {c}", file=str(plan.path),
                             fix="pass a screenshot, aria snapshot, HTML page or capture JSON "
                                 "of a screen the plan must NOT accept")
        if c.resolve() not in [o.resolve() for o in out]:
            _check_readable(c)
            out.append(c)
    return out


IMAGE_NAMES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_FIX = "pass a screenshot, aria snapshot, HTML page or capture JSON of a screen the plan must NOT accept"


def _check_readable(control: Path) -> None:
    """A control the lint cannot read is a usage error, never a control: an empty or truncated screenshot
    would otherwise be read as an empty snapshot or page, and every check against it reported "ok"."""
    try:
        data = read_regular(control, max_bytes=MAX_CONTROL_BYTES)
    except (OSError, EvidenceError) as exc:
        why = exc.message if isinstance(exc, EvidenceError) else exc.strerror or str(exc)
        raise UsageError(f"control cannot be read: {why}", file=str(control), fix=_FIX) from None
    if not data.strip():
        raise UsageError("control is empty", file=str(control), fix=_FIX)
    if not (_control_kind(control, data, None) == "screenshot" or control.name.lower().endswith(IMAGE_NAMES)):
        return
    from referee.ocr.base import decode_image

    try:
        decode_image(data, control.name)
    except MissingExtraError:
        return  # only a validator that reads the image needs Pillow: its check stops the lint with the install hint
    except EvidenceError as exc:
        why = exc.message.split("evidence ", 1)[-1]
        raise UsageError(f"control {why}", file=str(control),
                         fix="save the screenshot again (a PNG or JPEG) or pass another control") from None


def _script_problems(plan) -> list[str]:
    problems = []
    for step in plan.plan.steps:
        try:
            parse_script(step.script)
        except ValueError as exc:
            problems.append(f"step '{step.id}': {exc}")
    return problems


def lint_plan(plan, controls: Sequence[str | Path] = (), *, cache_dir: Path | None = None) -> LintReport:
    """Check every validator of `plan` (a LoadedPlan) against each negative control; PASS there = too loose.

    Controls are the plan's `controls:` plus `controls`. Negative kinds (`ocr_not_contains`) are reported
    as such, not as loose. The lint performs no capture: `plan` may be loaded with `needs="checks"`, so only
    the variables of validator values must be set, which it fills as the grader does. `cache_dir` keeps OCR
    of controls between calls (`<cache_dir>/lint-<ns>.json`). Iterate the report for the too-loose findings;
    `report.ok` is False when any exist.

    >>> report = lint_plan(load_plan("plan.yaml", needs="checks"), ["controls/home.png"])  # doctest: +SKIP
    >>> [str(f) for f in report]  # doctest: +SKIP
    ["step 'open': ocr_contains#0 holds on control controls/home.png (matched 'shop'); ..."]
    """
    files = resolve_controls(plan, controls)
    problems = tuple(_script_problems(plan))
    if not files:
        return LintReport(script_problems=problems)
    table = _load_cache(cache_dir)
    before = json.dumps(table, sort_keys=True)
    checks: list[Finding] = []
    passing: list[tuple[str, str]] = []
    for step in plan.plan.steps:
        vals = plan.validators.get(step.id, ())
        for ctl in files:
            view = ControlView(ctl, step_id=step.id, cache_table=table)
            held = 0
            for tv in vals:
                f = _check_one(tv, view, step.id, str(ctl))
                checks.append(f)
                held += f.status in ("loose", "negative")
            if vals and held == len(vals) and any(f.status == "loose" for f in checks[-len(vals):]):
                passing.append((step.id, str(ctl)))
    if cache_dir is not None and json.dumps(table, sort_keys=True) != before:
        for ns, t in table.items():
            atomic_write_json(Path(cache_dir) / f"lint-{ns}.json", t)
    return LintReport(tuple(checks), tuple(str(f) for f in files), problems, tuple(passing))


def _check_one(tv, view: ControlView, step: str, control: str) -> Finding:
    label = tv.label
    try:  # `${NAME}` values filled from the environment, as the grader fills them (validators.variables)
        out = check_with_values(tv, lambda params: checker(tv.params.kind).check(params, view, tv.index),
                                scrubbed=False)  # a control holds values as the screen showed them
    except EvidenceError as exc:
        return Finding(step, label, tv.params.kind, control, "not_applicable",
                       f"cannot read the control this way: {exc}")
    except MissingExtraError:
        raise  # the validator reads this control, referee cannot yet: a lint that could not look is never "ok"
    except Exception as exc:  # a validator that cannot read this kind of control says nothing about looseness
        return Finding(step, label, tv.params.kind, control, "not_applicable", f"{type(exc).__name__}: {exc}")
    if out.status == "ERROR":
        return Finding(step, label, tv.params.kind, control, "not_applicable", out.reason)
    if _is_negative(tv):
        return Finding(step, label, tv.params.kind, control, "negative",
                       ("holds" if out.status == "PASS" else "does not hold") + f" (a negative check): {out.reason}")
    if out.status == "PASS":
        return Finding(step, label, tv.params.kind, control, "loose", out.reason, out.matched or out.reason)
    return Finding(step, label, tv.params.kind, control, "specific", out.reason)


def _load_cache(cache_dir: Path | None) -> dict[str, dict[str, Any]]:
    if cache_dir is None:
        return {}
    table: dict[str, dict[str, Any]] = {}
    for p in Path(cache_dir).glob("lint-*.json"):
        try:
            data = loads_json(read_regular(p, root=Path(cache_dir), max_bytes=MAX_CONTROL_BYTES))
        except (OSError, ValueError, EvidenceError):
            continue
        if isinstance(data, dict):
            table[p.stem.removeprefix("lint-")] = data
    return table

