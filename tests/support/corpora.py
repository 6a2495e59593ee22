"""Where the shared development corpora are: `shared/` beside the repository (CI lays a copy there)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """`$REFEREE_SHARED`, else the `shared/` folder beside the repository."""
    return Path(os.environ.get("REFEREE_SHARED") or REPO.parent / "shared")


TAU = shared_dir() / "corpora" / "tau-bench-airline" / "gpt-4o-airline.json"
ANDROID_WORLD = shared_dir() / "corpora" / "android-world-tasks" / "task_metadata.json"
MINI_SWE = shared_dir() / "corpora" / "mini-swe-agent-swebench"
