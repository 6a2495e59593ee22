"""Load the risk file (risk.yaml next to this module, or a path) once per process."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from referee.audit.decide.risk import RiskModel, parse_risk
from referee.errors import PolicyError

RISK_FILE = Path(__file__).with_name("risk.yaml")


@lru_cache(maxsize=8)
def load_risk(path: str | None = None) -> RiskModel:
    """The shipped risk model (or the one at `path`); a malformed file is a PolicyError.

    >>> load_risk().version >= 1
    True
    """
    p = Path(path) if path else RISK_FILE
    try:
        return parse_risk(p.read_bytes(), str(p))
    except (OSError, ValueError) as exc:
        raise PolicyError(f"cannot load the risk file: {exc}", file=str(p),
                          fix="see the comments in src/referee/audit/decide/risk.yaml") from None
