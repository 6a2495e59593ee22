"""Screen checkers over the runner's structural captures: the accessibility snapshot and the DOM."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from referee.errors import EvidenceError, with_article
from referee.ocr.text import excerpt, find, normalise
from referee.plan.captures import BUILTIN_SPECS as BUILTIN_CAPTURES
from referee.plan.validators import ARIA, DOM, AriaContainsSpec, DomContainsSpec
from referee.rundir.schema import AriaRecord, sniff_record
from referee.validators.base import Outcome, ValidatorKind, register

_ARIA_LINE = re.compile(r'^\s*-\s+([A-Za-z]+)(?:\s+"((?:[^"\\]|\\.)*)")?(?:\s*\[[^\]]*\])*\s*(?::\s*(.*))?$')


def _text_evidence(ev, ref: str, what: str, kind: str) -> str:
    """The text of `ref`: an agent's file, a capture of `kind`, or a plugin's; a built-in capture of another
    kind is ERROR (a plan `referee check` refuses, graded anyway), never searched as if it were `what`."""
    entry = ev.entry(ref)
    if entry.captured_by == "runner" and entry.kind in BUILTIN_CAPTURES and entry.kind != kind:
        raise EvidenceError(f"evidence '{ref}' is {with_article(entry.kind)} capture, not {what}",
                            fix=f"name {with_article(kind)} capture, or an agent's file")
    data = ev.read_bytes(ref)
    if data.startswith(b"\x89PNG") or data.startswith(b"\xff\xd8") or b"\x00" in data[:4096]:
        raise EvidenceError(f"evidence '{ref}' is an image, not {what}",
                            fix="name an aria/dom capture or an HTML/YAML file")
    return data.decode("utf-8", errors="replace")


def aria_lines(text: str) -> list[str]:
    """The lines of an aria snapshot (YAML, or JSON from `{kind: aria, format: json}`) minus link targets.

    >>> aria_lines('# url: http://x/\\n- heading "Shop" [level=1]\\n- link "home":\\n  - /url: /\\n')
    ['- heading "Shop" [level=1]', '- link "home":']
    """
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        record = sniff_record(doc)
        if isinstance(record, AriaRecord):
            text = record.yaml
        elif doc is not None:
            return [s for s in _strings(doc)]
    return [ln for ln in text.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#") and not ln.lstrip().startswith("- /url:")]


def _strings(doc) -> list[str]:
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, dict):
        return [s for k, v in doc.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(doc, list):
        return [s for v in doc for s in _strings(v)]
    return []


@register("aria_contains")
class AriaContains(AriaContainsSpec, ValidatorKind):
    def check(self, params: AriaContainsSpec.Params, ev, index: int) -> Outcome:
        matched = []
        for ref in params.refs(ARIA):
            lines = aria_lines(_text_evidence(ev, ref, "an accessibility snapshot", "aria"))
            hit = self._find(params, lines)
            if hit is None:
                role = f" in a {params.role}" if params.role else ""
                shown = excerpt(" | ".join(ln.strip() for ln in lines), 160) or "an empty snapshot"
                return Outcome.fail(f"{params.text!r}{role} not in {ref} ({shown})")
            matched.append((ref, hit))
        where = "; ".join(f"{ref}: {excerpt(h, 80)!r}" for ref, h in matched)
        return Outcome.hold(f"{params.text!r} in {where}", matched=matched[0][1])

    @staticmethod
    def _find(params, lines: list[str]) -> str | None:
        cs = not params.ignore_case
        if params.role is None:
            m = find(params.text, lines, case_sensitive=cs)
            return m.line if m else None
        want = normalise(params.text, case_sensitive=cs)
        for ln in lines:
            node = _ARIA_LINE.match(ln)
            if not node or node.group(1).lower() != params.role.lower():
                continue
            # a node's name ("- button \"Add\"") or, for roles named by content, its inline text
            # ("- listitem: water the plants", "- textbox \"New todo\": its value")
            for raw in (node.group(2), node.group(3)):
                name = normalise((raw or "").replace('\\"', '"'), case_sensitive=cs)
                if name and ((name == want) if params.exact else (want in name)):
                    return ln.strip()
        return None


_SKIP = {"script", "style", "template", "noscript", "head", "svg"}
_BLOCK = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer", "nav",
          "main", "aside", "form", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "dt", "dd", "hr",
          "fieldset", "legend", "caption", "thead", "tbody", "details", "summary", "label", "option", "textarea"}


class _Visible(HTMLParser):
    """The text a reader of the HTML would see, one block per line (CSS-hidden text cannot be told apart)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP:
            self.skip += 1
        elif tag in _BLOCK:
            self.out.append("\n")
        elif tag in ("td", "th"):
            self.out.append(" \t ")
        a = dict(attrs)
        if tag == "input" and not self.skip and a.get("type", "text") not in ("hidden", "password") and a.get("value"):
            self.out.append(f" {a['value']} ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK:
            self.out.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)


def visible_lines(html: str) -> list[str]:
    """Visible text of an HTML document, one line per block.

    >>> visible_lines("<html><head><title>T</title></head><body><h1>Shop</h1><script>x=1</script><p>a <b>b</b></p>")
    ['Shop', 'a b']
    """
    p = _Visible()
    p.feed(html)
    p.close()
    return [" ".join(ln.split()) for ln in "".join(p.out).split("\n") if ln.strip()]


@register("dom_contains")
class DomContains(DomContainsSpec, ValidatorKind):
    def check(self, params: DomContainsSpec.Params, ev, index: int) -> Outcome:
        matched = []
        for ref in params.refs(DOM):
            html = _text_evidence(ev, ref, "HTML", "dom")
            lines = html.splitlines() if params.raw else visible_lines(html)
            m = find(params.text, lines, case_sensitive=not params.ignore_case)
            if m is None:
                shown = excerpt(" | ".join(lines), 160) or "no visible text"
                return Outcome.fail(f"{params.text!r} not in {'the HTML of ' if params.raw else ''}{ref} ({shown})")
            matched.append((ref, m))
        where = "; ".join(f"{ref}: {excerpt(m.line, 80)!r}" for ref, m in matched)
        return Outcome.hold(f"{params.text!r} in {where}", matched=matched[0][1].line)
