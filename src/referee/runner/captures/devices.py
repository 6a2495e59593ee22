"""Screens the runner takes from devices itself: an Android device (adb), an iOS simulator (simctl), an X11 display.

Each writes `<name>.png`, named and listed like a browser screenshot, so the OCR and image validators, the report
and `referee lint --control` read it the same way. The device's program runs as an argv (never through a shell),
found in the absolute folders of the runner's PATH, in a private empty folder, killed with its process group past
`timeout_s`. What it gives is checked before it is kept: a PNG (signature, chunks and their CRCs, a sane size) that
decodes; anything else (an error text, garbage, a truncated file, nothing) is a failed capture whose one-line reason
names the program, its exit code and the end of its stderr.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Callable

from referee.core.fsutil import atomic_write_bytes, read_regular
from referee.errors import EvidenceError, MissingExtraError
from referee.plan.captures import X_DISPLAY, DeviceScreenParams
from referee.runner.captures.base import CaptureContext, CaptureFailed, CaptureKind, register, searchable
from referee.runner.procs import run_bounded

MAX_PNG = 64 << 20  # a phone's screen is a few MB; past this the output is no screenshot
MAX_PIXELS = 2 * 89_478_485  # what the grader's decoder (Pillow) refuses as a decompression bomb
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TAIL_CHARS = 240  # of the program's stderr, in a failure's reason

# the X11 grab runs in a child python (a hung X server is killed with it); one line on stderr when it fails
_X11_GRAB = """import io, sys
try:
    from PIL import ImageGrab
    img = ImageGrab.grab(xdisplay=sys.argv[1])
except Exception as exc:
    sys.exit(f"{type(exc).__name__}: {exc}")
buf = io.BytesIO()
img.save(buf, "PNG")
sys.stdout.buffer.write(buf.getvalue())
"""


def png_problem(data: bytes) -> str | None:
    """Why `data` is not a PNG screenshot a validator can read, or None when it is one.

    >>> png_problem(b"error: no devices/emulators found\\n")
    "not a PNG (34 bytes: 'error: no devices/emulators found')"
    >>> png_problem(PNG_SIGNATURE + b"\\0\\0")
    'a truncated PNG (10 bytes, cut inside a chunk)'
    """
    if not data:
        return "no output"
    if not data.startswith(PNG_SIGNATURE):
        return f"not a PNG ({len(data)} bytes: {_show(data[:80])!r})"
    pos, size, ended = len(PNG_SIGNATURE), None, False
    while not ended:
        if pos + 12 > len(data):
            return f"a truncated PNG ({len(data)} bytes, cut inside a chunk)"
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        end = pos + 12 + length
        if end > len(data):
            return f"a truncated PNG ({len(data)} bytes, its {_show(ctype)} chunk cut off)"
        if zlib.crc32(data[pos + 4:pos + 8 + length]) != int.from_bytes(data[end - 4:end], "big"):
            return f"a damaged PNG (the CRC of its {_show(ctype)} chunk does not match)"
        if size is None:
            if ctype != b"IHDR" or length < 8:
                return "a damaged PNG (no IHDR chunk first)"
            size = struct.unpack(">II", data[pos + 8:pos + 16])
        ended, pos = ctype == b"IEND", end
    width, height = size or (0, 0)
    if width < 1 or height < 1:
        return f"an empty PNG ({width}x{height} pixels)"
    if width * height > MAX_PIXELS:
        return f"a PNG of {width}x{height} pixels, more than the grader decodes (a decompression bomb)"
    return _undecodable(data)


def _undecodable(data: bytes) -> str | None:
    """Why the grader's decoder cannot read the image (its pixel data), or None; None too without Pillow."""
    from referee.ocr.base import decode_image

    try:
        decode_image(data, "screen")
    except MissingExtraError:
        return None  # the structure was checked; a validator that reads it says Pillow is missing
    except EvidenceError as exc:
        return exc.message.split("evidence 'screen' is ", 1)[-1]
    return None


def _show(data: bytes) -> str:
    return searchable(data)[0].replace("\r", " ").replace("\n", " ").strip()


def _tail(stderr: bytes, scrub: Callable[[str], str]) -> str:
    """The end of a program's stderr on one line: its last lines, scrubbed, at most TAIL_CHARS.

    >>> _tail(b"* daemon started\\nerror: device offline\\n", str)
    '* daemon started / error: device offline'
    """
    lines = [ln.strip() for ln in searchable(stderr[-4 * TAIL_CHARS:], cut=True)[0].splitlines() if ln.strip()]
    text = scrub(" / ".join(lines))
    return text if len(text) <= TAIL_CHARS else "…" + text[-(TAIL_CHARS - 1):]


