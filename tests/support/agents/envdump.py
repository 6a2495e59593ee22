"""Environment-dumping agent: writes its whole environment to REFEREE_AGENT_DIR/env.json and the
step it got on stdin to REFEREE_AGENT_DIR/stdin.json (raw text in stdin.txt), then does what
`do:` says and claims pass. A test checks the runner's secrets are not in env.json.
"""

import json
import os
import sys

from _agentlib import Step, perform, write_claim


def main() -> int:
    step = Step()
    (step.agent_dir / "env.json").write_text(json.dumps(dict(os.environ), indent=1, sort_keys=True))
    (step.agent_dir / "stdin.txt").write_text(step.stdin_raw)
    (step.agent_dir / "stdin.json").write_text(json.dumps(step.stdin_json))
    (step.agent_dir / "cwd.txt").write_text(os.getcwd())
    ok, notes, evidence, code = perform(step)
    write_claim(step, {"pass": ok, "note": "dumped env; " + "; ".join(notes), "evidence": ["env.json"] + evidence})
    return code


if __name__ == "__main__":
    sys.exit(main())
