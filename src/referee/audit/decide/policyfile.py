"""Load audit policies from YAML: a shipped name (causal, final-state, low-load, unanimous) or a path."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from referee.audit.decide.policy import Policy
from referee.audit.decide.taskclass import check_classes
from referee.core.fsutil import read_yaml, sha256_bytes
from referee.core.registry import Registry
from referee.errors import PolicyError

POLICY_DIR = Path(__file__).parent / "policies"
SHIPPED = ("causal", "final-state", "low-load", "unanimous", "strict")

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


@lru_cache(maxsize=64)
def load_policy(name_or_path: str = "causal") -> LoadedPolicy:
    """Load and validate a policy; `task_classes: default` pulls in the shipped frozen rule.

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
        raw = {**raw, "task_classes": _yaml(tc_path)}
        blob += b"\n---\n" + tc_path.read_bytes()
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
