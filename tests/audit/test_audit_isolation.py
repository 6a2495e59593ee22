"""Report isolation, proved: the claim channel never changes the view or the evidence; and the import walls hold."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.audit.extract.rules import extract_rules
from referee.audit.trace import Trace
from referee.audit.view.blind import build_view
from tests.support.hypo import examples

SRC = Path(__file__).resolve().parents[2] / "src" / "referee"

names = st.sampled_from(["click", "type", "delete_note", "book_reservation", "get_user", "send_message",
                         "cancel_reservation", "list_items", "update_profile", "reply"])
texts = st.text(max_size=40)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), texts)
json_val = st.recursive(json_leaf, lambda c: st.one_of(st.lists(c, max_size=3),
                                                       st.dictionaries(st.text(max_size=5), c, max_size=3)),
                        max_leaves=6)
observations = st.one_of(st.none(), st.fixed_dictionaries(
    {"text": st.one_of(st.none(), texts, st.sampled_from(["[]", "Error: nope", "deleted X1"]))},
    optional={"data": json_val, "error": st.booleans(), "ui": json_val}))
actions = st.one_of(st.none(), st.fixed_dictionaries({"name": names, "args": st.dictionaries(
    st.sampled_from(["id", "text", "name", "reservation_id"]), st.one_of(texts, st.sampled_from(["X1", "ABC123"])),
    max_size=2)}))
claim_text = st.one_of(st.none(), texts, st.sampled_from(["Done! All deleted.", "I failed.", "X1 was booked."]))


@st.composite
def trace_pairs(draw):
    """Two traces equal in task, initial observation, actions and observations; claim channel drawn freely."""
    task = draw(st.one_of(texts, st.sampled_from(["Delete X1", "Book flight ABC123", "What is X1?"])))
    initial = draw(observations)
    body = draw(st.lists(st.tuples(actions, observations), max_size=6))
    run_ids = draw(st.tuples(st.text(min_size=1, max_size=5), st.text(min_size=1, max_size=5)))
    metas = draw(st.tuples(st.dictionaries(st.text(max_size=4), texts, max_size=2),
                           st.dictionaries(st.text(max_size=4), texts, max_size=2)))

    def make(i: int) -> Trace:
        steps = []
        for a, o in body:
            s = {"narration": draw(claim_text)}
            if a is not None:
                s["action"] = a
            if o is not None:
                s["observation"] = o
            steps.append(s)
        return Trace.model_validate({"run_id": run_ids[i], "task": task, "initial_observation": initial,
                                     "steps": steps, "report": draw(claim_text), "meta": metas[i]})

    return make(0), make(1)


@settings(max_examples=examples(300), deadline=None)
@given(trace_pairs())
def test_claim_channel_never_changes_view_or_evidence(pair):
    a, b = pair
    va, vb = build_view(a), build_view(b)
    assert va.sha256 == vb.sha256
    assert va == vb
    assert extract_rules(va) == extract_rules(vb)


@settings(max_examples=examples(100), deadline=None)
@given(trace_pairs(), texts)
def test_view_does_change_with_the_evidence_channel(pair, extra):
    a, _ = pair
    changed = a.model_copy(update={"task": a.task + "!" + extra})
    assert build_view(changed).sha256 != build_view(a).sha256


def _imports(path: Path) -> set[str]:
    mods: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
            mods.update(f"{node.module}.{a.name}" for a in node.names)
    return mods


def _names_and_attrs(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ("report", "narration"):
            out.add(node.value)
    return out


def test_wall_extractors_never_see_the_claim_channel():
    files = sorted((SRC / "audit" / "extract").glob("*.py"))
    assert len(files) >= 3
    for f in files:
        mods = _imports(f)
        bad = {m for m in mods if m.startswith(("referee.audit.claim.reader", "referee.audit.trace",
                                                "referee.audit.ingest.readers",
                                                 "referee.audit.run.pipeline"))}
        assert not bad, f"{f.name} imports {bad}"
        touched = _names_and_attrs(f) & {"report", "narration", "Trace", "read_claim_rules"}
        assert not touched, f"{f.name} touches {touched}"


def test_wall_policy_votes_disposition_are_pure():
    forbidden = ("os", "io", "sys", "pathlib", "socket", "sqlite3", "httpx", "time", "datetime", "random", "uuid",
                 "subprocess", "threading", "yaml", "referee.core.llm", "referee.audit.extract",
                     "referee.audit.claim.reader",
                 "referee.audit.run.cache", "referee.core.fsutil", "referee.audit.decide.policyfile")
    for name in ("policy.py", "votes.py", "disposition.py", "taskclass.py"):
        path = SRC / "audit" / "decide" / name
        top = {m for m in _imports(path)}
        bad = {m for m in top if m in forbidden or m.startswith(tuple(f + "." for f in forbidden))}
        assert not bad, f"{name} imports {bad}"
        calls = {n.func.id for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert not calls & {"open", "print", "input", "exec", "eval"}, f"{name} does I/O"


def test_wall_library_never_imports_the_cli():
    offenders = []
    for f in SRC.rglob("*.py"):
        if "cli" in f.relative_to(SRC).parts or f == SRC / "__main__.py":  # `python -m referee`: the CLI's entry
            continue
        if any(m == "referee.cli" or m.startswith("referee.cli.") for m in _imports(f)):
            offenders.append(str(f.relative_to(SRC)))
    assert not offenders


def test_wall_replay_builds_no_backend():
    mods = _imports(SRC / "audit" / "present" / "replay.py")
    assert not {m for m in mods if m.startswith(("referee.audit.extract", "referee.audit.claim.reader",
                                                 "referee.core.llm"))}
