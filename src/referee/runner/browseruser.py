"""The browser's own account: a root runner starts Chromium as `referee-browser`, never as root.

An agent drives the runner's Chromium over CDP. As root, Chromium would read any file for it (`file:///` the
signing key) and write any file (a download to a folder of its choosing), whatever the agent's isolation. As
an unprivileged account of its own, it reads what any user may read and writes only its own profile and what
any user may write. Playwright starts the browser through `browser_launcher()`'s small program, which hands the
profile folder Playwright made to that account, then drops to it and runs Chromium with the agents' launcher:
the CDP pipe Playwright talks over (file descriptors 3 and 4) passes through unchanged.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from referee.runner.agentproc import LAUNCHER
from referee.runner.isolation import ensure_agent_user, is_root

BROWSER_USER = "referee-browser"
CAPTURE_USER = "referee-capture"  # the runner's second Chromium, for captures: an account the agent's browser is not

# Runs as root: hands Playwright's fresh profile folder (root's, 0700) to the browser's account, which must write
# it, then execs the agents' launcher (agentproc.LAUNCHER), which drops to that account and runs Chromium.
# argv[1:5] are uid, gid, the Chromium binary and the launcher's source; the rest is Chromium's command line as
# Playwright made it.
_PREPARE = r'''
import os, sys
uid, gid, chromium, launcher = sys.argv[1:5]
args = sys.argv[5:]
profile = next((a.split("=", 1)[1] for a in args if a.startswith("--user-data-dir=")), None)
try:
    if profile:
        for folder, dirs, files in os.walk(profile):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.lchown(name, int(uid), int(gid))
        os.environ["HOME"] = profile
    os.environ.pop("XDG_RUNTIME_DIR", None)
    os.environ["REFEREE_LAUNCHED"] = "Chromium"
    os.execv(sys.executable, [sys.executable, "-I", "-S", "-c", launcher, "", "", uid, gid, chromium, *args])
except OSError as exc:
    sys.stderr.write("referee: cannot start Chromium: %s\n" % exc)
    os._exit(127)
'''


def browser_launcher(chromium: str, user: str = BROWSER_USER) -> str | None:
    """The program Playwright should start instead of `chromium` (root: one that runs it as `user`),
    or None to start `chromium` itself (the runner is not root, so Chromium has the runner's rights anyway).

    OSError when the account cannot be made.
    """
    if not is_root():
        return None
    uid, gid = ensure_agent_user(user)
    folder = Path(tempfile.mkdtemp(prefix="referee-browser-"))
    script = folder / "chromium"
    script.write_text(f"#!{sys.executable} -IS\n# referee: runs {chromium} as {user}\n"
                      f"import sys\nsys.argv[1:1] = [{str(uid)!r}, {str(gid)!r}, {chromium!r}, {LAUNCHER!r}]\n"
                      + _PREPARE)
    script.chmod(0o700)
    return str(script)


def remove_launcher(path: str | None) -> None:
    """Remove what `browser_launcher` wrote."""
    if path:
        try:
            os.unlink(path)
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
