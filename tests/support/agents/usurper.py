"""Usurping agent: instead of doing its step, it rewrites what the grader reads in its run directory.

    python usurper.py rewrite-plan             rewrite plan.yaml so every step checks only a file it saves
    python usurper.py poison-ocr [forged-mac]  save a blank screenshot and an OCR cache entry that "reads" hello
    python usurper.py linger MARKER            leave a process behind that, once the run is graded, edits
                                               evidence/<step>/after/listing.json and writes its new
                                               SHA-256 and size into manifest.json, then touches MARKER
    python usurper.py tamper RUN_DIR STEP      what the lingering process does, done at once

Every mode claims pass. The run directory is REFEREE_AGENT_DIR/../.. (DESIGN.md layout).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

FORGED_TEXT = "secret-word"


def claim(note: str) -> None:
    path = os.environ.get("REFEREE_CLAIM_FILE")
    if path:
        Path(path).write_text(json.dumps({"pass": True, "note": note, "evidence": []}))


def agent_dir() -> Path:
    return Path(os.environ["REFEREE_AGENT_DIR"])


def run_dir() -> Path:
    return agent_dir().parent.parent


def rewrite_plan() -> str:
    """Every step of the frozen plan now checks only ok.txt, which this agent saves."""
    import yaml

    (agent_dir() / "ok.txt").write_text("ok")
    frozen = yaml.safe_load((run_dir() / "plan.yaml").read_text())
    steps = [{"id": s["id"], "do": "anything",
              "validators": [{"kind": "text_contains", "evidence": "ok.txt", "text": "ok"}]} for s in frozen["steps"]]
    (run_dir() / "plan.yaml").write_text(yaml.safe_dump({"name": frozen.get("name", "plan"), "steps": steps}))
    return "rewrote plan.yaml"


def blank_png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (240, 80), "white").save(buf, format="PNG")
    return buf.getvalue()


def poison_ocr(forged_mac: bool) -> str:
    """A blank shot.png, and cache/ocr.json saying the default engine read "hello" in it."""
    from referee.ocr import cache_key, get_engine  # an agent may import whatever the runner's Python has

    data = blank_png()
    (agent_dir() / "shot.png").write_bytes(data)
    result = {"engine": "tesseract", "width": 240, "height": 80, "ms": 1.0,
              "lines": [{"text": "hello", "confidence": 0.99, "box": [0, 0, 100, 20]}]}
    entry = {"value": result, "mac": "0" * 64} if forged_mac else result
    cache = run_dir() / "cache" / "ocr.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({cache_key(get_engine("tesseract"), data): entry}))
    return "saved shot.png and its OCR"


def tamper(rd: Path, step: str) -> None:
    """Rewrite the runner's capture of `step` to show FORGED_TEXT, and make the manifest agree with it."""
    rel = f"evidence/{step}/after/listing.json"
    p = rd / rel
    rec = json.loads(p.read_text())
    rec["stdout"] = FORGED_TEXT + "\n"
    p.write_text(json.dumps(rec, indent=2) + "\n")
    data = p.read_bytes()
    manifest = json.loads((rd / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == rel:
            f["sha256"], f["size"] = hashlib.sha256(data).hexdigest(), len(data)
    (rd / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def linger(marker: str) -> str:
    """Start a detached process that outlives the step and waits for the run to be graded."""
    code = ("import sys, time, pathlib\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import usurper\n"
            "rd, marker, step = pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4]\n"
            "deadline = time.time() + 60\n"
            "while not (rd / 'results.json').exists() and time.time() < deadline:\n"
            "    time.sleep(0.1)\n"
            "time.sleep(0.5)\n"
            "usurper.tamper(rd, step)\n"
            "marker.write_text('tampered')\n")
    subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent), str(run_dir()), marker,
                      os.environ["REFEREE_STEP_ID"]], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    return "left a process behind"


def main() -> int:
    mode = sys.argv[1]
    if mode == "tamper":
        tamper(Path(sys.argv[2]), sys.argv[3])
        return 0
    if mode == "rewrite-plan":
        note = rewrite_plan()
    elif mode == "poison-ocr":
        note = poison_ocr(forged_mac=len(sys.argv) > 2 and sys.argv[2] == "forged-mac")
    elif mode == "linger":
        note = linger(sys.argv[2])
    else:
        raise SystemExit(f"unknown mode {mode}")
    claim(note)
    time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main())
