"""A command agent that turns its own HOME into a trap, then waits to be cut off.

It fills ``$HOME`` with files, links to ``ACC_VICTIM`` (a root-only folder), starts a daemon
that keeps swapping ``$HOME/sub`` for a link to the victim, writes ``$PWD/home_path.txt`` and
sleeps: the test kills the runner with SIGKILL meanwhile, so the next run sweeps that home.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

here = Path(__file__).resolve().parent
home = os.environ["HOME"]
victim = os.environ["ACC_VICTIM"]
subprocess.run([sys.executable, str(here / "swapper.py"), home, victim, "90", "--daemon"], check=False)
deadline = time.monotonic() + 30  # the daemon has filled the home (its last link), and swaps from now on
while not Path(home, "sub2").is_symlink() and time.monotonic() < deadline:
    time.sleep(0.02)
Path("home_path.txt").write_text(home)
Path(os.environ["REFEREE_CLAIM_FILE"]).write_text(json.dumps({"pass": True, "note": "trap set"}))
time.sleep(60)
