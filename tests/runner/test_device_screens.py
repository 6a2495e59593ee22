"""Issue 34, screens from devices (referee.runner.captures.devices): the runner takes an Android device's, an iOS
simulator's and an X11 display's screen itself, as a PNG that the OCR validators and `referee lint --control` read
like a browser screenshot. `adb` and `xcrun` are fake programs first on PATH (a real PNG, garbage, an error, a
hang); the X11 display is a real Xvfb with a real window on it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from referee.plan.captures import capture_specs
from referee.runner.captures import CaptureContext, CaptureFailed, captures, load_builtin
from tests.runner.inprocess import referee, run_in_process
from tests.runner.runner_helpers import wait_dead, write_plan

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core, in the Makefile's APT_PKGS
APP_BLUE = (30, 111, 217)

# a device's program: logs each call, then serves the next screen of screens/ (the last one again once past it),
# or misbehaves as the `mode` file beside it says
FAKE = '''#!{python}
import json, os, sys, time
here = {here!r}
with open(os.path.join(here, "calls.jsonl"), "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "pid": os.getpid()}}) + "\\n")
with open(os.path.join(here, "calls.jsonl")) as fh:
    n = len(fh.readlines()) - 1
mode = open(os.path.join(here, "mode")).read().strip()
screens = sorted(os.listdir(os.path.join(here, "screens")))
png = open(os.path.join(here, "screens", screens[min(n, len(screens) - 1)]), "rb").read()
if mode == "fail":
    sys.stderr.write("* daemon started successfully\\nerror: no devices/emulators found\\n")
    sys.exit(1)
if mode == "hang":
    time.sleep(60)
if mode == "garbage":
    png = b"\\x00\\x01 not a screen \\xff" * 10
if mode == "truncated":
    png = png[: len(png) // 2]
if mode == "nofile":
    sys.exit(0)
if {to_file}:
    open(sys.argv[-1], "wb").write(png)
else:
    sys.stdout.buffer.write(png)
'''


def screen(path: Path, *lines: str, size=(540, 960), bg="white") -> Path:
    """A phone-sized PNG showing `lines` in large type (what a home screen or an app screen shows)."""
    img = Image.new("RGB", size, bg)
    draw, font = ImageDraw.Draw(img), ImageFont.truetype(FONT, 40)
    for i, line in enumerate(lines):
        draw.text((40, 80 + 90 * i), line, fill="black", font=font)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path, "PNG")
    return path


class Device:
    """A fake `adb` or `xcrun` in its own folder (put first on PATH), its screens, mode and calls."""

    def __init__(self, base: Path, program: str, *screens: Path) -> None:
        self.dir = base / f"fake-{program}"
        (self.dir / "screens").mkdir(parents=True)
        for i, s in enumerate(screens):
            shutil.copy(s, self.dir / "screens" / f"{i:02d}.png")
        self.mode = "png"
        tool = self.dir / program
        tool.write_text(FAKE.format(python=sys.executable, here=str(self.dir), to_file=program == "xcrun"))
        tool.chmod(0o755)
        self.path = f"{self.dir}{os.pathsep}{os.environ['PATH']}"

    @property
    def mode(self) -> str:
        return (self.dir / "mode").read_text()

    @mode.setter
    def mode(self, value: str) -> None:
        (self.dir / "mode").write_text(value)

    def calls(self) -> list[dict]:
        log = self.dir / "calls.jsonl"
        return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []


def take(kind: str, params: dict, out: Path, env: dict[str, str]) -> list[Path]:
    """One capture with the runner's code, typed by the plan's spec, as the runner does."""
    load_builtin()
    typed = capture_specs.get(kind).Params.model_validate({"kind": kind, **params})
    return captures.get(kind).take(typed, CaptureContext("s", "after", out, env=env))


@pytest.fixture
def home_png(tmp_path):
    return screen(tmp_path / "art" / "home.png", "Recipes    Camera", "Settings    Clock")


@pytest.fixture
def app_png(tmp_path):
    return screen(tmp_path / "art" / "app.png", "Recipes", "Pancakes 20 min", "Omelette 10 min")


# --- the capture itself ------------------------------------------------------------------------------------------


def test_an_android_screen_is_adb_screencap_output_kept_as_name_png_byte_for_byte(tmp_path, app_png):
    adb = Device(tmp_path, "adb", app_png)
    files = take("android_screen", {"name": "shot", "serial": "emulator-5554"}, tmp_path,
                 {"PATH": adb.path, "HOME": str(tmp_path)})
    assert files == [tmp_path / "shot.png"]
    assert files[0].read_bytes() == app_png.read_bytes()
    assert adb.calls()[0]["argv"] == ["-s", "emulator-5554", "exec-out", "screencap", "-p"]


def test_an_android_screen_without_a_serial_lets_adb_choose_and_its_name_defaults_to_the_kind(tmp_path, app_png):
    adb = Device(tmp_path, "adb", app_png)
    files = take("android_screen", {"display_id": 2}, tmp_path, {"PATH": adb.path})
    assert files == [tmp_path / "android_screen.png"]
    assert adb.calls()[0]["argv"] == ["exec-out", "screencap", "-p", "-d", "2"]


@pytest.mark.parametrize("mode, reason", [
    ("fail", "`adb exec-out screencap -p` exited 1: * daemon started successfully / "
             "error: no devices/emulators found"),
    ("garbage", "`adb exec-out screencap -p` gave no usable screenshot: not a PNG (170 bytes: "),
    ("truncated", "`adb exec-out screencap -p` gave no usable screenshot: a truncated PNG ("),
])
def test_an_adb_that_fails_or_prints_no_png_is_a_failed_capture_with_a_one_line_reason(tmp_path, app_png, mode,
                                                                                        reason):
    adb = Device(tmp_path, "adb", app_png)
    adb.mode = mode
    with pytest.raises(CaptureFailed) as exc:
        take("android_screen", {"name": "shot"}, tmp_path / "out", {"PATH": adb.path})
    assert exc.value.why.startswith(reason), exc.value.why
    assert "\n" not in exc.value.why and not (tmp_path / "out" / "shot.png").exists()


def test_an_adb_that_hangs_is_killed_at_timeout_s_and_the_capture_fails(tmp_path, app_png):
    adb = Device(tmp_path, "adb", app_png)
    adb.mode = "hang"
    with pytest.raises(CaptureFailed) as exc:
        take("android_screen", {"name": "shot", "timeout_s": 0.5}, tmp_path, {"PATH": adb.path})
    assert exc.value.why == "`adb exec-out screencap -p` did not finish within timeout_s (0.5s); killed"
    assert wait_dead(adb.calls()[0]["pid"], timeout=5)


def test_a_missing_adb_names_the_package_and_a_relative_path_entry_is_never_searched(tmp_path, app_png):
    adb = Device(tmp_path, "adb", app_png)
    relative = os.path.relpath(adb.dir)  # the working folder's `adb` (where an agent writes) is never run
    with pytest.raises(CaptureFailed) as exc:
        take("android_screen", {"name": "shot"}, tmp_path, {"PATH": f"{relative}{os.pathsep}/nonexistent"})
    assert exc.value.why == ("android_screen runs `adb`, which is not installed here (not on PATH); install "
                             "Android's platform-tools (Debian: apt-get install adb) or set ANDROID_HOME to an "
                             "Android SDK that has them")
    assert adb.calls() == []


def test_an_adb_that_cannot_start_is_a_failed_capture_not_a_crash(tmp_path):
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "adb").write_text("#!/nonexistent/interpreter\n")
    (tools / "adb").chmod(0o755)
    with pytest.raises(CaptureFailed) as exc:
        take("android_screen", {}, tmp_path, {"PATH": str(tools)})
    assert exc.value.why == "`adb exec-out screencap -p` could not start: No such file or directory"


def test_adb_is_found_in_the_platform_tools_of_android_home(tmp_path, app_png):
    sdk = tmp_path / "sdk"
    adb = Device(tmp_path, "adb", app_png)
    (sdk / "platform-tools").mkdir(parents=True)
    (sdk / "platform-tools" / "adb").symlink_to(adb.dir / "adb")
    files = take("android_screen", {"name": "shot"}, tmp_path, {"PATH": "/nonexistent", "ANDROID_HOME": str(sdk)})
    assert files[0].read_bytes() == app_png.read_bytes()


def test_an_ios_screen_is_simctl_screenshot_into_a_file_of_the_runners(tmp_path, app_png):
    xcrun = Device(tmp_path, "xcrun", app_png)
    files = take("ios_screen", {"name": "shot", "device": "A1B2-C3"}, tmp_path, {"PATH": xcrun.path})
    assert files[0].read_bytes() == app_png.read_bytes()
    argv = xcrun.calls()[0]["argv"]
    assert argv[:-1] == ["simctl", "io", "A1B2-C3", "screenshot", "--type=png"]
    assert not Path(argv[-1]).parent.exists()  # its private folder is gone with what it held


def test_an_ios_simctl_that_fails_or_writes_nothing_is_a_failed_capture(tmp_path, app_png):
    xcrun = Device(tmp_path, "xcrun", app_png)
    xcrun.mode = "nofile"
    with pytest.raises(CaptureFailed) as exc:
        take("ios_screen", {}, tmp_path, {"PATH": xcrun.path})
    assert exc.value.why.startswith("`xcrun simctl io booted screenshot --type=png ")
    assert exc.value.why.endswith(" gave no usable screenshot: no output")
    xcrun.mode = "fail"
    with pytest.raises(CaptureFailed) as exc:
        take("ios_screen", {}, tmp_path, {"PATH": xcrun.path})
    assert " exited 1: " in exc.value.why and exc.value.detail["exit_code"] == 1


def test_a_serial_or_device_the_program_would_read_as_an_option_is_a_plan_error(tmp_path):
    plan = write_plan(tmp_path / "p.yaml", {"steps": [{"id": "a", "do": "x", "capture": [
        {"kind": "android_screen", "serial": "-H evil"}, {"kind": "ios_screen", "device": "--help"}]}]})
    code, out, err = referee(tmp_path, "check", plan)
    assert code == 2
    assert "serial '-H evil' is empty or holds spaces" in out + err
    assert "device '--help' starts with '-': the program would read it as an option" in out + err


# --- in a run: check, OCR, require_change, lint --control ----------------------------------------------------------

CLAIM = "import json, os; json.dump({'pass': True}, open(os.environ['REFEREE_CLAIM_FILE'], 'w'))"
AGENT = f"{shlex.quote(sys.executable)} -c {shlex.quote(CLAIM)}"  # claims pass, does nothing: the screens decide


def _plan(home: Path, validators: list[dict], capture: dict | None = None) -> Path:
    return write_plan(home / "droid.yaml", {
        "name": "droid", "actor": {"kind": "command", "command": AGENT},
        "steps": [{"id": "open_recipes", "do": "Open the Recipes app.",
                   "capture": [capture or {"kind": "android_screen", "name": "screen"}],
                   "validators": validators}]})


def _needs_tesseract():
    if shutil.which("tesseract") is None:
        pytest.skip("!!! tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng) !!!")


def test_referee_check_and_run_stop_before_anything_starts_when_adb_is_missing(tmp_path):
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "evidence": ["screen"], "text": "Pancakes"}])
    env = {"PATH": f"/nonexistent{os.pathsep}{os.environ['PATH']}", "ANDROID_HOME": ""}
    if shutil.which("adb"):
        pytest.skip("a real adb is installed here: the missing-program check cannot be shown")
    code, out, err = referee(tmp_path, "check", plan, env=env)
    assert code == 2
    assert "droid.yaml:9:5: " in out + err and "android_screen runs `adb`, which is not installed here" in out + err
    assert "apt-get install adb" in out + err
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env=env)
    assert ran.code == 2 and ran.run_dir is None, ran.err


def test_a_run_with_an_android_screen_and_ocr_contains_passes_and_fails_on_what_the_device_shows(tmp_path, app_png):
    _needs_tesseract()
    adb = Device(tmp_path, "adb", app_png)
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "evidence": ["screen"], "text": "Pancakes"},
                            {"kind": "ocr_contains", "evidence": ["screen"], "text": "Waffles"}])
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"PATH": adb.path})
    assert ran.code == 1, ran.err
    step = ran.step("open_recipes")
    assert step["verdict"] == "FAIL"
    held, failed = step["validators"]
    assert held["status"] == "PASS" and "'Pancakes' read in screen" in held["reason"]
    assert failed["status"] == "FAIL" and failed["reason"].startswith("'Waffles' not read in screen (tesseract read: ")
    assert "Pancakes 20 min" in failed["reason"]  # what the device showed, quoted
    shot = ran.run_dir / "evidence" / "open_recipes" / "after" / "screen.png"
    assert shot.read_bytes() == app_png.read_bytes()
    entry = next(f for f in json.loads((ran.run_dir / "manifest.json").read_text())["files"]
                 if f["path"].endswith("screen.png"))
    assert (entry["captured_by"], entry["kind"], entry["capture"]) == ("runner", "android_screen", "screen")
    # graded again later with the device gone: the same verdicts, from the sealed PNG
    code, out, err = referee(tmp_path, "grade", ran.run_dir, "--json", env={"PATH": "/nonexistent"})
    assert code == 1 and json.loads(out)["runs"][0]["steps"][0]["verdict"] == "FAIL", err


def test_a_device_that_returns_garbage_makes_the_step_error_not_fail_with_the_programs_reason(tmp_path, app_png):
    adb = Device(tmp_path, "adb", app_png)
    adb.mode = "fail"
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "evidence": ["screen"], "text": "Pancakes"}])
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"PATH": adb.path})
    step = ran.step("open_recipes")
    assert step["verdict"] == "ERROR", step
    assert "`adb exec-out screencap -p` exited 1: " in json.dumps(step)
    assert "error: no devices/emulators found" in json.dumps(step)


def test_require_change_on_an_android_screen_fails_a_label_the_home_screen_already_shows(tmp_path, home_png,
                                                                                          app_png):
    """The blog post's lesson: a quarter of its apps "passed" on the home screen's icon label. Taken before the
    step too, the device's home screen shows "Recipes" already, so that check cannot prove the step did it."""
    _needs_tesseract()
    adb = Device(tmp_path, "adb", home_png, app_png)  # before the step: the home screen; after: the app
    checks = [{"kind": "ocr_contains", "evidence": ["screen"], "text": t, "require_change": True}
              for t in ("Recipes", "Pancakes")]
    plan = _plan(tmp_path, checks)
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"PATH": adb.path})
    loose, specific = ran.step("open_recipes")["validators"]
    assert loose["status"] == "FAIL" and loose["reason"].startswith("already true before the step"), loose
    assert specific["status"] == "PASS", specific
    assert len(adb.calls()) == 2  # once before the step, once after


