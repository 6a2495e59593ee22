"""orjson (referee[fast]) writes the view's canonical JSON only where it writes what `json` writes: the view hash
and every observation's text are the same with it and without it, floats and odd values included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.audit.trace import Trace
from referee.audit.view import blind as view
from tests.support.hypo import examples

chars = st.sampled_from(["a", "é", "\u2028", "\x00", "\x1f", "\x7f", '"', "\\", "/", "😀", "\uffff", "\n", "K"])
text = st.lists(chars, max_size=6).map("".join)
scalars = (text | st.integers(min_value=-2**70, max_value=2**70) | st.booleans() | st.none()
           | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1.5e-05, 1e16, 1e-7, -0.0, 2**64]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                      max_leaves=12)
steps = st.lists(st.fixed_dictionaries({"action": st.fixed_dictionaries({"name": text.map(lambda s: "x" + s),
                                                                         "args": st.dictionaries(text, values)}),
                                        "observation": st.fixed_dictionaries({"text": text, "data": values,
                                                                              "ui": values})}), max_size=3)


def _seen(trace: Trace) -> tuple[str, list[str]]:
    v = view.build_view(trace)
    obs = [o for o in [v.initial_observation] + [s.observation for s in v.steps] if o is not None]
    return v.sha256, [o.as_text() for o in obs]


def test_orjson_is_installed_for_the_test_run():
    assert view._orjson is not None


@settings(max_examples=examples(300), deadline=None)
@given(text, steps, values)
def test_the_hash_and_texts_do_not_depend_on_orjson(task, st_, initial):
    trace = Trace(run_id="r", task=task, steps=st_, initial_observation={"data": initial})
    fast = _seen(trace)
    saved = view._orjson
    view._orjson = None
    try:
        slow = _seen(trace)
    finally:
        view._orjson = saved
    assert fast == slow


def test_a_float_leaves_the_text_to_json():
    trace = Trace(run_id="r", task="t", steps=[{"action": {"name": "pay", "args": {"amount": 1.5e-05}}}])
    v = view.build_view(trace)
    assert v.sha256 == view.hashlib.sha256(view._json(v.as_json()).encode()).hexdigest()
    assert '"amount":1.5e-05' in view._json(v.as_json())


@settings(max_examples=examples(200), deadline=None)
@given(steps, values)
def test_plain_accessors_give_what_thaw_gives(st_, initial):
    v = view.build_view(Trace(run_id="r", task="t", steps=st_, initial_observation={"data": initial}))
    for s in v.steps:
        assert repr(s.plain_args()) == repr(view.thaw(s.args))
        assert repr(s.observation.plain_data()) == repr(view.thaw(s.observation.data))
        assert repr(s.observation.plain_ui()) == repr(view.thaw(s.observation.ui))
    assert repr(v.initial_observation.plain_data()) == repr(view.thaw(v.initial_observation.data))


def test_plain_accessors_of_values_built_in_python_are_thawed_copies():
    odd = {1: "a", "b": (1, [2]), "c": {2: 3}}  # a key that is no string, tuples: thaw makes them JSON's
    parts = view.ViewParts(task="t", initial=None, steps=(("act", {"a": odd}, ("y", None, odd, None, False)),))
    s = view.freeze_view(parts).steps[0]
    assert s.plain_args() == {"a": {"1": "a", "b": [1, [2]], "c": {"2": 3}}}
    assert s.observation.plain_data() == {"1": "a", "b": [1, [2]], "c": {"2": 3}}


odd_values = st.recursive(scalars | st.tuples(scalars) | st.sets(st.integers(), max_size=2),
                          lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                          | st.dictionaries(text | st.integers(), inner, max_size=3), max_leaves=10)


def _notes(value, odd: list) -> None:
    """The reference the scan stands for: what freezing the value noted, as the view's builder did before its
    copies were made on first read."""
    t = type(value)
    if t in (str, int, bool, type(None)):
        return
    if isinstance(value, dict):
        if t is not dict or not all(type(k) is str for k in value):
            odd.append(None if t is dict else t)
        for v in value.values():
            _notes(v, odd)
    elif isinstance(value, (list, tuple)):
        if t is not list:
            odd.append(t)
        for v in value:
            _notes(v, odd)
    else:
        odd.append(t)


@settings(max_examples=examples(300), deadline=None)
@given(values | odd_values)
def test_the_scan_notes_what_freezing_notes(value):
    scanned: list = []
    reference: list = []
    view._scan(value, scanned)
    _notes(value, reference)
    assert scanned == reference
    if view._json_like(scanned):  # what the builder then keeps as the plain value is what thaw would give
        assert repr(view.thaw(view._freeze(value))) == repr(view.thaw(value))


def test_a_view_is_deeply_frozen_when_read_however_late():
    trace = Trace(run_id="r", task="t", steps=[{"action": {"name": "put", "args": {"ids": [1, {"a": 2}]}},
                                                "observation": {"data": {"rows": [[1]]}, "ui": {"kids": [{}]}}}])
    v = view.build_view(trace)
    s = v.steps[0]
    assert s.plain_args() == {"ids": [1, {"a": 2}]}  # the plain values first: the frozen ones are made later
    assert s.observation.plain_data() == {"rows": [[1]]}
    for attempt in (lambda: setattr(s, "action", "x"), lambda: setattr(s.observation, "text", "x"),
                    lambda: delattr(s, "index"), lambda: setattr(s, "args", {})):
        try:
            attempt()
        except view.FrozenInstanceError:
            pass
        else:
            raise AssertionError("a view object took a new attribute")
    for container, key in ((s.args, "ids"), (s.args["ids"][1], "a"), (s.observation.data, "rows"),
                           (s.observation.ui, "kids")):
        try:
            container[key] = 0  # type: ignore[index]
        except TypeError:
            pass
        else:
            raise AssertionError(f"{container!r} took an item")
    assert isinstance(s.args["ids"], tuple) and isinstance(s.observation.data["rows"][0], tuple)
    assert s == view.build_view(trace).steps[0] and v == view.build_view(trace)
    assert trace.steps[0].action.args == {"ids": [1, {"a": 2}]}  # the trace itself is left as it was
