"""Evaluating the auditor: gold labels, metrics with bootstrap intervals, baselines, policies, judges, intervention."""

from __future__ import annotations

from referee.core.lazy import lazy_exports

__all__ = ["Confusion", "rates", "load_gold", "sign_test", "BootstrapSpec", "bootstrap_rates", "check_splits",
           "EvalOptions", "run_eval", "at_equal_load"]

_WHERE = {"Confusion": "metrics", "rates": "metrics", "load_gold": "gold", "sign_test": "signtest",
          "BootstrapSpec": "bootstrap", "bootstrap_rates": "bootstrap", "check_splits": "splits",
          "EvalOptions": "run", "run_eval": "run", "at_equal_load": "equal_load"}


# lazy, so `import referee.evaluation` stays cheap (no numpy, no pydantic models until used)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