def test_lint_control_flags_a_validator_that_holds_on_a_captured_home_screen(tmp_path, home_png, app_png):
    _needs_tesseract()
    adb = Device(tmp_path, "adb", home_png)
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "evidence": ["screen"], "text": "Recipes", "name": "loose"},
                            {"kind": "ocr_contains", "evidence": ["screen"], "text": "Pancakes", "name": "specific"}])
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"PATH": adb.path})
    home = ran.run_dir / "evidence" / "open_recipes" / "after" / "screen.png"  # the runner's own capture
    assert ran.step("open_recipes")["verdict"] == "FAIL"
    code, out, err = referee(tmp_path, "lint", plan, "--control", home)
    assert code == 1, out + err
    assert f"TOO LOOSE open_recipes / loose on {home}: matched 'recipes camera'" in out
    assert "ok        open_recipes / specific on" in out and "'Pancakes' not read in screen" in out


# --- a real X11 display ------------------------------------------------------------------------------------------

WINDOW = """import sys, tkinter as tk
root = tk.Tk()
root.overrideredirect(True)
root.geometry("640x480+0+0")
root.configure(bg="white")
tk.Frame(root, bg="#1e6fd9", width=640, height=80).place(x=0, y=0)
tk.Label(root, text="Recipes", font=("DejaVu Sans", 28), bg="white", fg="black").place(x=40, y=120)
tk.Label(root, text="Pancakes 20 min", font=("DejaVu Sans", 20), bg="white", fg="black").place(x=40, y=200)
root.update()
print("ready", flush=True)
root.mainloop()
"""


