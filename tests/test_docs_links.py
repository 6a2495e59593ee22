"""The README and docs name only files a clone has: every relative link and path resolves inside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc):
    missing = [m for m in LINK.findall(doc.read_text(encoding="utf-8"))
               if "://" not in m and not m.startswith("mailto:") and not (doc.parent / m).exists()]
    assert missing == []


@pytest.mark.parametrize("doc", [d for d in DOCS if d.name != "design.md"], ids=lambda p: p.name)
def test_no_paths_outside_the_clone(doc):
    text = doc.read_text(encoding="utf-8")
    assert "../shared" not in text and "shared folder" not in text


def test_example_traces_named_in_docs_exist():
    text = "".join(d.read_text(encoding="utf-8") for d in DOCS)
    for path in set(re.findall(r"\b(docs/examples/[\w./-]+)", text)):
        assert (ROOT / path).exists(), path
