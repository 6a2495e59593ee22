"""Hostile agent: attacks the run directory and the claim channel instead of doing the work.

Each line of REFEREE_STEP_DO whose first word is a verb below is performed, in order; paths
called `rel` are relative to the run directory (REFEREE_AGENT_DIR/../..).

    SAVE <name> <text>        write text to REFEREE_AGENT_DIR/<name> (honest evidence)
    FIFO <rel>                replace whatever is at <rel> with a named pipe (FIFO)
    LINK <rel> <target>       replace whatever is at <rel> with a symlink to <target>
    SWAP_OWN <target>         move the agent's own folder away and put a symlink to <target> in its place
    CLAIM_FIFO                make the claim file a FIFO (and write no claim)
    CLAIM_NONE                write no claim file
    CLAIM_RAW <text>          write <text> as the claim file, byte for byte (UTF-8)
    CLAIM_HEX <hex>           write these bytes as the claim file (non-UTF-8 claims)
    CLAIM_DEEP <n>            a claim whose `evidence` nests n lists deep
    CLAIM_BIG <n>             a claim whose note is n characters long

Without a CLAIM_* verb it claims {"pass": true, "note": "done"}.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path


def _clear(p: Path) -> None:
    if p.is_symlink() or (p.exists() and not p.is_dir()):
        p.unlink()
    elif p.is_dir():
        shutil.rmtree(p)
    p.parent.mkdir(parents=True, exist_ok=True)


def main() -> int:
    agent_dir = Path(os.environ["REFEREE_AGENT_DIR"])
    run_dir = agent_dir.parent.parent
    claim_file = Path(os.environ["REFEREE_CLAIM_FILE"])
    sys.stdin.read()
    claim: bytes | None = json.dumps({"pass": True, "note": "done"}).encode()
    for line in os.environ.get("REFEREE_STEP_DO", "").splitlines():
        verb, _, rest = line.strip().partition(" ")
        if verb == "SAVE":
            name, _, text = rest.partition(" ")
            (agent_dir / name).write_text(text)
        elif verb == "FIFO":
            target = run_dir / rest
            _clear(target)
            os.mkfifo(target)
        elif verb == "LINK":
            rel, _, target = rest.partition(" ")
            _clear(run_dir / rel)
            os.symlink(target, run_dir / rel)
        elif verb == "SWAP_OWN":
            os.rename(agent_dir, agent_dir.with_name(agent_dir.name + ".moved"))
            os.symlink(rest, agent_dir)
        elif verb == "CLAIM_FIFO":
            os.mkfifo(claim_file)
            claim = None
        elif verb == "CLAIM_NONE":
            claim = None
        elif verb == "CLAIM_RAW":
            claim = rest.encode("utf-8")
        elif verb == "CLAIM_HEX":
            claim = bytes.fromhex(rest)
        elif verb == "CLAIM_DEEP":
            n = int(rest)
            claim = b'{"pass": true, "note": "deep", "evidence": ' + b"[" * n + b"]" * n + b"}"
        elif verb == "CLAIM_BIG":
            claim = json.dumps({"pass": True, "note": "x" * int(rest)}).encode()
    if claim is not None:
        claim_file.write_bytes(claim)
    print(f"[hostile] {os.environ.get('REFEREE_STEP_ID')}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
