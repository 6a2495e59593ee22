"""Stream audit records, join them to gold labels, and tally every method's (positive, disposition) cells.

One pass over the audit JSONL: each line is parsed, every method decides it, and only counts are
kept (per method, task class, group and split), plus the run_ids needed to report mismatches.
Memory is O(methods x slices), not O(records); the bootstrap needs nothing more (see bootstrap.py).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from referee.audit.run.auditfile import AuditFileError, index_latest, iter_records  # noqa: F401 (one reader of audit files)
from referee.errors import RefereeError
from referee.evaluation.baselines import Method
from referee.evaluation.equal_load import GATE, N_JOINT, joint_cell
from referee.evaluation.gold import Gold
from referee.evaluation.metrics import DISPOSITIONS, N_CELLS, Confusion, cell, is_positive

NONE = "(none)"


@dataclass
class Coverage:
    """How audit records and gold labels matched: nothing is dropped without being counted here."""

    audit_records: int = 0
    gold_labels: int = 0
    evaluated: int = 0
    unlabelled: list[str] = field(default_factory=list)      # audit records with no gold label
    missing: list[str] = field(default_factory=list)         # gold labels with no audit record
    duplicates: list[str] = field(default_factory=list)      # run_ids with several records (the last is scored)
    claim_from_gold: int = 0
    claim_from_reader: int = 0
    # positives defined by the very claim the methods read (the shared reading; under the gold claim channel,
    # whichever claim defines the positive): claim-gate-only blocks every one of them by construction
    same_claim_runs: int = 0
    same_claim_positives: int = 0
    advisory: int = 0
    with_errors: int = 0
    policies: dict[str, int] = field(default_factory=dict)   # policy name of the records, as written

    def notes(self) -> list[str]:
        """Plain sentences for the report: every mismatch and where the claim labels came from."""
        out = []
        if self.unlabelled:
            out.append(f"{len(self.unlabelled)} audit record(s) have no gold label and are not scored: "
                       + some_ids(self.unlabelled))
        if self.missing:
            out.append(f"{len(self.missing)} gold label(s) have no audit record: " + some_ids(self.missing))
        if self.duplicates:
            out.append(f"{len(self.duplicates)} run_id(s) have more than one record in the audit file (a resume "
                       "audited them again); the last is scored: " + some_ids(self.duplicates))
        if self.claim_from_reader and not self.claim_from_gold:
            out.append("gold labels carry no claim: positives use the shared claim reading (the audit "
                       "record's claim.label), the same for every method")
        elif self.claim_from_reader:
            out.append(f"gold claim given for {self.claim_from_gold} run(s); the other {self.claim_from_reader} "
                       "use the shared claim reading, the same for every method")
        if self.advisory:
            out.append(f"{self.advisory} record(s) are advisory (from SKIPPED runner steps)")
        if self.with_errors:
            out.append(f"{self.with_errors} record(s) carry extraction errors")
        if len(self.policies) > 1:
            out.append("records were made under several policies: "
                       + ", ".join(f"{k} ({v})" for k, v in sorted(self.policies.items())))
        return out


def some_ids(ids: Sequence[str], limit: int = 8) -> str:
    """The first `limit` ids and how many more, for a note.

    >>> some_ids(["a", "b", "c"], limit=2)
    'a, b, ... (1 more)'
    """
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids) - limit} more)" if len(ids) > limit else "")


SliceKey = tuple[str, str, str]  # (task_class, group, split)


@dataclass
class Tally:
    """Per method, per (task class, group, split): the six cell counts. Plus paired flag contrasts."""

    methods: list[Method]
    cells: dict[str, dict[SliceKey, list[int]]] = field(default_factory=dict)
    # paired[(a, b)] = [positives a flags and b does not, positives b flags and a does not,
    #                   negatives a flags and b does not, negatives b flags and a does not]
    paired: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    coverage: Coverage = field(default_factory=Coverage)
    # why the primary method let positives through: "claim-side" (the shared claim reading is not
    # success), "trace-side" (trace state completed), "uncertain" (trace state unknown: reviewed)
    misses: dict[str, int] = field(default_factory=dict)
    # joint[m] = 12 cells (claim-gate-only blocks the run?, positive?, m's disposition) over all runs,
    # for every other method when claim-gate-only is one of the methods (equal_load.py)
    joint: dict[str, list[int]] = field(default_factory=dict)

    def confusion(self, method: str, *, task_class: str | None = None, group: str | None = None,
                  split: str | None = None, exclude_group: str | None = None) -> Confusion:
        """The summed cells of one method over the slices that match (None = any)."""
        total = [0] * N_CELLS
        for (tc, g, s), c in self.cells.get(method, {}).items():
            if task_class is not None and tc != task_class:
                continue
            if group is not None and g != group:
                continue
            if split is not None and s != split:
                continue
            if exclude_group is not None and g == exclude_group:
                continue
            for i in range(N_CELLS):
                total[i] += c[i]
        return Confusion.from_cells(total)

    def values(self, axis: str) -> list[str]:
        """The distinct task classes, groups or splits seen, sorted."""
        idx = {"task_class": 0, "group": 1, "split": 2}[axis]
        seen = {key[idx] for per in self.cells.values() for key in per}
        return sorted(seen)


def _with_claim(rec, label: str):
    """The record as the methods see it when the claim channel is gold: only the claim label changes."""
    return rec.model_copy(update={"claim": rec.claim.model_copy(update={"label": label})})


def tally(audit_path: Path, gold: dict[str, Gold], methods: Sequence[Method], *,
          primary: str | None = None, records_out: Path | None = None, claim_channel: str = "reader") -> Tally:
    """Score every method on every audit record that has a gold label, in one streaming pass.

    `primary` names the method the paired contrasts compare against (default: the first).
    `records_out`, when given, receives one JSONL line per scored record with every method's disposition.
    `claim_channel="gold"` shows the methods the gold claim where gold has one (the paper's gold-claim
    diagnostic: how much of the error is the claim reader's); "reader" (default) shows the shared reading.
    """
    t = Tally(methods=list(methods))
    for m in methods:
        t.cells[m.name] = defaultdict(lambda: [0] * N_CELLS)
    primary = primary or (methods[0].name if methods else None)
    others = [m.name for m in methods if m.name != primary]
    if primary is not None:
        for name in others:
            t.paired[(primary, name)] = [0, 0, 0, 0]
    gated = any(m.name == GATE for m in methods)
    if gated:
        t.joint = {m.name: [0] * N_JOINT for m in methods if m.name != GATE}
    cov = t.coverage
    cov.gold_labels = len(gold)
    index = index_latest(audit_path)  # the last record of each run_id stands, as for every reader
    cov.duplicates = list(dict.fromkeys(rid for rid, _ in index.superseded))
    cov.audit_records = len(index.superseded)
    tmp = Path(str(records_out) + ".tmp") if records_out else None
    out = open(tmp, "w", encoding="utf-8") if tmp else None
    try:
        for _lineno, rec in iter_records(audit_path, index=index):
            cov.audit_records += 1
            rid = rec.run_id
            g = gold.get(rid)
            if g is None:
                cov.unlabelled.append(rid)
                continue
            cov.evaluated += 1
            cov.policies[rec.policy.name] = cov.policies.get(rec.policy.name, 0) + 1
            cov.advisory += int(rec.advisory)
            cov.with_errors += int(bool(rec.errors))
            if g.claim is not None:
                claim = g.claim
                cov.claim_from_gold += 1
            else:
                claim = rec.claim.label
                cov.claim_from_reader += 1
            pos = is_positive(claim, g.completed)
            same = g.claim is None or claim_channel == "gold"
            cov.same_claim_runs += same
            cov.same_claim_positives += same and pos
            if claim_channel == "gold" and g.claim is not None and g.claim != rec.claim.label:
                rec = _with_claim(rec, g.claim)
            key = (rec.task_class, g.group or rec.group or NONE, g.split or rec.split or NONE)
            decided: dict[str, str] = {}
            for m in methods:
                d = m.decide(rec)
                if d not in DISPOSITIONS:
                    raise RefereeError(f"method '{m.name}' returned {d!r} for run_id {rid}",
                                       fix="a method must return pass, flag or review")
                decided[m.name] = d
                t.cells[m.name][key][cell(pos, d)] += 1
            if primary is not None and pos and decided[primary] != "flag":
                why = ("claim-side" if rec.claim.label != "success" else
                       "trace-side" if rec.trace_state == "completed" else
                       "uncertain" if rec.trace_state == "unknown" else "other")
                t.misses[why] = t.misses.get(why, 0) + 1
            if gated:
                gate_blocks = decided[GATE] != "pass"
                for name, cells in t.joint.items():
                    cells[joint_cell(gate_blocks, pos, decided[name])] += 1
            if primary is not None:
                a = decided[primary] == "flag"
                for name in others:
                    b = decided[name] == "flag"
                    if a != b:
                        t.paired[(primary, name)][(0 if a else 1) + (0 if pos else 2)] += 1
            if out is not None:
                out.write(json.dumps({"run_id": rid, "positive": pos, "completed": g.completed, "claim": claim,
                                      "task_class": rec.task_class, "group": key[1], "split": key[2],
                                      "dispositions": decided}) + "\n")
    except BaseException:
        if out is not None:
            out.close()
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    if out is not None:
        out.close()
    if tmp is not None and records_out is not None:
        tmp.replace(records_out)  # atomic: a reader never sees half a file
    cov.missing = [rid for rid in gold if rid not in index.last]
    for m in methods:
        t.cells[m.name] = dict(t.cells[m.name])
    return t
