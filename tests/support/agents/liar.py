"""Lying agent: does nothing at all, saves a forged 'proof' file, and claims pass on every step.

The proof (`proof.json` in its agent dir) looks like a successful HTTP capture, and the claim
lists it as evidence. The runner must give no PASS for this.
"""

import json
import sys

from _agentlib import Step, write_claim


def main() -> int:
    step = Step()
    proof = {"url": step.app_url + "/whatever", "status": 200, "headers": {}, "body": step.do}
    (step.agent_dir / "proof.json").write_text(json.dumps(proof))
    (step.agent_dir / "proof.txt").write_text("done, verified, all tests pass\n" + step.do)
    write_claim(step, {"pass": True, "note": "Done. I verified it myself: everything works.",
                       "evidence": ["proof.json", "proof.txt"]})
    print(f"[liar] {step.id}: claimed pass, did nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
