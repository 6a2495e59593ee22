"""A test agent that drives the runner's own page over CDP (REFEREE_CDP_URL) and then claims, per step id.

stale_claim:   shows a fake "Green Lantern added" banner, saves a screenshot of it, reloads (the banner goes,
               nothing was added) and claims pass with that stale screenshot; its note carries a <script>.
broken_shot:   saves bytes that are not an image as shot.png and claims pass.
add_product:   really inserts "Green Lantern" into the SQLite file datasette serves, reloads, claims pass.
anything else: claims nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

STEP = os.environ["REFEREE_STEP_ID"]
AGENT_DIR = Path(os.environ["REFEREE_AGENT_DIR"])
CLAIM = Path(os.environ["REFEREE_CLAIM_FILE"])
NOTE_XSS = 'Added it. <script>window.__pwned = 1; alert("pwned")</script> <img src=x onerror="window.__pwned=2">'


def claim(passed, note, evidence=()):
    CLAIM.write_text(json.dumps({"pass": passed, "note": note, "evidence": list(evidence)}))


def runner_page(browser):
    pages = [p for c in browser.contexts for p in c.pages]
    assert pages, "the runner's page is not visible over CDP"
    return pages[0]


def main() -> None:
    if STEP not in ("stale_claim", "broken_shot", "add_product"):
        return
    if STEP == "broken_shot":
        (AGENT_DIR / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n this is not really a PNG")
        claim(True, "screenshot saved", ["shot.png"])
        return
    from playwright.sync_api import sync_playwright  # only here: most steps' agent claims nothing, at once

    with sync_playwright() as p:
        browser = p.chromium.connect_over_cdp(os.environ["REFEREE_CDP_URL"])
        page = runner_page(browser)
        if STEP == "stale_claim":
            page.evaluate("document.body.insertAdjacentHTML('afterbegin',"
                          "'<h1 style=\"font-size:40px\">Green Lantern added</h1>')")
            page.screenshot(path=str(AGENT_DIR / "stale.png"))
            page.reload(wait_until="load")  # the banner was never real: the page shows what the app has
            claim(True, NOTE_XSS, ["stale.png"])
        else:
            with sqlite3.connect(os.environ["SHOP_DB"]) as db:
                db.execute("insert into products(name, price) values ('Green Lantern', 7.25)")
            page.reload(wait_until="load")
            page.screenshot(path=str(AGENT_DIR / "added.png"))
            claim(True, "Green Lantern is in the table", ["added.png"])


if __name__ == "__main__":
    main()
