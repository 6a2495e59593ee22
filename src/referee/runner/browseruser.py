"""The browser's own account: a root runner starts Chromium as `referee-browser`, never as root.

An agent drives the runner's Chromium over CDP. As root, Chromium would read any file for it (`file:///` the
signing key) and write any file (a download to a folder of its choosing), whatever the agent's isolation. As
an unprivileged account of its own, it reads what any user may read and writes only its own profile and what
any user may write. Playwright starts the browser through `launcher()`, a small program that takes the profile
folder Playwright made, hands it to that account, drops to it and runs Chromium: the CDP pipe Playwright talks
over (file descriptors 3 and 4) passes through unchanged.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from referee.runner.isolation import ensure_agent_user, is_root

BROWSER_USER = "referee-browser"

# Runs as root, becomes the browser's account, runs Chromium: argv[1:4] are uid, gid and the Chromium binary,
# the rest is Chromium's command line as Playwright made it.
_LAUNCHER = r'''
import os, sys
uid, gid, chromium = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
args = sys.argv[4:]
profile = next((a.split("=", 1)[1] for a in args if a.startswith("--user-data-dir=")), None)
try:
    if profile:  # Playwright's fresh profile folder (root's, 0700): the browser must write it
        for folder, dirs, files in os.walk(profile):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                os.lchown(name, uid, gid)
        os.environ["HOME"] = profile
    os.environ.pop("XDG_RUNTIME_DIR", None)
    import ctypes  # before the drop: as the browser's account an interpreter under /root cannot import it
    if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:  # no_new_privs
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    os.execv(chromium, [chromium, *args])
except (OSError, ImportError) as exc:
    sys.stderr.write("referee: cannot start Chromium as uid %d: %s\n" % (uid, exc))
    os._exit(127)
'''


def browser_launcher(chromium: str) -> str | None:
    """The program Playwright should start instead of `chromium` (root: one that runs it as `referee-browser`),
    or None to start `chromium` itself (the runner is not root, so Chromium has the runner's rights anyway).

    OSError when the account cannot be made.
    """
    if not is_root():
        return None
    uid, gid = ensure_agent_user(BROWSER_USER)
    folder = Path(tempfile.mkdtemp(prefix="referee-browser-"))
    script = folder / "chromium"
    script.write_text(f"#!{sys.executable} -IS\n# referee: runs {chromium} as {BROWSER_USER}\n"
                      f"import sys\nsys.argv[1:1] = [{str(uid)!r}, {str(gid)!r}, {chromium!r}]\n" + _LAUNCHER)
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
