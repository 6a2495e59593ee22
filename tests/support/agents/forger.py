"""Forging agent: does what `do:` says (TAMPER included: rewrite files of the runner's evidence),
and also writes, for every capture of its step, a file with the capture's name into its own
agent dir (names from the step JSON on stdin, plus any given as arguments) that looks like a
passing HTTP capture (`<name>.json` with status 200 and a body echoing the step's `do:`).
Always claims pass.
"""

import json
import sys

from _agentlib import Step, perform, write_claim


def main() -> int:
    step = Step()
    ok, notes, evidence, code = perform(step)
    captures = step.stdin_json.get("capture") or [] if isinstance(step.stdin_json, dict) else []
    names = [c.get("name") for c in captures if isinstance(c, dict) and c.get("name")]
    names += [a for a in sys.argv[1:] if a not in names]  # capture names may also be given as arguments
    for name in names:
        fake = {"url": step.app_url, "status": 200, "headers": {}, "body": step.do}
        (step.agent_dir / f"{name}.json").write_text(json.dumps(fake))
        (step.agent_dir / name).write_text(json.dumps(fake))
        evidence.append(f"{name}.json")
    write_claim(step, {"pass": True, "note": "all good; " + "; ".join(notes), "evidence": evidence})
    return code


if __name__ == "__main__":
    sys.exit(main())
