"""The RE2 prefilter changes how fast a cue or an atom is found, never what is found: every search, match and
finditer equals Python's own regex on the same text (ASCII or not), with RE2 and without it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from referee.audit.claim import cues as claimcues
from referee.audit.view import atoms
from referee.core import caseless, prefilter
from referee.core.prefilter import FastRegex, widen
from tests.support.hypo import examples

CUES = {name: getattr(claimcues, name) for name in dir(claimcues) if isinstance(getattr(claimcues, name), caseless.Cue)}
WORDS = ["unable to", "failed", "done.", "Done -", "successfully", "I will check", "let me", "would you like to",
         "the answer is", "not sure", "thank you for contacting", "anything else", "2024-05-20", "May 20th, 2024",
         "7 pm", "12:30 a.m.", "$19.05", "3 bags", "bob@example.com", '"Buy milk"', "“Buy eggs”", "’", "é", "K", "ſ",
         "\u2028", "—", "café", "naïve", "€12", "№5",
         "\x0b", "\x1c", "\n", "  ", ".", "!", "?", "-", "_", "It", "was not found", "booked", "is now confirmed"]
texts = st.lists(st.sampled_from(WORDS) | st.text(max_size=6), max_size=40).map(" ".join)


def _spans(it):
    return [(m.span(), m.group(0)) for m in it]


def test_the_accelerator_is_installed_for_the_test_run():
    # CI installs referee[fast]: the tests below then compare RE2-prefiltered searches with Python's
    assert prefilter._re2 is not None


def test_every_cue_and_every_atom_kind_gets_a_prefilter():
    assert CUES and all(cue._low._pre is not None for cue in CUES.values())
    assert all((f._low._pre if isinstance(f, caseless.Cue) else f._pre) is not None for f in atoms._FAST.values())


@settings(max_examples=examples(300), deadline=None)
@given(texts)
def test_cues_find_what_re_ignorecase_finds(text):
    for name, cue in CUES.items():
        plain = cue._i.regex  # the same pattern, re.I, Python alone
        assert _spans(cue.finditer(text)) == _spans(plain.finditer(text)), name
        got, want = cue.search(text), plain.search(text)
        assert (got and (got.span(), got.group(0))) == (want and (want.span(), want.group(0))), name
        got, want = cue.match(text), plain.match(text)
        assert (got and got.span()) == (want and want.span()), name


@settings(max_examples=examples(300), deadline=None)
@given(texts)
def test_atom_kinds_find_what_their_patterns_find(text):
    for kind, pat in atoms._PATTERNS:
        fast = atoms._FAST[kind]
        assert [m.span() for m in fast.finditer(text)] == [m.span() for m in pat.finditer(text)], kind


@pytest.mark.parametrize("pattern, text", [
    (r"\bdone(?! by)", "done by me; done"),               # a lookahead RE2 lacks: dropped, Python decides
    (r"(?<=[.!?]\s)booked\b", "booked. booked"),          # a lookbehind
    (r"^\W*error\b", "x\nerror"),                          # ^ without re.M: the string's start only
    (r"ok$", "ok\n"),                                      # $ before a final newline
    (r"a\s+b", "a\x0bb a\x1cb"),                          # \s on ASCII: \x0b and \x1c are spaces to Python
    (r"(\w+) \1", "hello hello"),                          # a back-reference: no prefilter, Python alone
    (r"\d[\d,]*+(\.\d+)?", "1,234.50 and 7"),             # a possessive repeat
    (r"caf(é|e)\b", "un café, un cafe"),                  # past ASCII: é is a letter to Python, `?` to RE2
    (r"“([^”]+)”", "the “note” is “done”"),               # quote marks past ASCII
    (r"(?i)\u212a\w+", "K is kelvin; kilo"),              # the Kelvin sign folds to k
])
def test_widened_patterns_keep_python_semantics(pattern, text):
    regex = re.compile(pattern)
    fast = FastRegex(regex, short=0)
    text = text * 8  # over the length below which Python alone is used
    assert _spans(fast.finditer(text)) == _spans(regex.finditer(text))
    assert (fast.search(text) or re.match("", "")).span() == (regex.search(text) or re.match("", "")).span()


def test_a_back_reference_cannot_be_widened_and_searches_with_python_alone():
    assert widen(r"(a)\1") is None
    assert FastRegex(re.compile(r"(a)\1"), short=0)._pre is None


def test_without_re2_the_same_matches(monkeypatch):
    monkeypatch.setattr(prefilter, "_re2", None)
    cue = caseless.Cue(claimcues.OBSTACLE.pattern, re.I)
    assert cue._low._pre is None
    text = "We tried twice. Unfortunately the page did not load, and I was unable to finish. " * 3
    assert _spans(cue.finditer(text)) == _spans(claimcues.OBSTACLE.finditer(text))


def test_case_insensitive_patterns_widen_with_python_case_folding():
    # under re.I the Kelvin sign matches k, and the long s matches s: the widened class holds what Python matches
    for pattern, text in ((r"\u212a", "k"), (r"\u017f", "S"), (r"(?i)ok", "OK"), (r"(?i:x)y", "Xy")):
        regex = re.compile(pattern, re.I if "\\u" in pattern else 0)
        fast = FastRegex(regex, short=0)
        assert [m.span() for m in fast.finditer(text * 60)] == [m.span() for m in regex.finditer(text * 60)]


@settings(max_examples=examples(200), deadline=None)
@given(texts)
def test_task_classes_are_those_of_the_regex_alone(task):
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.decide.taskclass import _joined, classify_task

    rule = load_policy("causal").policy.task_classes.rule()
    joined = _joined(rule)
    assert joined is not None and joined._pre is not None
    m = joined.regex.search(task)
    want = ("other", None) if m is None else next(
        (cp.cls, cp.pattern) for i, cp in enumerate(rule.patterns) if m.group(f"_p{i}") is not None)
    assert classify_task(task, rule) == want


def test_through_re2s_public_api_the_same_matches(monkeypatch):
    # the binding's raw matcher is used where it has one; its public search is the fallback
    import types

    real = prefilter._re2
    monkeypatch.setattr(prefilter, "_re2", types.SimpleNamespace(compile=real.compile, Options=real.Options))
    fast = FastRegex(re.compile(claimcues.OBSTACLE._low.regex.pattern), short=0)
    assert fast._pre is not None
    text = "we tried. unfortunately the page did not load, and i was unable to finish; it failed. " * 3
    assert _spans(fast.finditer(text)) == _spans(claimcues.OBSTACLE._low.regex.finditer(text))
