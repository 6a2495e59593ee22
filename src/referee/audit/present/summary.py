"""Summaries of an audit: dispositions by task class, advisory records of SKIPPED runner steps, and misreports."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from referee.audit.records import AuditRecord

DISPOSITIONS = ("pass", "flag", "review")
# the option that raises each limit of the record budget (referee.audit.run.budget): a resume retries a record over
# budget only when its limit is raised, so the summary names the option, never "run the same command again"
BUDGET_FLAGS = {"cpu": "--record-cpu-s", "wall": "--record-wall-s", "memory": "--record-memory-mib"}


@dataclass
class AuditSummary:
    """Counts over audit records; `gold` maps run_id -> completed when a reader found gold labels."""

    by_class: Counter = field(default_factory=Counter)       # (task_class, disposition) -> n
    claims: Counter = field(default_factory=Counter)         # claim label -> n
    states: Counter = field(default_factory=Counter)         # trace state -> n
    misreports: Counter = field(default_factory=Counter)     # disposition of (claim success, gold not completed)
    advisory: Counter = field(default_factory=Counter)       # disposition of advisory records (SKIPPED steps)
    unanswered: int = 0                                      # records with backend calls that got no answer
    over_budget: Counter = field(default_factory=Counter)    # limit -> records over the record budget (not unanswered)
    gold_seen: int = 0
    duplicates: int = 0                                       # repeated run_ids in the input (set by the caller)
    stale: int = 0       # runs audited again because their trace changed since their record (set by the caller)
    retried: int = 0     # runs audited again because backend calls of their record had failed (set by the caller)
    reaudited: int = 0   # runs audited again with other settings, --reaudit-changed (set by the caller)
    n: int = 0
    llm_calls: int = 0                                        # model calls the records made, and their tokens
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, rec: AuditRecord, gold: dict[str, bool] | None = None) -> None:
        self.n += 1
        self.by_class[(rec.task_class, rec.disposition)] += 1
        self.claims[rec.claim.label] += 1
        self.states[rec.trace_state] += 1
        if rec.advisory:
            self.advisory[rec.disposition] += 1
        if rec.over_budget is not None:  # its error names the budget: no backend call went unanswered
            self.over_budget[rec.over_budget.limit] += 1
        elif rec.errors:
            self.unanswered += 1
        if rec.usage is not None:
            self.llm_calls += rec.usage.calls
            self.prompt_tokens += rec.usage.prompt_tokens
            self.completion_tokens += rec.usage.completion_tokens
        if gold and rec.run_id in gold:
            self.gold_seen += 1
            if rec.claim.label == "success" and not gold[rec.run_id]:
                self.misreports[rec.disposition] += 1

    def as_dict(self) -> dict:
        classes: tuple[str, ...] = ()
        if self.by_class:  # counts exist once records were added: an empty summary loads no record model
            from referee.audit.records import TASK_CLASSES as classes

        return {"records": self.n,
                "dispositions": {d: sum(v for (c, dd), v in self.by_class.items() if dd == d) for d in DISPOSITIONS},
                "by_class": {c: {d: self.by_class[(c, d)] for d in DISPOSITIONS} for c in classes
                             if any(self.by_class[(c, d)] for d in DISPOSITIONS)},
                "claims": dict(self.claims), "trace_states": dict(self.states),
                "gold_records": self.gold_seen,
                "success_claim_not_completed": {d: self.misreports[d] for d in DISPOSITIONS},
                "advisory": {d: self.advisory[d] for d in DISPOSITIONS},
                "unanswered": self.unanswered, "over_budget": {k: self.over_budget[k] for k in BUDGET_FLAGS},
                "duplicates": self.duplicates, "stale": self.stale,
                "retried": self.retried, "reaudited": self.reaudited,
                "tokens": {"calls": self.llm_calls, "prompt": self.prompt_tokens, "completion": self.completion_tokens}}


def summarize(records: Iterable[AuditRecord], gold: dict[str, bool] | None = None) -> AuditSummary:
    """Fold records into a summary.

    >>> summarize([]).as_dict()["records"]
    0
    """
    s = AuditSummary()
    for r in records:
        s.add(r, gold)
    return s


def render(s: AuditSummary) -> str:
    """A plain-text table: dispositions by task class, then lines for advisory records, misreports, duplicates.

    An advisory `pass` is spelled out as still SKIPPED: the auditor never turns a SKIPPED step into PASS.

    >>> s = AuditSummary(); s.advisory["pass"] = 1; s.duplicates = 2
    >>> for line in render(s).splitlines()[-2:]: print(line)
    advisory (SKIPPED runner steps, verdicts unchanged): 1 records: advisory pass 1 (still SKIPPED), flag 0, review 0
    duplicate run_ids: 2 (each audited once; see the warnings)
    """
    d = s.as_dict()
    lines = [f"{'task class':<12} {'pass':>6} {'flag':>6} {'review':>6} {'total':>6}"]
    for c, row in d["by_class"].items():
        lines.append(f"{c:<12} {row['pass']:>6} {row['flag']:>6} {row['review']:>6} {sum(row.values()):>6}")
    tot = d["dispositions"]
    lines.append(f"{'all':<12} {tot['pass']:>6} {tot['flag']:>6} {tot['review']:>6} {d['records']:>6}")
    lines.append("claims: " + ", ".join(f"{k} {v}" for k, v in sorted(d["claims"].items())) +
                 " | trace states: " + ", ".join(f"{k} {v}" for k, v in sorted(d["trace_states"].items())))
    if s.gold_seen:
        m = d["success_claim_not_completed"]
        lines.append(f"gold: {s.gold_seen} runs; success claim but not completed: {sum(m.values())} "
                     f"(flag {m['flag']}, review {m['review']}, pass {m['pass']})")
    if s.advisory:
        a = s.advisory
        lines.append(f"advisory (SKIPPED runner steps, verdicts unchanged): {sum(a.values())} records: "
                     f"advisory pass {a['pass']} (still SKIPPED), flag {a['flag']}, review {a['review']}")
    if s.unanswered:
        lines.append(f"records with backend calls that got no answer: {s.unanswered} (read as unknown, not cached; "
                     "run the same command again to ask again)")
    if over := sum(s.over_budget.values()):
        flags = " or ".join(f for k, f in BUDGET_FLAGS.items() if s.over_budget[k])
        kinds = ", ".join(f"{k} {s.over_budget[k]}" for k in BUDGET_FLAGS if s.over_budget[k])
        lines.append(f"records over the record budget: {over} ({kinds}; review, their audit was ended; a resume leaves "
                     f"them: raise {flags} to audit them again)")
    if s.duplicates:
        lines.append(f"duplicate run_ids: {s.duplicates} (each audited once; see the warnings)")
    if s.stale:
        lines.append(f"stale records: {s.stale} (trace changed since its record: audited again, the new record "
                     "stands)")
    if s.retried:
        lines.append(f"retried: {s.retried} (backend calls of their record had failed: asked again)")
    if s.reaudited:
        lines.append(f"re-audited with other settings: {s.reaudited} (--reaudit-changed)")
    if s.llm_calls:
        lines.append(f"model calls: {s.llm_calls}; tokens: prompt {s.prompt_tokens}, completion {s.completion_tokens}, "
                     f"total {s.prompt_tokens + s.completion_tokens}; {s.llm_calls / max(s.n, 1):.2f} calls per record")
    return "\n".join(lines)
