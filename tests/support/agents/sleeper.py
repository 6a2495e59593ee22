"""Sleeping agent: records its pid, starts a child that holds stdout/stderr open, claims pass,
then sleeps far past any sane step timeout.

    python sleeper.py [SECONDS]   (default 120)

Files in REFEREE_AGENT_DIR: `pid` (this process), `child_pid` (the child `sleep`), `started`.
A runner that kills only its direct child, or waits on the pipes, hangs here.
"""

import os
import subprocess
import sys
import time

from _agentlib import Step, perform, write_claim


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120.0
    step = Step()
    (step.agent_dir / "pid").write_text(str(os.getpid()))
    child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
    (step.agent_dir / "child_pid").write_text(str(child.pid))
    ok, notes, evidence, code = perform(step)
    write_claim(step, {"pass": True, "note": "working on it...", "evidence": evidence})
    (step.agent_dir / "started").write_text("1")
    print("[sleeper] sleeping", flush=True)
    time.sleep(seconds)
    (step.agent_dir / "woke").write_text("1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