@pytest.fixture
def x_display(tmp_path):
    """A real Xvfb on a free display number (it picks one: -displayfd), 640x480, showing a window: white, a blue
    bar along its top, "Recipes" and "Pancakes 20 min" in black. Yields the display name (":N")."""
    if shutil.which("Xvfb") is None:
        pytest.skip("!!! Xvfb is not installed (apt-get install xvfb; `make sysdeps` installs it) !!!")
    try:
        import tkinter  # noqa: F401
    except ImportError:
        pytest.skip("!!! tkinter is not installed (apt-get install python3-tk): nothing to draw on the display !!!")
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                            pass_fds=[write], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    os.close(write)
    window = None
    try:
        with os.fdopen(read) as fh:
            display = ":" + fh.readline().strip()
        assert display != ":", "Xvfb gave no display number"
        window = subprocess.Popen([sys.executable, "-c", WINDOW], env={**os.environ, "DISPLAY": display},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert window.stdout.readline().strip() == "ready", window.stderr.read()
        time.sleep(0.2)  # the X server has drawn what the window asked for
        yield display
    finally:
        for proc in (window, xvfb):
            if proc is not None:
                proc.kill()
                proc.wait(10)


def test_an_x11_screen_is_the_displays_root_window_as_a_png(tmp_path, x_display):
    files = take("x11_screen", {"name": "desk", "display": x_display}, tmp_path, dict(os.environ))
    img = Image.open(files[0])
    assert (img.format, img.size) == ("PNG", (640, 480))
    assert img.convert("RGB").getpixel((600, 40)) == APP_BLUE  # the window's bar
    assert img.convert("RGB").getpixel((600, 400)) == (255, 255, 255)  # and its background


def test_a_run_reads_an_x11_screen_from_DISPLAY_with_ocr(tmp_path, x_display):
    _needs_tesseract()
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "evidence": ["x11_screen"], "text": "Pancakes 20 min"},
                            {"kind": "ocr_not_contains", "evidence": ["x11_screen"], "text": "Traceback"}],
                 capture={"kind": "x11_screen"})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", env={"DISPLAY": x_display})
    assert ran.code == 0, ran.err
    assert ran.step("open_recipes")["verdict"] == "PASS"
    shot = ran.run_dir / "evidence" / "open_recipes" / "after" / "x11_screen.png"
    assert Image.open(shot).convert("RGB").getpixel((600, 40)) == APP_BLUE


def test_an_x11_screen_of_a_display_that_is_not_there_fails_with_the_x_error(tmp_path, x_display):
    with pytest.raises(CaptureFailed) as exc:
        take("x11_screen", {"display": ":65000"}, tmp_path, dict(os.environ))
    assert exc.value.why == ("the X11 grab (Pillow's ImageGrab) of display :65000 exited 1: "
                             "OSError: X connection failed: error 1")
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    with pytest.raises(CaptureFailed) as exc:
        take("x11_screen", {}, tmp_path, env)
    assert exc.value.why.startswith("x11_screen has no display: DISPLAY is not set")


def test_referee_check_says_an_x11_screen_without_a_display_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "evidence": ["x11_screen"], "text": "Recipes"}],
                 capture={"kind": "x11_screen"})
    code, out, err = referee(tmp_path, "check", plan)
    assert code == 2 and "x11_screen has no display: DISPLAY is not set" in out + err
