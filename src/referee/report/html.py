"""report.html: one self-contained page per run; verdicts, reasons, claims and screenshots, every string escaped.

Every string goes through `_e` (`safetext.for_html`: control characters visible, then HTML-escaped),
and every file of the run directory is read with `fsutil.read_regular` (no link followed, no FIFO
waited on, sizes capped): the agent may have written any of them.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from referee.core.fsutil import atomic_write_text, loads_json, read_regular
from referee.core.safetext import for_html
from referee.errors import EvidenceError
from referee.grader.results import RunResults
from referee.report.agentout import step_tails
from referee.report.html_steps import CSS as STEP_CSS
from referee.report.html_steps import agent_block, verdict_extra
from referee.rundir.schema import MAX_MANIFEST_BYTES, MAX_RESULTS_BYTES

EMBED_MAX = 2 * 1024 * 1024  # one image embedded up to this size; bigger ones are linked
EMBED_TOTAL = 48 * 1024 * 1024  # and no more than this per report
CHECK_MAX = 64 * 1024 * 1024  # an image bigger than this is linked unchecked ("too big to check")
IMAGE_TYPES = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}
# Pillow, which the grader decodes with (its defaults), refuses an image of more than twice its MAX_IMAGE_PIXELS
# as a decompression bomb: a browser would decode it all the same, gigabytes for a few kilobytes of file
BOMB_PIXELS = 2 * 89_478_485

_SCRIPT = """
document.addEventListener('click', function (e) {
  var box = document.getElementById('lightbox');
  var a = e.target.closest ? e.target.closest('a.shot') : null;
  if (a && a.querySelector('img')) {
    e.preventDefault();
    box.querySelector('img').src = a.querySelector('img').src;
    box.querySelector('.cap').textContent = a.getAttribute('data-caption');
    box.hidden = false;
  } else if (e.target.closest && e.target.closest('#lightbox')) {
    box.hidden = true;
  }
});
document.addEventListener('keydown', function (e) {
  if (e.key === 'Escape') { document.getElementById('lightbox').hidden = true; }
});
"""

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:24px;color:#1d2433;background:#fff}
h1{font-size:20px;margin:0 0 4px}.meta{color:#5b6475;margin-bottom:14px}
.sum span{display:inline-block;margin-right:12px;font-weight:600}
table.steps{border-collapse:collapse;width:100%;margin-top:12px}
.steps th,.steps td{border:1px solid #d5d9e0;padding:6px 8px;vertical-align:top;text-align:left}
.steps th{background:#f1f3f6}
.v{font-weight:700;padding:2px 8px;border-radius:4px;color:#fff;display:inline-block}
.v-PASS{background:#1f7a3a}.v-FAIL{background:#b3261e}.v-ERROR{background:#8a4b00}.v-SKIPPED{background:#5b6475}
.s-PASS{color:#1f7a3a}.s-FAIL{color:#b3261e}.s-ERROR{color:#8a4b00}
ul.vals{margin:0;padding-left:16px}ul.vals li{margin-bottom:3px}
.over{background:#b3261e;color:#fff;font-weight:700;padding:1px 6px;border-radius:3px;margin-left:4px}
.do{color:#5b6475;white-space:pre-wrap;max-width:320px}
.note{white-space:pre-wrap;max-width:320px;overflow-wrap:anywhere}
.shots{display:flex;flex-wrap:wrap;gap:8px;min-width:336px}
.shots figure{margin:0;text-align:center;font-size:11px;color:#5b6475}
.shots img{width:160px;max-height:120px;object-fit:contain;border:1px solid #c5cad3;background:#fafafa}
.reason{overflow-wrap:anywhere}
#lightbox{position:fixed;inset:0;background:rgba(0,0,0,.85);display:flex;flex-direction:column;align-items:center;
justify-content:center;cursor:zoom-out}
#lightbox[hidden]{display:none}#lightbox img{max-width:95vw;max-height:88vh;background:#fff}
#lightbox .cap{color:#fff;margin-top:8px}
.seal{padding:8px 12px;margin:8px 0;border-radius:4px;color:#fff;overflow-wrap:anywhere}
.seal-unverified{background:#8a4b00}.seal-failed{background:#b3261e}
"""


