"""Moody agent, for day-to-day runner tests: talks on stdout/stderr, crashes, and acts only on a
given attempt of a step. Otherwise it does what `do:` says (see _agentlib) and claims pass.

Extra instructions in `do:` (one per line):

    SAY <text>              print text on stdout (`\\e` becomes ESC, `\\0` a NUL)
    WARN <text>             print text on stderr (same escapes)
    BIG <bytes>             print that many bytes of `x` lines on stdout
    FROM_ATTEMPT <n> <instruction>   perform <instruction> only from the n-th call for this step on
    CRASH                   raise KeyError('api_key') (a traceback on stderr, exit 1)

Each call appends the step id to $MOODY_DIR/calls.log, and counts calls per step in
$MOODY_DIR/<step>.count ($MOODY_DIR comes from the plan's `actor.env`).
"""

import os
import sys
from pathlib import Path

from _agentlib import Step, do_one, write_claim


def unescape(text: str) -> str:
    return text.replace("\\e", "\x1b").replace("\\0", "\x00")


def main() -> int:
    step = Step()
    state = Path(os.environ.get("MOODY_DIR") or step.agent_dir)
    with open(state / "calls.log", "a") as fh:
        fh.write(step.id + "\n")
    counter = state / f"{step.id}.count"
    attempt = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(attempt))
    evidence: list[str] = []
    code = 0
    for line in step.do.splitlines():
        verb, _, rest = line.strip().partition(" ")
        if verb == "FROM_ATTEMPT":
            n, _, rest = rest.partition(" ")
            if attempt < int(n):
                continue
            verb, _, rest = rest.partition(" ")
        if verb == "SAY":
            print(unescape(rest), flush=True)
        elif verb == "WARN":
            print(unescape(rest), file=sys.stderr, flush=True)
        elif verb == "BIG":
            left = int(rest)
            while left > 0:
                chunk = ("x" * 99 + "\n")[:left]
                sys.stdout.write(chunk)
                left -= len(chunk)
            sys.stdout.flush()
        elif verb == "CRASH":
            raise KeyError("api_key")
        elif verb in ("POST", "DELETE", "WRITE", "SAVE", "RUN", "SLEEP", "EXIT"):
            _, _, req = do_one(step, verb, rest.replace("{agent_dir}", str(step.agent_dir)), evidence)
            code = req if req is not None else code
    write_claim(step, {"pass": True, "note": f"done (call {attempt})", "evidence": evidence})
    return code


if __name__ == "__main__":
    sys.exit(main())
