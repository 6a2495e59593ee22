"""HTML index pages over runs: `OUT/<plan>/index.html` (a plan's history grid, each run linked to its report)
and `OUT/index.html` (every plan of the folder, its newest runs and what changed). Written at the end of
each `referee run` and after `referee prune`. Every string is escaped with the report's own `esc`; links
are relative and percent-encoded, so the pages work wherever the folder is copied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence
from urllib.parse import quote

from referee.core.fsutil import atomic_write_text
from referee.report.history_model import History
from referee.report.history_view import CELL
from referee.report.html_steps import esc

__all__ = ["INDEX", "render_overview", "render_plan_index", "write_overview", "write_plan_index"]

INDEX = "index.html"

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:24px;color:#1d2433;background:#fff}
h1{font-size:20px;margin:0 0 4px}.meta{color:#5b6475;margin-bottom:14px}
table.grid{border-collapse:collapse;margin-top:12px}
.grid th,.grid td{border:1px solid #d5d9e0;padding:4px 8px;text-align:left;white-space:nowrap}
.grid th{background:#f1f3f6;font-weight:600}.grid th small{color:#5b6475;font-weight:400}
td.c{text-align:center;font-weight:700;color:#fff}
.c-PASS{background:#1f7a3a}.c-FAIL{background:#b3261e}.c-ERROR{background:#8a4b00}.c-SKIPPED{background:#5b6475}
.c-FLAKY{background:#9a6700}.c-none{background:#fff;color:#9aa1ad!important}
.tag{font-size:11px;font-weight:700;padding:1px 5px;border-radius:3px;margin-left:6px;color:#fff}
.t-new{background:#b3261e}.t-fixed{background:#1f7a3a}.t-flips{background:#9a6700}.t-slower{background:#5b6475}
ul.find li{margin-bottom:3px}.skipped{color:#5b6475}
"""


def _href(*parts: str) -> str:
    return esc("/".join(quote(p, safe="") for p in parts))


def _page(title: str, body: list[str]) -> str:
    return "\n".join(["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
                      '<meta name="viewport" content="width=device-width, initial-scale=1">',
                      f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>", *body, "</body></html>", ""])


def _cell(verdict: str | None) -> str:
    cls = verdict if verdict in CELL and verdict is not None else "none"
    return f'<td class="c c-{esc(cls)}">{esc(CELL.get(verdict, verdict or "-"))}</td>'


def _findings(h: History) -> list[str]:
    items = []
    if len(h.runs) >= 2:
        items.append(f"<li><b>new failures</b> (vs {esc(h.runs[-2].name)}): {esc(', '.join(h.new_failures) or 'none')}"
                     "</li>")
        items.append(f"<li><b>fixed</b>: {esc(', '.join(h.fixed) or 'none')}</li>")
    for s, why in h.flips.items():
        items.append(f"<li><b>flips across runs</b>: {esc(s)} ({esc(why)})</li>")
    for t in h.slower:
        items.append(f"<li><b>slower</b>: {esc(t.step)} {t.now_s:.2f}s, median before {t.median_s:.2f}s</li>")
    return ['<ul class="find">', *items, "</ul>"] if items else []


def render_plan_index(h: History) -> str:
    """A plan's index page: its complete runs as columns (oldest first, each linked to its report.html), steps
    as rows, the findings above, the skipped runs below. Links are relative to the plan's runs folder."""
    body = [f"<h1>referee history: {esc(h.plan)}</h1>",
            f'<div class="meta">{len(h.runs)} complete run(s), oldest first; {len(h.skipped)} skipped</div>',
            *_findings(h)]
    if h.runs:
        head = "".join(f'<th><a href="{_href(r.name, "report.html")}">#{i}</a><br><small>{esc(r.name)}</small></th>'
                       for i, r in enumerate(h.runs, 1))
        rows = []
        new, fixed, slow = set(h.new_failures), set(h.fixed), {t.step for t in h.slower}
        for s in h.steps:
            tags = "".join(f'<span class="tag t-{k}">{k.replace("new", "new failure")}</span>'
                           for k, on in (("new", s in new), ("fixed", s in fixed), ("flips", s in h.flips),
                                         ("slower", s in slow)) if on)
            rows.append(f"<tr><th>{esc(s)}{tags}</th>{''.join(_cell(v) for v in h.row(s))}</tr>")
        body += ['<table class="grid">', f"<tr><th>step</th>{head}</tr>", *rows, "</table>"]
    else:
        body.append("<p>No complete run yet.</p>")
    if h.skipped:
        body += ['<h2>Skipped runs (not complete)</h2>', '<ul class="skipped">',
                 *(f'<li><a href="{_href(s.name, "report.html")}">{esc(s.name)}</a>: {esc(s.why)}</li>'
                   for s in h.skipped), "</ul>"]
    return _page(f"referee history: {h.plan}", body)


def render_overview(plans: Sequence[tuple[str, History]]) -> str:
    """The index over the plans of an `--out` folder: per plan (its folder name and its history) the newest runs'
    overall verdicts (how many steps FAIL and ERROR, or PASS), new failures, flips, linked to the plan's index."""
    rows = []
    width = max([1, *(len(h.runs) for _, h in plans)])
    for folder, h in plans:
        cells = []
        for r in [None] * (width - len(h.runs)) + list(h.runs):
            if r is None:
                cells.append(_cell(None))
                continue
            bad = {v: sum(1 for x in r.verdicts.values() if x == v) for v in ("FAIL", "ERROR")}
            worst = "FAIL" if bad["FAIL"] else "ERROR" if bad["ERROR"] else "PASS"
            label = " · ".join(f"{n} {v}" for v, n in bad.items() if n) or "PASS"
            cells.append(f'<td class="c c-{worst}"><a style="color:#fff" href="{_href(folder, r.name, "report.html")}"'
                         f' title="{esc(r.name)}">{label}</a></td>')
        said = []
        if h.new_failures:
            said.append(f"new failures: {', '.join(h.new_failures)}")
        if h.fixed:
            said.append(f"fixed: {', '.join(h.fixed)}")
        if h.flips:
            said.append(f"flips: {', '.join(h.flips)}")
        if h.skipped:
            said.append(f"{len(h.skipped)} skipped")
        rows.append(f'<tr><th><a href="{_href(folder, INDEX)}">{esc(h.plan)}</a></th>{"".join(cells)}'
                    f"<td>{esc('; '.join(said))}</td></tr>")
    body = ["<h1>referee runs</h1>",
            f'<div class="meta">{len(plans)} plan(s); each plan\'s newest complete runs, newest last</div>',
            '<table class="grid">', f'<tr><th>plan</th><th colspan="{width}">runs</th><th>what changed</th></tr>',
            *rows, "</table>"]
    return _page("referee runs", body)


def write_plan_index(plan_dir: Path, h: History) -> Path:
    """Write `plan_dir/index.html` (atomically)."""
    path = Path(plan_dir) / INDEX
    atomic_write_text(path, render_plan_index(h), durable=False)
    return path


def write_overview(out: Path, plans: Sequence[tuple[str, History]]) -> Path:
    """Write `out/index.html` (atomically)."""
    path = Path(out) / INDEX
    atomic_write_text(path, render_overview(plans), durable=False)
    return path
