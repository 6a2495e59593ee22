"""What `referee eval` does, as library calls: build the methods, stream the records once, score, report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from referee.core.timeouts import MAX_RETRIES
from referee.errors import BackendError, GoldError, UsageError
from referee.evaluation.baselines import (
    RECORD_BASELINES,
    Method,
    auditor_method,
    baselines,
    load_predictions,
    predictions_method,
)
from referee.evaluation.bootstrap import BootstrapSpec
from referee.evaluation.dataset import iter_records, some_ids, tally
from referee.evaluation.gold import load_gold
from referee.evaluation.results import BreakdownAxis, EvalReport, MethodInfo, RiskCurve, evaluate

DEFAULT_CACHE_DIR = Path(".referee-cache")


@dataclass(frozen=True)
class EvalOptions:
    """Everything `referee eval AUDIT --gold LABELS` was asked for."""

    audit: Path
    gold: Path
    policies: tuple[str, ...] = ()
    no_policies: bool = False
    baselines: tuple[str, ...] | None = None
    judges: tuple[str, ...] = ()
    traces: Path | None = None
    trace_format: str | None = None
    predictions: tuple[str, ...] = ()
    axes: tuple[BreakdownAxis, ...] = ("task_class", "group", "split")
    logo: bool = True
    breakdown_for: tuple[str, ...] | None = None
    records_out: Path | None = None
    strict: bool = False
    spec: BootstrapSpec = BootstrapSpec()
    intervals: bool = True
    model: str | None = None
    base_url: str | None = None
    votes: int = 5
    k: int | None = None
    concurrency: int = 8
    max_retries: int = MAX_RETRIES
    cache_dir: Path | None = None
    claim_channel: str = "reader"       # "gold": methods read the gold claim where gold has one


def _judge_methods(opts: EvalOptions, wanted: set[str], notes: list[str]) -> list[Method]:
    """Run (or replay from cache) each LLM judge on the wanted traces; the same claim gate decides.

    Failed calls go into `notes` too: a description is in JSON only, and the docs promise every report says it.
    """
    if not opts.judges:
        return []
    if opts.traces is None:
        raise UsageError("--judge needs the traces the audit was made from", fix="pass --traces FILE (and --format)")
    from referee.core.llm import LLMClient, LLMConfig
    from referee.evaluation.compare import gate_for_records
    from referee.evaluation.judges import JudgeCache, TraceJudge, iter_traces

    k = opts.k or opts.votes // 2 + 1
    cache = JudgeCache((opts.cache_dir or DEFAULT_CACHE_DIR) / "judges.jsonl")
    gate = gate_for_records(opts.audit)
    out = []
    with LLMClient(LLMConfig.from_env(opts.base_url, opts.model, concurrency=opts.concurrency,
                                      max_retries=opts.max_retries)) as client:
        for name in opts.judges:
            judge = TraceJudge(client, name, votes=opts.votes, k=k, cache=cache)
            judged = list(judge.judge_all(iter_traces(opts.traces, opts.trace_format, wanted)))
            unanswered = _unanswered(sum(j.model_calls for j in judged), sum(j.failed_calls for j in judged),
                                     f"--judge {name}: ")
            if unanswered:
                notes.append(f"--judge {name}: {unanswered}")
            states = {j.run_id: j.state for j in judged}

            def decide(rec, states=states):
                return gate(rec.claim.label, states.get(rec.run_id, "unknown"))

            what = "task + trace + report" if name == "claim-aware" else "task + trace, report withheld"
            out.append(Method(name, "judge", decide,
                              f"LLM judge ({what}), {opts.votes} votes, {k}-of-{opts.votes}, same claim gate"
                              + (f"; {unanswered}" if unanswered else "")))
    return out


def _unanswered(calls: int, failed: int, who: str = "") -> str:
    """A note of the judge calls that got no usable answer ('' when all were answered); BackendError when none
    was, since there is nothing to measure then.

    >>> _unanswered(10, 0), _unanswered(10, 3)
    ('', '3 of 10 judge calls got no usable answer: read as unknown votes (not cached: a rerun asks them again)')
    """
    if calls and failed == calls:
        raise BackendError(f"{who}no judge call was answered ({calls} made): nothing to measure",
                           fix="check --base-url, --model and the server; answers that come are cached, failures "
                               "are asked again")
    return f"{failed} of {calls} judge calls got no usable answer: read as unknown votes (not cached: a rerun " \
           "asks them again)" if failed else ""


def build_methods(opts: EvalOptions, wanted: set[str] | None = None, notes: list[str] | None = None) -> list[Method]:
    """The auditor as recorded, baselines, replayed policies, external predictions and judges, in that order;
    what the report must say about them (judge calls that failed) is appended to `notes`."""
    regate = None
    if opts.claim_channel == "gold":
        from referee.evaluation.compare import gate_for_records

        regate = gate_for_records(opts.audit)
    methods = [auditor_method(regate=regate)]
    for name in (opts.baselines if opts.baselines is not None else RECORD_BASELINES):
        methods.append(baselines.get(name)())
    if not opts.no_policies:
        from referee.evaluation.compare import policy_methods

        methods.extend(policy_methods(opts.policies))
    for spec in opts.predictions:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise UsageError(f"--predictions '{spec}' is not NAME=FILE", fix="e.g. --predictions mytool=preds.jsonl")
        methods.append(predictions_method(name, load_predictions(file), description=f"dispositions from {file}"))
    methods.extend(_judge_methods(opts, wanted or set(), notes if notes is not None else []))
    names = [m.name for m in methods]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise UsageError(f"two methods are named {', '.join(sorted(dup))}", fix="give each --predictions a new name")
    return methods


def prediction_notes(name: str, table: Mapping[str, str], scored: set[str]) -> list[str]:
    """What a --predictions table and the scored runs do not share, said rather than dropped.

    >>> for note in prediction_notes("tool", {"a": "pass", "x": "flag"}, {"a", "b"}):
    ...     print(note)
    --predictions tool: 1 run_id(s) match no scored audit record and are ignored: x
    --predictions tool: 1 scored run(s) have no prediction and count as review: b
    """
    out = []
    if stray := sorted(set(table) - scored):
        out.append(f"--predictions {name}: {len(stray)} run_id(s) match no scored audit record and are ignored: "
                   + some_ids(stray))
    if absent := sorted(scored - set(table)):
        out.append(f"--predictions {name}: {len(absent)} scored run(s) have no prediction and count as review: "
                   + some_ids(absent))
    return out


MIN_POSITIVES = 20


def few_positives(rep: EvalReport, minimum: int = MIN_POSITIVES) -> list[str]:
    """The slices (overall first) of the primary method with fewer than `minimum` positives, as `axis=value (n)`.

    A recall over 7 positives moves by 0.14 per run: its interval says more about the sample than the method.
    """
    out = []
    for s in [*rep.overall, *rep.breakdowns]:
        if s.method == rep.primary and s.axis != "leave_out_group" and s.counts.get("positives", 0) < minimum:
            out.append(f"{'all' if s.axis == 'all' else f'{s.axis}={s.slice}'} ({s.counts.get('positives', 0)})")
    return out


def run_eval(opts: EvalOptions) -> tuple[EvalReport, list[str]]:
    """Score every method on the audit file; returns the report and the methods whose breakdowns to print."""
    gold = load_gold(opts.gold)
    wanted = None
    if opts.judges:
        wanted = {rec.run_id for _, rec in iter_records(opts.audit) if rec.run_id in gold}
    method_notes: list[str] = []
    methods = build_methods(opts, wanted, method_notes)
    t = tally(opts.audit, gold, methods, primary="auditor", records_out=opts.records_out,
              claim_channel=opts.claim_channel)
    cov = t.coverage
    if cov.evaluated == 0 and not cov.unlabelled:
        raise UsageError("the audit file holds no audit record", file=str(opts.audit),
                         fix="give the --out file of a `referee audit` that wrote records")
    if cov.evaluated == 0:
        raise GoldError("no audit record has a gold label", file=str(opts.gold),
                        fix=f"run_ids differ: audit has e.g. {cov.unlabelled[:2]}, gold has e.g. {cov.missing[:2]}")
    if opts.strict and (cov.unlabelled or cov.missing or cov.duplicates):
        raise GoldError("audit records and gold labels do not match one to one: " + "; ".join(cov.notes()[:3]),
                        file=str(opts.gold), fix="fix the files or drop --strict to score the matched runs")
    scored = set(gold) - set(cov.missing)
    unmatched = [note for m in methods if m.kind == "predictions" and m.table is not None
                 for note in prediction_notes(m.name, m.table, scored)]
    spec = opts.spec if opts.intervals else None  # --resamples 0: no bootstrap at all, not one resample
    rep = evaluate(t, spec, audit=str(opts.audit), gold=str(opts.gold), primary="auditor",
                   breakdown_methods=None, axes=opts.axes, leave_one_group_out=opts.logo)
    rep.notes.extend(method_notes + unmatched)
    rep.risk_curve = risk_curve_of(opts.audit, gold, spec, opts.claim_channel)
    small = few_positives(rep)
    if small:
        more = f", and {len(small) - 12} more slices" if len(small) > 12 else ""
        rep.notes.append(f"fewer than {MIN_POSITIVES} positives (intervals mean little there): "
                         + ", ".join(small[:12]) + more)
    if opts.claim_channel == "gold":
        rep.notes.append(f"claim channel: gold — every method reads the gold claim on the {cov.claim_from_gold} "
                         "run(s) gold gives one for (a diagnostic of the claim reader, not a deployable auditor)")
    # only where it holds: with no such positive that recall is n/a, and under the gold channel the gold
    # claim defines the positives and is what the gate reads
    if cov.same_claim_positives and any(m.name == "claim-gate-only" for m in methods):
        which = ("the claim every method reads (gold's where it has one, else the shared reading)"
                 if opts.claim_channel == "gold" else "the same claim reading")
        rep.notes.append("claim-gate-only flags every success claim, so its recall is 1 by construction on the "
                         f"{cov.same_claim_runs} run(s) ({cov.same_claim_positives} positive(s)) whose positives "
                         f"come from {which}")
    if len(cov.policies) == 1 and opts.claim_channel != "gold":
        (pol,) = cov.policies
        rep.methods[0] = MethodInfo(name="auditor", kind="auditor",
                                    description=f"the audit records' own dispositions (policy {pol})")
    names = [m.name for m in rep.methods]
    for wanted_name in opts.breakdown_for or ():
        if wanted_name not in names:
            from referee.core.registry import nearest

            raise UsageError(f"--breakdown-for: no method '{wanted_name}' in this report",
                             fix=nearest(wanted_name, names, "methods"))
    return rep, list(opts.breakdown_for or ["auditor"])


def risk_curve_of(audit: Path, gold: Mapping, spec: BootstrapSpec | None,
                  claim_channel: str = "reader") -> RiskCurve | None:
    """The risk ordering against the gate on the labelled records of an audit file (None: no record has a risk)."""
    from referee.evaluation.metrics import is_positive
    from referee.evaluation.riskcurve import RiskItem, compare_at

    items, without = [], 0
    for _, rec in iter_records(audit):
        g = gold.get(rec.run_id)
        if g is None:
            continue
        without += rec.risk is None
        claim = g.claim if g.claim is not None else rec.claim.label
        read = claim if claim_channel == "gold" else rec.claim.label
        items.append(RiskItem(is_positive(claim, g.completed), read == "success",
                              rec.risk.value if rec.risk else None, rec.disposition))
    if not items or without == len(items):
        return None
    load = sum(it.disposition != "pass" for it in items) / len(items)
    c = compare_at(items, load, spec)
    return RiskCurve(loads=[round(v, 4) for v in c.loads], risk_blocked_recall=[round(v, 4) for v in c.risk_recall],
                     gate_blocked_recall=[round(v, 4) for v in c.gate_recall], area=c.area, area_lo=c.area_ci.lo,
                     area_hi=c.area_ci.hi, load=load, difference=c.difference, difference_lo=c.difference_ci.lo,
                     difference_hi=c.difference_ci.hi, records_without_risk=without)


def run_intervention_cmd(*, traces: Path, gold: Path, audit: Path | None, fmt: str | None, model: str | None,
                         base_url: str | None, votes: int, k: int | None, concurrency: int, cache_dir: Path | None,
                         spec: BootstrapSpec | None, max_retries: int = MAX_RETRIES):
    """Judge every gold-labelled trace with and without its report and summarize the shift."""
    from referee.core.llm import LLMClient, LLMConfig
    from referee.evaluation.compare import gate_for_records
    from referee.evaluation.intervention import run_intervention, summarize
    from referee.evaluation.judges import JudgeCache, iter_traces

    labels_gold = load_gold(gold)
    reader_claims: dict[str, str] = {}
    if audit is not None:
        reader_claims = {rec.run_id: rec.claim.label for _, rec in iter_records(audit)}
    labels: dict[str, tuple[str, bool]] = {}
    no_claim: list[str] = []
    from_reader = 0
    for rid, g in labels_gold.items():
        claim = g.claim
        if claim is None:
            claim = reader_claims.get(rid)
            from_reader += claim is not None
        if claim is None:
            no_claim.append(rid)
            continue
        labels[rid] = (claim, g.completed)
    if not labels:
        raise GoldError("no run has a claim label", file=str(gold),
                        fix="add a claim column to the gold file, "
                            "or pass --audit AUDIT.jsonl for the shared claim reading")
    notes = []
    if no_claim:
        notes.append(f"{len(no_claim)} gold run(s) have no claim (in gold or --audit) and are skipped")
    if from_reader:
        notes.append(f"{from_reader} run(s) use the shared claim reading from {audit} (gold has no claim for them)")
    k = k or votes // 2 + 1
    gate = gate_for_records(audit) if audit is not None else gate_for_records(None)
    cache = JudgeCache((cache_dir or DEFAULT_CACHE_DIR) / "judges.jsonl")
    seen: set[str] = set()

    def traces_iter():
        for tr in iter_traces(traces, fmt, set(labels)):
            seen.add(tr.run_id)
            yield tr

    with LLMClient(LLMConfig.from_env(base_url, model, concurrency=concurrency, max_retries=max_retries)) as client:
        t, calls = run_intervention(traces_iter(), labels, client, votes=votes, k=k, cache=cache, gate=gate)
        model_name = client.config.model
    if unanswered := _unanswered(calls, t.failed_calls):
        notes.append(unanswered)
    missing = [rid for rid in labels if rid not in seen]
    if missing:
        notes.append(f"{len(missing)} labelled run(s) have no trace in {traces}: {', '.join(missing[:5])}")
    return summarize(t, spec, model=model_name, votes=votes, k=k, model_calls=calls, notes=notes)
