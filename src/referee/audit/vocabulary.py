"""The auditor's one vocabulary (vocabulary.yaml): write groups, read verbs, GUI and commit words, loaded once.

Both halves of the judgment read it: the rules extractor (extract/lexicon.py) classifies action names with it,
and the task-class rule (decide/policyfile.py expands an entry `{class: delete, words: delete}`) reads a task's
text with the same groups. Its SHA-256 joins the rules version and the policy's hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from referee.errors import PolicyError

VOCABULARY_FILE = Path(__file__).with_name("vocabulary.yaml")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GroupSpec(_Model):
    """One write group on disk: its verbs and how a task's text asks for it (see vocabulary.yaml)."""

    verbs: list[str]
    task_phrases_only: list[str] = Field(default_factory=list)
    task_words: list[str] = Field(default_factory=list)
    task_nouns: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _known_verbs(self) -> GroupSpec:
        for name in ("task_phrases_only", "task_nouns"):
            stray = [v for v in getattr(self, name) if v not in self.verbs]
            if stray:
                raise ValueError(f"{name} names {stray[0]!r}, which is not one of the group's verbs")
        return self


class VocabularyFile(_Model):
    """vocabulary.yaml, version 1."""

    vocabulary_version: Literal[1] = 1
    groups: dict[str, GroupSpec]
    read_verbs: list[str]
    gui_type: list[str]
    gui_click: list[str]
    commit_labels: list[str]
    self_signals: list[str]
    condition_words: list[str]


@dataclass(frozen=True)
class Group:
    """A write group in memory: its action-name verbs, and the words a task uses for it."""

    name: str
    verbs: frozenset[str]
    task_pattern: str  # the task-class rule's pattern for this kind, `\b(delete|deletes|...)\b`
    task_verbs: frozenset[str]  # the verbs that tell the rules which writes a task asks for


@dataclass(frozen=True)
class Vocabulary:
    """The loaded vocabulary and the SHA-256 of the exact bytes it came from."""

    groups: dict[str, Group]
    read_verbs: frozenset[str]
    gui_type: frozenset[str]
    gui_click: frozenset[str]
    commit_labels: tuple[str, ...]
    self_signals: frozenset[str]
    condition_words: tuple[str, ...]  # words that make a task's sentence depend on a condition ("if", "unless")
    sha256: str
    raw: bytes

    @property
    def write_verbs(self) -> frozenset[str]:
        """Every verb of every write group."""
        return frozenset().union(*(g.verbs for g in self.groups.values()))


def task_pattern(spec: GroupSpec) -> str:
    r"""The regular expression by which a task's text asks for a group: each verb as a whole word (a verb in
    `task_phrases_only` only within its phrases), or one of its `task_words`.

    >>> task_pattern(GroupSpec(verbs=["delete", "clear"], task_phrases_only=["clear"], task_words=["clear all"]))
    '\\b(delete|clear all)\\b'
    """
    alts = [v for v in spec.verbs if v not in spec.task_phrases_only] + spec.task_words
    return r"\b(" + "|".join(alts) + r")\b"


def parse_vocabulary(raw: bytes, source: str = "vocabulary.yaml") -> Vocabulary:
    """A vocabulary from the bytes of a vocabulary file; a malformed one is one PolicyError naming the field.

    >>> v = parse_vocabulary(VOCABULARY_FILE.read_bytes()); sorted(v.groups)
    ['configure', 'create_edit', 'delete', 'send']
    """
    import yaml  # only the auditor's first rule pays for it

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 15x faster, read at start-up
    try:
        spec = VocabularyFile.model_validate(yaml.load(raw, Loader=loader))
    except (yaml.YAMLError, ValidationError) as exc:
        errs = exc.errors() if isinstance(exc, ValidationError) else []
        where = ".".join(str(x) for x in errs[0]["loc"]) + ": " + errs[0]["msg"] if errs else str(exc).splitlines()[0]
        raise PolicyError(f"bad vocabulary: {where}", file=source, fix="see the comments in vocabulary.yaml") from None
    groups = {name: Group(name, frozenset(g.verbs), task_pattern(g), frozenset(g.verbs) - frozenset(g.task_nouns))
              for name, g in spec.groups.items()}
    return Vocabulary(groups=groups, read_verbs=frozenset(spec.read_verbs), gui_type=frozenset(spec.gui_type),
                      gui_click=frozenset(spec.gui_click), commit_labels=tuple(spec.commit_labels),
                      self_signals=frozenset(spec.self_signals), condition_words=tuple(spec.condition_words),
                      sha256=hashlib.sha256(raw).hexdigest(), raw=raw)


@lru_cache(maxsize=1)
def load_vocabulary() -> Vocabulary:
    """The shipped vocabulary, read once per process.

    >>> load_vocabulary().groups["delete"].task_pattern.startswith(r"\\b(delete|remove|cancel")
    True
    """
    return parse_vocabulary(VOCABULARY_FILE.read_bytes(), str(VOCABULARY_FILE))
