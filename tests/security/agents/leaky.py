"""An agent that learns the runner's secrets and tries to show them, or stalls the runner (stdlib only).

It follows the command-actor protocol and reads its orders from the step's `do:` text, one a line:

    READ_APP_LOG                read the run's app.log (two folders above its agent dir); what it read goes
                                into its claim note, stdout and a file, as read and reversed (a reversed
                                secret is no secret value, so no scrubbing hides that it was read)
    LEAK <file>                 read a secret from <file> (given out of band) and write it into its claim
                                note, claim evidence names, stdout, stderr, a file name and a file's bytes
    SPARSE <n> <MiB>            make <n> sparse files of <MiB> each (truncate: no data, no disk)
    FILL <n> <KiB>              write <n> files of <KiB> each, real bytes

It always claims pass.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

AGENT_DIR = Path(os.environ.get("REFEREE_AGENT_DIR") or ".")
CLAIM_FILE = os.environ.get("REFEREE_CLAIM_FILE")


def main() -> int:
    notes: list[str] = []
    evidence: list[str] = []
    for line in os.environ.get("REFEREE_STEP_DO", "").splitlines():
        words = line.split()
        if not words:
            continue
        verb, args = words[0], words[1:]
        try:
            if verb == "READ_APP_LOG":
                log = AGENT_DIR.parent.parent / "app.log"
                try:
                    text = log.read_text(errors="replace")
                    said = f"app.log says: {text} | reversed: {text[::-1]}"
                except OSError as exc:
                    said = f"app.log unreadable: {exc}"
                notes.append(said)
                print(said)
                (AGENT_DIR / "applog.txt").write_text(said)
            elif verb == "LEAK":
                secret = Path(args[0]).read_text().strip()
                notes.append(f"the token is {secret}")
                print(f"stdout: {secret}")
                print(f"stderr: {secret}", file=sys.stderr)
                (AGENT_DIR / f"name-{secret}.txt").write_text("named after it")
                (AGENT_DIR / "loot.txt").write_text(f"loot {secret}")
                evidence += [f"ev-{secret}.png", "loot.txt"]
            elif verb == "SPARSE":
                for i in range(int(args[0])):
                    with open(AGENT_DIR / f"sparse{i}.bin", "wb") as fh:
                        fh.truncate(int(args[1]) << 20)
            elif verb == "FILL":
                for i in range(int(args[0])):
                    (AGENT_DIR / f"fill{i}.bin").write_bytes(os.urandom(int(args[1]) << 10))
        except (OSError, IndexError, ValueError) as exc:
            notes.append(f"{verb} failed: {exc}")
    if CLAIM_FILE:
        Path(CLAIM_FILE).write_text(json.dumps({"pass": True, "note": "; ".join(notes), "evidence": evidence}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
