"""The auditor's one vocabulary (referee/audit/vocabulary.py): the rules and the task-class rule read the same words."""

from __future__ import annotations

import hashlib
import re

import pytest
import yaml

from referee.audit.decide.policyfile import POLICY_DIR, load_policy
from referee.audit.decide.taskclass import classify_task
from referee.audit.extract import acting, lexicon
from referee.audit.extract.rules import RULES_VERSION, rules_extractor
from referee.audit.vocabulary import VOCABULARY_FILE, load_vocabulary, parse_vocabulary
from referee.errors import PolicyError

VOCABULARY = load_vocabulary()
SPEC = yaml.safe_load(VOCABULARY_FILE.read_text(encoding="utf-8"))
RULE = load_policy("causal").policy.task_classes.rule()
VERBS = sorted((g, v) for g, group in VOCABULARY.groups.items() for v in group.verbs)


def test_the_rules_write_groups_are_the_vocabulary_s():
    assert lexicon.GROUPS == {name: g.verbs for name, g in VOCABULARY.groups.items()}
    assert lexicon.WRITE_VERBS == VOCABULARY.write_verbs and lexicon.READ_VERBS == VOCABULARY.read_verbs
    assert (lexicon.GUI_TYPE, lexicon.GUI_CLICK, lexicon.SELF_SIGNAL) == \
        (VOCABULARY.gui_type, VOCABULARY.gui_click, VOCABULARY.self_signals)
    assert all(lexicon.COMMIT_LABEL.fullmatch(w.replace(" ?", " ")) for w in VOCABULARY.commit_labels if w != "✓")


def test_the_shipped_task_class_rule_names_no_write_verb_of_its_own():
    # a write class's words come only from the vocabulary: a verb cannot be in the rule and not in the rules
    raw = yaml.safe_load((POLICY_DIR / "task_classes.yaml").read_text(encoding="utf-8"))
    writes = [p for p in raw["patterns"] if p["class"] in VOCABULARY.groups]
    assert sorted(p["class"] for p in writes) == sorted(VOCABULARY.groups)
    assert all(p == {"class": p["class"], "words": p["class"]} for p in writes), writes


@pytest.mark.parametrize(("group", "verb"), VERBS)
def test_every_write_verb_is_read_in_a_task_as_the_rules_read_it_in_an_action(group, verb):
    spec = SPEC["groups"][group]
    sentence = f"Please {verb} the record X-1."
    if verb not in ("set", "fill", "select"):  # GUI words and a verb of two groups: recognised by their own layer
        assert group in acting.recognise(f"{verb}_record", {}).groups, verb
    if verb in spec.get("task_phrases_only", []):
        # a verb a task uses as a noun as often: on its own it asks for nothing (only within a phrase that names it)
        assert not re.fullmatch(VOCABULARY.groups[group].task_pattern, verb, re.I), verb
        return
    assert classify_task(sentence, RULE)[0] == group, verb
    assert (group in lexicon.task_groups(sentence)) == (verb not in spec.get("task_nouns", [])), verb


def test_the_write_verbs_a_task_never_uses_on_their_own_are_these():
    # pinned: a verb moved out of (or into) a task's reading is a decision, taken here in sight
    only = {g: sorted(s.get("task_phrases_only", [])) for g, s in SPEC["groups"].items()}
    assert only == {"delete": ["clear"], "send": ["email", "mail", "message", "post"],
                    "configure": ["adjust", "set", "switch", "turn"],
                    "create_edit": ["credit", "flag", "issue", "pin", "put", "set", "star"]}
    never = sorted(v for g, s in SPEC["groups"].items() for v in s.get("task_phrases_only", [])
                   if not any(re.fullmatch(w.split(" ")[0], v) for w in s["task_words"]))  # a phrase's head
    assert never == ["put"]


@pytest.mark.parametrize(("task", "cls"), [
    ("Transfer $50 from checking to savings.", "create_edit"),
    ("Revoke the API key K-99.", "delete"),
    ("Mute notifications for the #general channel until tomorrow.", "configure"),
    ("The cover of the August 2021 issue of Vogue shows a landmark. Give its height only.", "other"),
    ("Which films won? If there are several, put them in a comma-separated list.", "query"),
    ("Please issue a voucher of $50 to the customer.", "create_edit"),
])
def test_a_task_is_of_the_class_its_verbs_say_and_a_noun_is_no_verb(task, cls):
    assert classify_task(task, RULE)[0] == cls


def test_the_vocabulary_s_hash_is_part_of_the_rules_version_and_of_the_policy_hash(tmp_path):
    assert RULES_VERSION.endswith("+vocabulary:" + VOCABULARY.sha256[:12])
    assert VOCABULARY.sha256 == hashlib.sha256(VOCABULARY_FILE.read_bytes()).hexdigest()
    tools = tmp_path / "tools.yaml"
    tools.write_text("tools_version: 1\ntools:\n  - {name: 'ehr_*', kind: edit}\n")
    assert rules_extractor(tools=tools).prompt_version.startswith(RULES_VERSION + "+tools:")
    lp = load_policy("causal")
    blob = (open(lp.path, "rb").read() + b"\n---\n" + (POLICY_DIR / "task_classes.yaml").read_bytes()
            + b"\n---\n" + VOCABULARY_FILE.read_bytes())
    assert lp.sha256 == hashlib.sha256(blob).hexdigest()
    other = parse_vocabulary(VOCABULARY_FILE.read_bytes().replace(b"purge]", b"purge, obliterate]"))
    assert other.sha256 != VOCABULARY.sha256 and "obliterate" in other.groups["delete"].task_pattern


@pytest.mark.parametrize(("change", "said"), [
    ((b"task_phrases_only: [clear]", b"task_phrases_only: [scrub]"), "groups.delete: Value error, task_phrases_only"),
    ((b"post, 'yes', finish", b"post, yes, finish"), "commit_labels.13"),  # YAML 1.1 reads a bare yes as true
    ((b"vocabulary_version: 1", b"vocabulary_version: 2"), "vocabulary_version"),
])
def test_a_malformed_vocabulary_is_one_error_naming_the_field(change, said):
    with pytest.raises(PolicyError) as err:
        parse_vocabulary(VOCABULARY_FILE.read_bytes().replace(*change), "v.yaml")
    assert said in str(err.value) and "v.yaml" in str(err.value)


def test_a_policy_s_task_class_entry_may_take_its_words_from_the_vocabulary(tmp_path):
    text = (POLICY_DIR / "causal.yaml").read_text(encoding="utf-8").replace(
        "task_classes: default", "task_classes:\n  mode: first\n  patterns:\n    - {class: delete, words: delete}\n")
    (tmp_path / "p.yaml").write_text(text)
    rule = load_policy(str(tmp_path / "p.yaml")).policy.task_classes.rule()
    assert classify_task("Purge the cache", rule)[0] == "delete"
    (tmp_path / "bad.yaml").write_text(text.replace("words: delete", "words: destroy"))
    with pytest.raises(PolicyError, match="`words: destroy` names no write group"):
        load_policy(str(tmp_path / "bad.yaml"))


def test_the_vocabulary_module_s_examples_hold():
    import doctest

    import referee.audit.vocabulary as module

    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
