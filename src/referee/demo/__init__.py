"""The bundled demo: a small todo web app, plans against it, and an agreeable agent that claims pass on everything."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

HERE = Path(__file__).parent


def demo_plans(browser: bool = True) -> list[Path]:
    """The demo's plan files; sets REFEREE_DEMO_DIR (where the app keeps its SQLite DB and exports).

    >>> [p.name for p in demo_plans(browser=False)]
    ['todo-api.yaml']
    """
    if "REFEREE_DEMO_DIR" not in os.environ:
        os.environ["REFEREE_DEMO_DIR"] = tempfile.mkdtemp(prefix="referee-demo-")
    plans = [HERE / "todo-api.yaml"]
    if browser and (HERE / "todo-browser.yaml").exists():
        plans.append(HERE / "todo-browser.yaml")
    return plans