def _e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute.

    >>> _e('<script>alert("x")</script>')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return for_html("" if value is None else value)


def _read_json(path: Path, max_bytes: int) -> Any:
    try:
        return loads_json(read_regular(path, root=path.parent, max_bytes=max_bytes))
    except FileNotFoundError:
        raise EvidenceError(f"no {path.name}: grade the run first", file=str(path.parent),
                            fix="run `referee grade RUN_DIR`") from None
    except (OSError, ValueError) as exc:
        raise EvidenceError(f"{path.name} is unreadable: {exc}", file=str(path)) from None


def _step_texts(run_dir: Path) -> dict[str, str]:
    """Each step's `do:` from the frozen plan (best effort: the report renders without it)."""
    import yaml

    from referee.plan.loader import MAX_PLAN_BYTES

    try:
        raw = read_regular(run_dir / "plan.yaml", root=run_dir, max_bytes=MAX_PLAN_BYTES)
        data = yaml.safe_load(raw.decode("utf-8", errors="replace"))
    except (OSError, EvidenceError, yaml.YAMLError, RecursionError):
        return {}
    steps = data if isinstance(data, list) else (data or {}).get("steps", []) if isinstance(data, dict) else []
    return {str(s.get("id")): str(s.get("do", "")) for s in steps if isinstance(s, dict)}


@dataclass(frozen=True)
class Shot:
    """One image of a step, embedded (data URI) or linked, with who took it and when."""

    label: str
    phase: str
    captured_by: str
    rel: str
    data_uri: str | None
    problem: str | None = None


class _Budget:
    def __init__(self) -> None:
        self.left = EMBED_TOTAL


def _image_type(data: bytes) -> str | None:
    return next((mime for sig, mime in IMAGE_TYPES.items() if data.startswith(sig)), None)


def image_size(data: bytes) -> tuple[int, int] | None:
    r"""Width and height from a PNG, GIF or JPEG header, without decoding; None when the header does not say.

    >>> image_size(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (30000).to_bytes(4, "big") * 2)
    (30000, 30000)
    >>> image_size(b"GIF89a" + (640).to_bytes(2, "little") + (480).to_bytes(2, "little"))
    (640, 480)
    """
    if data.startswith(b"\x89PNG") and data[12:16] == b"IHDR" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data.startswith(b"GIF8") and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data.startswith(b"\xff\xd8"):
        i = 2
        while i + 9 <= len(data) and data[i] == 0xFF:
            marker = data[i + 1]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame
                return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
            i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return None


def _refused(data: bytes) -> str | None:
    """Why an image is not embedded although it is small enough: the grader refused it as a bomb."""
    size = image_size(data)
    if size is not None and size[0] * size[1] > BOMB_PIXELS:
        return f"refused: {size[0]}x{size[1]} pixels, a decompression bomb (not embedded)"
    return None


def _shots(run_dir: Path, files: list[dict], step_id: str, budget: _Budget) -> list[Shot]:
    """The step's images: runner screenshots before, after, then the agent's own; hash-checked before embedding."""
    order = {("before", "runner"): 0, ("after", "runner"): 1, ("after", "agent"): 2}
    out: list[tuple[int, Shot]] = []
    for f in files:
        if f.get("step") != step_id or f.get("error"):
            continue
        rel = str(f.get("path", ""))
        if not rel.lower().endswith((".png", ".jpg", ".jpeg", ".gif")):
            continue
        phase, by = str(f.get("phase", "")), str(f.get("captured_by", ""))
        label = f.get("capture") or Path(rel).name
        path = run_dir / rel
        if rel.startswith("/") or ".." in Path(rel).parts:
            continue  # a manifest path that leads out of the run directory is never read
        try:
            data = read_regular(path, root=run_dir, max_bytes=CHECK_MAX)
        except OSError:
            out.append((order.get((phase, by), 3), Shot(label, phase, by, rel, None, "missing")))
            continue
        except EvidenceError as exc:  # a link, a FIFO, too big: named, never followed or waited on
            out.append((order.get((phase, by), 3), Shot(label, phase, by, rel, None, exc.message.split("; ")[0])))
            continue
        if hashlib.sha256(data).hexdigest() != f.get("sha256"):
            out.append((order.get((phase, by), 3), Shot(label, phase, by, rel, None, "modified after capture")))
            continue
        mime = _image_type(data)
        if mime and (refused := _refused(data)):
            out.append((order.get((phase, by), 3), Shot(label, phase, by, rel, None, refused)))
            continue
        uri = None
        if mime and len(data) <= EMBED_MAX and len(data) <= budget.left:
            budget.left -= len(data)
            uri = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        out.append((order.get((phase, by), 3), Shot(label, phase, by, rel, uri, None if mime else "not an image")))
    out.sort(key=lambda t: t[0])
    return [s for _, s in out]


