"""Resume, keyed by content: which runs an audit file already holds, and whether each record still stands.

A record stands for a run when it was made with the settings of this audit (backend, model, prompt
and samples; claim reader; policy; view version), from the same content (view hash, and the hash of
the claim text), and every backend call answered. Otherwise the run is audited again and the new record
is appended: the file is never edited, and readers take the last record of each run_id.

A record whose audit went over the record budget (`over_budget`, referee.audit.run.budget) stands too: a resume does
not try it again, unless this audit's budget of the limit it went over is larger (its settings say
`record budget`, which no record states, so it never makes a record "changed").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from referee.audit.run.auditfile import loads_line
from referee.core.fsutil import open_regular
from referee.errors import UsageError

Settings = tuple[tuple[str, Any], ...]  # (what, value) pairs, in a fixed order; see settings_of
Action = Literal["skip", "changed", "stale", "retry"]


class ResumeError(UsageError):
    """An audit file whose record of a run was made with other settings than this audit's."""


def settings_of(rec: dict) -> Settings:
    """What a record says it was made with, from its JSON (older records say less: only what they say counts).

    >>> s = settings_of({"backend": {"name": "rules", "prompt_version": "4", "runs": 1},
    ...                  "policy": {"name": "causal", "sha256": "ab"}, "claim": {"backend": "rules"}})
    >>> dict(s)["backend"], dict(s)["claims"], "view version" in dict(s)
    ('rules', 'rules', False)
    """
    b, p = _obj(rec.get("backend")), _obj(rec.get("policy"))
    pairs: list[tuple[str, Any]] = [
        ("backend", b.get("name")), ("model", b.get("model")), ("prompt", b.get("prompt_version", "1")),
        ("samples", b.get("runs", 1)), ("policy", p.get("name")), ("policy sha256", p.get("sha256"))]
    cr = rec.get("claim_reader")
    if isinstance(cr, dict):
        pairs += [("claims", cr.get("name")), ("claims model", cr.get("model")),
                  ("claims prompt", cr.get("prompt_version"))]
    else:  # version 1-2 records name the claim reader only
        pairs.append(("claims", _obj(rec.get("claim")).get("backend", "rules")))
    if rec.get("view_version") is not None:
        pairs.append(("view version", rec["view_version"]))
    return tuple((k, v if isinstance(v, (str, int, float, bool, type(None))) else str(v)) for k, v in pairs)


def _obj(v: Any) -> dict:
    return v if isinstance(v, dict) else {}  # a hand-edited line must not stop a resume with a traceback


def differences(old: Settings, new: Settings) -> list[str]:
    """'what old -> new' for each setting both state and that differs (a changed policy file says so).

    >>> old = (("backend", "rules"), ("policy", "causal"), ("policy sha256", "aa" * 32))
    >>> differences(old, (("backend", "llm"), ("policy", "causal"), ("policy sha256", "bb" * 32)))
    ['backend rules -> llm', 'policy causal: file changed (sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb)']
    """
    now = dict(new)
    out = []
    for key, was in old:
        if key not in now or now[key] == was:
            continue
        if key == "policy sha256":
            if dict(old).get("policy") == now.get("policy"):
                out.append(f"policy {now.get('policy')}: file changed (sha256 {str(was)[:12]} -> {str(now[key])[:12]})")
            continue
        out.append(f"{key} {was} -> {now[key]}")
    return out


@dataclass(frozen=True)
class Done:
    """The last record of one run in the audit file, as much as resume needs of it."""

    line: int
    view_sha256: str | None
    claim_sha256: str | None
    settings: Settings
    failed: bool  # some backend call got no answer (the record lists it in `errors`)
    over: tuple | None = None  # its audit went over the record budget: (limit, cpu_s, wall_s, memory_mib) then


def scan(path: Path, damaged: list[int] | None = None) -> dict[str, Done]:
    """run_id -> its last record, read only (lines that do not parse are not counted: their numbers go to
    `damaged`, when given).

    Settings are shared between records, so a big file costs a few small tuples per run.
    """
    path = Path(path)
    done: dict[str, Done] = {}
    if not path.exists():
        return done
    interned: dict[Settings, Settings] = {}
    with open_regular(path, error=UsageError) as fh:  # an --out that is a FIFO is one line, never a wait
        for lineno, line in enumerate(fh, start=1):
            try:
                rec = loads_line(line)  # bounded depth, as every reader of user files
                rid = rec["run_id"]
            except (ValueError, KeyError, TypeError):
                rid = None
            if not isinstance(rid, str):
                if damaged is not None and line.strip():
                    damaged.append(lineno)
                continue
            s = settings_of(rec)
            over = _over(rec.get("over_budget"))
            done[rid] = Done(line=lineno, view_sha256=rec.get("view_sha256"), claim_sha256=rec.get("claim_sha256"),
                             settings=interned.setdefault(s, s), failed=bool(rec.get("errors")) and over is None,
                             over=over)
    return done


def _over(note: Any) -> tuple | None:
    """An over-budget record's note as (limit, cpu_s, wall_s, memory_mib); None for any other record."""
    if not isinstance(note, dict) or note.get("limit") not in ("cpu", "wall", "memory"):
        return None
    try:
        return note["limit"], float(note["cpu_s"]), float(note["wall_s"]), float(note["memory_mib"])
    except (KeyError, TypeError, ValueError):
        return None


def budget_setting(cpu_s: float, wall_s: float, memory_mib: int) -> tuple[str, Any]:
    """The pair an audit's settings carry for its record budget (what `action` compares an over-budget record
    with)."""
    return ("record budget", (float(cpu_s), float(wall_s), float(memory_mib)))


def action(done: Done, view_sha256: str, claim_sha256: str, settings: Settings) -> Action:
    """What a resume does with a run the file already holds.

    `changed`: made with other settings (stop, unless the user asked to re-audit such runs);
    `stale`: the trace changed since (view or claim text); `retry`: a backend call had failed;
    `skip`: the record stands. A record over the record budget stands unless `settings` give a larger budget of
    the limit it went over (`budget_setting`): then `retry`.

    >>> s = (("backend", "rules"),)
    >>> d = Done(line=1, view_sha256="v", claim_sha256=None, settings=s, failed=False)
    >>> action(d, "v", "c", s), action(d, "w", "c", s), action(d, "v", "c", (("backend", "llm"),))
    ('skip', 'stale', 'changed')
    """
    if differences(done.settings, settings):
        return "changed"
    if done.view_sha256 != view_sha256 or (done.claim_sha256 is not None and done.claim_sha256 != claim_sha256):
        return "stale"
    if done.over is not None:
        now = dict(settings).get("record budget")
        at = {"cpu": 0, "wall": 1, "memory": 2}[done.over[0]]
        return "retry" if isinstance(now, tuple) and now[at] > done.over[1 + at] else "skip"
    if done.failed:
        return "retry"
    return "skip"


def changed_error(out: Path, run_id: str, done: Done, settings: Settings) -> ResumeError:
    """The one-line error for a run whose record was made with other settings, naming what differs and the fix."""
    what = "; ".join(differences(done.settings, settings))
    return ResumeError(f"run_id {run_id} was audited with other settings than this audit's ({what}); "
                       "its record is kept", file=str(out), place=f"line {done.line}",
                       fix="pass --reaudit-changed to audit such runs again (the new record supersedes the old "
                           "one; evidence already cached is reused), or write to a new --out")
