"""Fast paths give what the plain code they stand for gives: each is checked on generated text against that
code (kept beside it as the reference), on the edges that decide it (signs, commas, leading zeros, digits
past ASCII, lone surrogates, long runs of digits)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.audit.records import Finding, findings_json
from referee.audit.view import atoms
from tests.support.hypo import examples

# what numbers are made of, what stops them, and what only looks like them
_NUMBERISH = st.text(alphabet=st.sampled_from(list("0123456789,.-- aZe+_\n\t\u0663\uff13\u00e9\u2019\ud800")),
                     max_size=60)


@settings(max_examples=examples(3000), deadline=None)
@given(_NUMBERISH)
def test_the_numbers_of_a_haystack_are_the_regex_reading_of_it(text):
    assert atoms._haystack_numbers(text) == atoms._numbers_of(text)


@settings(max_examples=examples(3000), deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=24))
def test_a_run_of_digits_is_its_own_canonical_number_only_where_norm_number_agrees(digits):
    assert atoms._canonical(digits) == atoms.norm_number(digits)


@settings(max_examples=examples(3000), deadline=None)
@given(_NUMBERISH, st.data())
def test_a_number_shown_as_a_token_is_one_of_the_haystacks_numbers(text, data):
    # the canonical numbers of the text's own tokens, and of numbers it may only hold inside longer ones
    found = [atoms.norm_number(t) for t in atoms._NUM.findall(text)]
    extra = data.draw(st.sampled_from(["0", "7", "12", "84.25", "1000", "0.5", "1234.5"]))
    numbers = atoms._haystack_numbers(text)
    for n in [f for f in found if f is not None] + [extra]:
        if atoms._number_token(n, text):
            assert n in numbers, (n, text)


def test_digits_past_ascii_are_numbers_as_re_reads_them():
    assert atoms._haystack_numbers("total \u0663\u0664 and 12") == atoms._numbers_of("total \u0663\u0664 and 12")
    assert "34" in atoms._haystack_numbers("total \u0663\u0664")  # Arabic-Indic 3 and 4: float() reads them


_CAMEL_AND_CASE = st.text(
    alphabet=st.sampled_from(list("aZbY09_- .\n\u0130\u0131\u00df\u00e9\u2019\ud800\u01c5\u212a")), max_size=40)


@settings(max_examples=examples(3000), deadline=None)
@given(_CAMEL_AND_CASE)
def test_the_words_of_a_name_are_its_regex_split(name):
    import re

    from referee.audit.extract import lexicon

    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    assert lexicon.ordered_words(name) == tuple(w for w in re.split(r"[^A-Za-z]+", spaced) if w)


@settings(max_examples=examples(3000), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB1_-.@ x9\u00e9/:")), max_size=40), st.data())
def test_a_tokens_places_are_where_the_tokeniser_finds_it(text, data):
    tokens = [m.group(0) for m in atoms._TOKEN.finditer(text)]
    # every token of the text, and strings that are tokens elsewhere but not here
    token = data.draw(st.sampled_from(tokens + ["a1", "B-1", "x9.a"]))
    want = [m.span() for m in atoms._TOKEN.finditer(text) if m.group(0) == token]
    assert atoms.token_spans(text, token) == want


_OUTPUTS = st.lists(st.sampled_from(["<returncode>", "<ReturnCode>", "returncode: ", "Exit Code ", "exitcode=",
                                     "EXIT STATUS ", "exıt code ", "HTTP/1.1 ", "Status: ", "status_code=", "-",
                                     "0", "1", "404", "200", "\n", " ", "x", "\u017f", "\u212a", "\u00e9"]),
                    max_size=12).map("".join)


@settings(max_examples=examples(3000), deadline=None)
@given(_OUTPUTS)
def test_exit_codes_and_statuses_are_read_as_re_i_reads_them(text):
    import re

    from referee.audit.extract import acting

    for cue in (acting._RC_TEXT, acting._STATUS_TEXT):
        want = re.search(cue.pattern, text, re.I)
        got = cue.search(text)
        assert (got and (got.span(), got.group(1))) == (want and (want.span(), want.group(1)))


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.builds(
    Finding, value=st.sampled_from(["yes", "no", "unknown"]), support=st.lists(st.integers(0, 500), max_size=4),
    note=st.none() | st.text(max_size=12)), max_size=6))
def test_findings_are_stored_as_their_model_dump_with_sorted_keys(fields):
    # the reference findings_json stands for: a field added to Finding and not written there fails here
    assert findings_json(fields) == json.dumps({k: v.model_dump() for k, v in fields.items()}, sort_keys=True)