def _shot_html(s: Shot) -> str:
    caption = f"{s.phase} · {s.captured_by} · {s.label}"
    href = "./" + quote(s.rel)
    if s.problem:
        return (f'<figure><a href="{_e(href)}">{_e(s.label)}</a>'
                f'<figcaption>{_e(caption)}: {_e(s.problem)}</figcaption></figure>')
    if s.data_uri is None:
        return (f'<figure><a href="{_e(href)}">{_e(s.label)} (too big to embed)</a>'
                f'<figcaption>{_e(caption)}</figcaption></figure>')
    return (f'<figure><a class="shot" href="{_e(href)}" data-caption="{_e(caption)}">'
            f'<img src="{s.data_uri}" alt="{_e(caption)}"></a><figcaption>{_e(caption)}</figcaption></figure>')


def _claim_html(step: dict) -> str:
    claim = step.get("claim")
    if not isinstance(claim, dict):
        return '<span class="meta">no claim</span>'
    passed = claim.get("pass")
    said = "pass" if passed is True else "fail" if passed is False else "no opinion"
    over = ('<span class="over" title="claimed pass; the verdict is not PASS">OVERCLAIM</span>'
            if step.get("overclaim") else "")
    ev = claim.get("evidence") or []
    ev_html = f'<div class="meta">evidence: {_e(", ".join(map(str, ev)))}</div>' if ev else ""
    agent = step.get("agent")
    warn = agent.get("claim_warning") if isinstance(agent, dict) else None
    warn_html = f'<div class="meta">warning: {_e(warn)}</div>' if warn else ""
    return f'<b>{_e(said)}</b>{over}<div class="note">{_e(claim.get("note", ""))}</div>{ev_html}{warn_html}'


def _validators_html(step: dict) -> str:
    vals = step.get("validators") or []
    if not vals:
        return f'<span class="reason">{_e(step.get("reason", ""))}</span>'
    items = []
    for v in vals:
        st = str(v.get("status", ""))
        items.append(f'<li><b class="s-{_e(st)}">{_e(st)}</b> <code>{_e(v.get("name"))}</code> '
                     f'<span class="reason">{_e(v.get("reason"))}</span></li>')
    return f'<ul class="vals">{"".join(items)}</ul>'


def _isolation_html(manifest: Any) -> str:
    """How the agent ran: a banner when it was unisolated, a line otherwise (nothing when no agent ran)."""
    iso = manifest.get("isolation") if isinstance(manifest, dict) else None
    if not isinstance(iso, dict):
        return ""
    if iso.get("mode") == "none":
        return ('<div class="seal seal-failed"><b>UNISOLATED</b>: the agent ran with the runner\'s rights '
                f'({_e(iso.get("note") or "no reason given")}); it could have rewritten the run directory '
                'or read the runner\'s environment</div>')
    return (f'<div class="meta">agent isolation: {_e(iso.get("mode"))}, processes tracked by '
            f'{_e(iso.get("tracking"))}</div>')


def _integrity_html(results: dict) -> str:
    """A banner unless the seal was verified: unverified (graded with --allow-unsigned) or failed."""
    integrity = results.get("integrity")
    if not isinstance(integrity, dict):
        integrity = {"status": "unverified", "reason": "graded before run directories were sealed"}
    status = str(integrity.get("status", ""))
    if status == "verified":
        return (f'<div class="meta">evidence sealed by the runner and verified (key {_e(integrity.get("key_id"))}, '
                f'run {_e(integrity.get("run_id"))})</div>')
    label = "SEAL CHECK FAILED" if status == "failed" else "UNVERIFIED"
    return f'<div class="seal seal-{_e(status)}"><b>{label}</b>: {_e(integrity.get("reason", ""))}</div>'