class DeviceScreen(CaptureKind):
    """A screen taken with a device's program: `argv` says how, `describe` names it in reasons."""

    def argv(self, params, value: Callable[[str], str], out: Path, env: dict[str, str]) -> list[str]:
        """The program's arguments (after the program); `value` maps a plan value (expanded, or as shown)."""
        raise NotImplementedError

    def describe(self, program: str, args: list[str]) -> str:
        """The program as a failure's reason names it (`args` as shown: secret values as `${NAME}`)."""
        return "`" + " ".join([Path(program).name, *args]) + "`"

    def program(self, params: DeviceScreenParams, env: dict[str, str]) -> str:
        found = params.find_program(env)
        if found is None:
            raise CaptureFailed(f"{params.missing()}; {params.install}")
        return found

    def result(self, params, ran, out: Path) -> bytes:
        """The PNG's bytes from what the program did (its stdout by default)."""
        return ran.stdout

    def take(self, params, ctx: CaptureContext) -> list[Path]:
        env = dict(ctx.env or os.environ)
        program = self.program(params, env)
        work = Path(tempfile.mkdtemp(prefix="referee-screen-"))  # the runner's own, empty: its cwd and output
        out = work / "screen.png"
        what = self.describe(program, self.argv(params, ctx.shown, out, env))
        try:
            try:
                ran = run_bounded([program, *self.argv(params, ctx.expand, out, env)], timeout_s=params.timeout_s,
                                  keep=MAX_PNG + 1, cwd=work, env=env, stdout_head=True)
            except OSError as exc:  # not executable, a script without its interpreter
                raise CaptureFailed(f"{what} could not start: {exc.strerror or exc}", {"program": program}) from None
            tail = _tail(ran.stderr, ctx.scrub)
            detail = {"program": program, "exit_code": ran.exit_code, "stderr_tail": tail}
            stderr = f"; stderr: {tail}" if tail else ""
            if ran.timed_out:
                raise CaptureFailed(f"{what} did not finish within timeout_s ({params.timeout_s:g}s); killed"
                                    + stderr, detail)
            if ran.exit_code != 0:
                raise CaptureFailed(f"{what} exited {ran.exit_code}" + (f": {tail}" if tail else ""), detail)
            if ran.stdout_bytes > MAX_PNG:
                raise CaptureFailed(f"{what} wrote more than {MAX_PNG >> 20} MiB: no screenshot", detail)
            data = self.result(params, ran, out)
            problem = png_problem(data)
            if problem is not None:
                raise CaptureFailed(f"{what} gave no usable screenshot: {problem}{stderr}", detail)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        path = ctx.out_dir / f"{params.name}.png"
        atomic_write_bytes(path, data)
        return [path]


@register("android_screen")
class AndroidScreen(DeviceScreen):
    def argv(self, params, value, out, env):
        serial = ["-s", value(params.serial)] if params.serial else []
        display = ["-d", str(params.display_id)] if params.display_id is not None else []
        return [*serial, "exec-out", "screencap", "-p", *display]


@register("ios_screen")
class IosScreen(DeviceScreen):
    def argv(self, params, value, out, env):
        return ["simctl", "io", value(params.device), "screenshot", "--type=png", str(out)]

    def result(self, params, ran, out):
        try:
            return read_regular(out, max_bytes=MAX_PNG, root=out.parent)
        except FileNotFoundError:
            return b""  # "no output": it exited 0 and wrote no file
        except (OSError, EvidenceError) as exc:
            why = exc.message if isinstance(exc, EvidenceError) else str(exc)
            raise CaptureFailed(f"xcrun simctl wrote no readable screenshot: {why}") from None


@register("x11_screen")
class X11Screen(DeviceScreen):
    """The root window of an X display, read by Pillow's X11 grab in a child python (`-I`: nothing of the working
    folder or PYTHONPATH is imported): no program to install beyond the `ocr` extra."""

    def program(self, params, env):
        if importlib.util.find_spec("PIL") is None:
            raise CaptureFailed("x11_screen reads the display with Pillow, which is not installed here; "
                                "install with: pip install 'referee[ocr]'")
        return sys.executable

    def argv(self, params, value, out, env):
        return ["-I", "-c", _X11_GRAB, value(params.display) if params.display else env.get("DISPLAY", "")]

    def describe(self, program, args):
        return f"the X11 grab (Pillow's ImageGrab) of display {args[-1]}"

    def take(self, params, ctx):
        display = ctx.expand(params.display) if params.display else (ctx.env or os.environ).get("DISPLAY", "")
        if not display:
            why, fix = params.unmet({})[0]
            raise CaptureFailed(f"{why}; {fix}")
        if not X_DISPLAY.fullmatch(display):
            raise CaptureFailed(f"x11_screen: display {ctx.scrub(display)!r} is not an X display name such as ':0'")
        return super().take(params, ctx)
