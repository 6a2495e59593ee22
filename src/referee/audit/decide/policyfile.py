"""Load audit policies from YAML: a shipped name (causal, final-state, low-load, unanimous) or a path."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from referee.audit.decide import SHIPPED
from referee.audit.decide.policy import Policy
from referee.audit.decide.taskclass import check_classes
from referee.core.fsutil import read_yaml, sha256_bytes
from referee.core.registry import Registry
from referee.errors import PolicyError

POLICY_DIR = Path(__file__).parent / "policies"

policies: Registry[Path] = Registry("policy", item=Path)
for _name in SHIPPED:
    policies.add(_name, POLICY_DIR / f"{_name}.yaml")


@dataclass(frozen=True)
class LoadedPolicy:
    """A validated policy and the SHA-256 of the exact bytes it came from (task-class rule included)."""

    policy: Policy
    sha256: str
    path: str


def _yaml(path: Path) -> object:
    return read_yaml(path, PolicyError, "policy")


def _resolve(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return policies.get(name_or_path)


def _with_words(tc: object, path: Path) -> tuple[object, bytes | None]:
    """The task-class rule with each `{class: C, words: GROUP}` entry made the pattern of that write group in the
    auditor's vocabulary, and the vocabulary's bytes when one was used (None otherwise)."""
    patterns = tc.get("patterns") if isinstance(tc, dict) else None
    if not isinstance(tc, dict) or not isinstance(patterns, list) or \
            not any(isinstance(p, dict) and "words" in p for p in patterns):
        return tc, None
    from referee.audit.vocabulary import load_vocabulary

    vocabulary = load_vocabulary()
    out = []
    for p in patterns:
        if isinstance(p, dict) and "words" in p:
            group = vocabulary.groups.get(str(p["words"]))
            if group is None or "pattern" in p:
                raise PolicyError(f"task_classes: `words: {p['words']}` names no write group of the vocabulary"
                                  if group is None else "task_classes: an entry has both `words` and `pattern`",
                                  file=str(path), fix=f"use one of {', '.join(vocabulary.groups)}, or a `pattern`")
            p = {**{k: v for k, v in p.items() if k != "words"}, "pattern": group.task_pattern}
        out.append(p)
    return {**tc, "patterns": out}, vocabulary.raw


@lru_cache(maxsize=64)
def load_policy(name_or_path: str = "causal") -> LoadedPolicy:
    """Load and validate a policy; `task_classes: default` pulls in the shipped frozen rule, and a task-class entry
    `{class: delete, words: delete}` takes its pattern from the auditor's vocabulary.

    >>> lp = load_policy("causal"); lp.policy.name, len(lp.sha256)
    ('causal', 64)
    """
    path = _resolve(name_or_path)
    raw = _yaml(path)
    if not isinstance(raw, dict):
        raise PolicyError("a policy must be a YAML mapping", file=str(path), fix="see docs/auditor.md for the fields")
    blob = path.read_bytes()
    tc = raw.get("task_classes", "default")
    if tc == "default" or tc is None:
        tc_path = POLICY_DIR / "task_classes.yaml"
        tc = _yaml(tc_path)
        blob += b"\n---\n" + tc_path.read_bytes()
    tc, vocabulary = _with_words(tc, path)
    raw = {**raw, "task_classes": tc}
    if vocabulary is not None:  # the rule's words are the vocabulary's: a new vocabulary is a new policy
        blob += b"\n---\n" + vocabulary
    try:
        policy = Policy.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "policy"
        raise PolicyError(f"{loc}: {err['msg']}", file=str(path),
                          fix="see the shipped policies in referee/audit/decide/policies/") from None
    problems = check_classes(policy.task_classes.rule())
    if problems:
        raise PolicyError(f"task_classes: {problems[0]}", file=str(path), fix="use a known class and a valid regex")
    return LoadedPolicy(policy=policy, sha256=sha256_bytes(blob), path=str(path))


def load_policy_model(name_or_path: str = "causal") -> Policy:
    """Just the Policy (see load_policy, which also gives the file's SHA-256)."""
    return load_policy(name_or_path).policy


load_policy_full = load_policy  # the version-1 name of load_policy