def render_report(run_dir: str | Path, results_model: RunResults | None = None) -> str:
    """The HTML text of a run's report (see `write_report`); from `results_model` instead of results.json."""
    run_dir = Path(run_dir)
    if results_model is not None:
        results = results_model.model_dump(mode="json")
    else:
        results = _read_json(run_dir / "results.json", MAX_RESULTS_BYTES)
    failed = isinstance(results, dict) and (results.get("integrity") or {}).get("status") == "failed"
    # a refused run (an empty or linked manifest.json among the reasons) is reported from its results alone
    manifest = {} if failed else _read_json(run_dir / "manifest.json", MAX_MANIFEST_BYTES)
    if not isinstance(results, dict) or not isinstance(manifest, dict):
        raise EvidenceError("results.json or manifest.json is not a JSON object", file=str(run_dir),
                            fix="run `referee grade RUN_DIR` again")
    files = [f for f in manifest.get("files") or [] if isinstance(f, dict)]
    does = _step_texts(run_dir)
    seal_failed = (results.get("integrity") or {}).get("status") == "failed"
    shown = manifest if isinstance(manifest, dict) else {}  # what the agent-output blocks read
    if seal_failed:
        files, does, shown = [], {}, {}  # nothing of a run whose seal does not hold is shown as if it were evidence
    budget = _Budget()
    summary = results.get("summary")
    summary = summary if isinstance(summary, dict) else {}
    rows = []
    for step in [s for s in results.get("steps") or [] if isinstance(s, dict)]:
        sid = str(step.get("id", ""))
        verdict = str(step.get("verdict", ""))
        shots = "".join(_shot_html(s) for s in _shots(run_dir, files, sid, budget))
        rows.append(
            f'<tr id="step-{_e(sid)}"><td><b>{_e(sid)}</b><div class="do">{_e(does.get(sid, ""))}</div></td>'
            f'<td><span class="v v-{_e(verdict)}">{_e(verdict)}</span>{verdict_extra(step)}</td>'
            f'<td>{_validators_html(step)}</td>'
            f'<td>{agent_block(step, step_tails(run_dir, shown, sid))}{_claim_html(step)}</td>'
            f'<td><div class="shots">{shots or "<span class=meta>none</span>"}</div></td></tr>')
    sums = "".join(f'<span class="s-{_e(k)}">{_e(k)} {_e(summary.get(k, 0))}</span>'
                   for k in ("PASS", "FAIL", "SKIPPED", "ERROR", "FLAKY", "deselected", "overclaims", "plan_errors",
                             "agent_failures")
                   if k not in ("FLAKY", "deselected", "plan_errors", "agent_failures") or summary.get(k))
    plan = results.get("plan", "")
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    csp = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">'
        f"<title>referee: {_e(plan)}</title><style>{_CSS}{STEP_CSS}</style></head><body>"
        f"<h1>referee: {_e(plan)}</h1>"
        f'<div class="meta">started {_e(manifest.get("started", "?"))} · finished {_e(manifest.get("finished", "?"))}'
        f' · actor {_e(manifest.get("actor", "?"))}</div>'
        f'{_integrity_html(results)}{"" if seal_failed else _isolation_html(manifest)}<div class="sum">{sums}</div>'
        '<p class="meta">Verdicts come from the validators over the persisted evidence; the agent\'s claim is '
        "shown beside them and decides nothing.</p>"
        '<table class="steps"><thead><tr><th>step</th><th>verdict</th><th>validators</th><th>agent</th>'
        f'<th>screens</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
        '<div id="lightbox" hidden><img alt=""><div class="cap"></div></div>'
        f"<script>{_SCRIPT}</script></body></html>\n")


def write_report(run_dir: str | Path, results: RunResults | None = None) -> Path:
    """Write `report.html` into the run directory (atomically) and return its path; from `results`
    (a RunResults, as just graded) when given, else from results.json.

    >>> write_report("runs/demo/20260101T000000Z", grade("runs/demo/20260101T000000Z"))  # doctest: +SKIP
    PosixPath('runs/demo/20260101T000000Z/report.html')
    """
    run_dir = Path(run_dir)
    path = run_dir / "report.html"
    atomic_write_text(path, render_report(run_dir, results))
    return path
