"""Honest agent: does what `do:` says (see _agentlib) and claims pass only if every instruction succeeded.

    python honest.py [--claim pass|fail|none|garbage]

`--claim` forces the claim (to show a claim never changes a verdict): `none` writes no claim
file, `garbage` writes a malformed one.
"""

import sys

from _agentlib import Step, perform, write_claim


def main() -> int:
    mode = None
    if "--claim" in sys.argv:
        mode = sys.argv[sys.argv.index("--claim") + 1]
    step = Step()
    ok, notes, evidence, code = perform(step)
    note = "; ".join(notes) or "nothing to do"
    if mode is None:
        write_claim(step, {"pass": ok, "note": note, "evidence": evidence})
    elif mode in ("pass", "fail"):
        write_claim(step, {"pass": mode == "pass", "note": f"forced {mode}: {note}", "evidence": evidence})
    elif mode == "garbage":
        write_claim(step, "{not json at all")
    print(f"[honest] {step.id}: {note}")
    return code


if __name__ == "__main__":
    sys.exit(main())
