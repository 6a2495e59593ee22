"""Hostile agent: takes what the host has. Each step (by its id) tries one thing, writes what came of it
to its folder, and claims pass whatever happened.

- memory: allocate 300 MB, then write out.txt "allocated"
- cpu: spin forever (the step's timeout is long; only a CPU limit ends it early)
- file: write a 5 MB file, big.bin
- raise: raise its own data-memory limit back to unlimited; out.txt says "raised" or "refused"
- fork: start up to 40 processes that sleep; forks.txt holds how many it got
"""

import json
import os
import resource
import sys
import time

folder = os.environ["REFEREE_AGENT_DIR"]
step = os.environ["REFEREE_STEP_ID"]
with open(os.environ["REFEREE_CLAIM_FILE"], "w") as fh:
    json.dump({"pass": True, "note": f"{step}: done, all good"}, fh)


def out(text: str, name: str = "out.txt") -> None:
    with open(os.path.join(folder, name), "w") as fh:
        fh.write(text)


if step == "memory":
    block = bytearray(300 << 20)
    out(f"allocated {len(block)}")
elif step == "cpu":
    while True:
        pass
elif step == "file":
    with open(os.path.join(folder, "big.bin"), "wb") as fh:
        for _ in range(5):
            fh.write(b"\0" * (1 << 20))
elif step == "raise":
    try:
        resource.setrlimit(resource.RLIMIT_DATA, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        out("raised")
    except (ValueError, OSError) as exc:
        out(f"refused: {exc}")
elif step == "fork":
    kids = []
    for _ in range(40):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
    out(str(len(kids)), "forks.txt")
else:
    sys.exit(f"hog: no such step {step}")
