"""The child process of the Python actor: load the agent's class, act on one step, write its claim.

`python -m referee.runner.actors.pyhost module:ClassName`, with the command-actor protocol: the
step as JSON on stdin, REFEREE_AGENT_DIR and REFEREE_CLAIM_FILE in the environment. Exit 0 after
`act` returned, 1 when it raised (the traceback goes to stderr), 125 when the class cannot be loaded.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

NOT_STARTED = 125  # as referee.runner.agentproc.NOT_STARTED: nobody acted


def main(argv: list[str]) -> int:
    from referee.core.fsutil import atomic_write_json
    from referee.errors import PlanError
    from referee.runner.actors.base import Claim
    from referee.runner.actors.python import SEARCH_ENV, StepContext, load_target

    if len(argv) != 1:
        print("usage: python -m referee.runner.actors.pyhost module:ClassName", file=sys.stderr)
        return 2
    try:
        # the plan's folder and the cwd, put on sys.path only now: not on PYTHONPATH, read at the start
        cls = load_target(argv[0], tuple(p for p in os.environ.pop(SEARCH_ENV, "").split(os.pathsep) if p))
    except PlanError as exc:
        print(f"referee: cannot start the agent: {exc}", file=sys.stderr)
        return NOT_STARTED
    try:
        step = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        step = {}
    ctx = StepContext(os.environ.get("REFEREE_STEP_ID", ""), os.environ.get("REFEREE_STEP_DO", ""),
                      os.environ.get("REFEREE_APP_URL") or None, Path(os.environ["REFEREE_AGENT_DIR"]),
                      script=step.get("script") if isinstance(step, dict) else None)
    try:
        agent = cls()
        agent.setup(ctx.app_url)
        try:
            claim = agent.act(ctx)
        finally:
            agent.teardown()
    except Exception:
        traceback.print_exc()
        return 1
    if claim is not None:
        atomic_write_json(Path(os.environ["REFEREE_CLAIM_FILE"]), claim.dump() if isinstance(claim, Claim) else claim)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
