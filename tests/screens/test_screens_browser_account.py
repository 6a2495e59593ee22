"""The runner's Chromium is not root's: an agent drives it over CDP, so as root it read any file for the agent
(`file:///` the signing key) and wrote any file (a download into a folder of the agent's choosing), whatever the
agent's isolation. A root runner starts it as `referee-browser`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import base_cli_env, run_cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a root runner starts Chromium as another account")

# the agent: opens the signing key in the runner's page, and asks the browser to save a download into a folder
# only root may write; it writes down what it saw, and the uid of every Chromium process it can find
AGENT = r'''
import base64, hashlib, json, os, sys
from pathlib import Path
from playwright.sync_api import sync_playwright

key, locked = sys.argv[1], sys.argv[2]
out = Path(os.environ["REFEREE_AGENT_DIR"])
seen = {}
with sync_playwright() as pw:
    browser = pw.chromium.connect_over_cdp(os.environ["REFEREE_CDP_URL"])
    page = browser.contexts[0].pages[0]
    try:
        page.goto("file://" + key, timeout=5000)
        # its hash only: a file holding the key itself would be found and removed by the runner
        seen["key_sha256"] = hashlib.sha256(page.inner_text("body").strip().encode()).hexdigest()
    except Exception as exc:
        seen["key_error"] = str(exc).splitlines()[0]
    cdp = browser.new_browser_cdp_session()
    try:
        cdp.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": locked})
        page.set_content('<a id=d download="by_agent.txt" href="data:text/plain;base64,'
                         + base64.b64encode(b"planted").decode() + '">x</a>')
        page.click("#d")
        page.wait_for_timeout(1500)
    except Exception as exc:
        seen["download_error"] = str(exc).splitlines()[0]
uids, nnp = set(), set()
for d in os.listdir("/proc"):
    try:
        if d.isdigit() and open(f"/proc/{d}/comm").read().strip() in ("chromium", "chrome", "headless_shell"):
            uids.add(os.stat(f"/proc/{d}").st_uid)
            nnp.add(open(f"/proc/{d}/status").read().split("NoNewPrivs:")[1].split()[0])
    except OSError:
        pass
seen["chromium_uids"], seen["chromium_nnp"] = sorted(uids), sorted(nnp)
(out / "seen.json").write_text(json.dumps(seen))
Path(os.environ["REFEREE_CLAIM_FILE"]).write_text('{"pass": true}')
'''


def test_an_agent_driving_the_browser_reads_and_writes_nothing_more_through_it(tmp_path):
    key = Path(os.environ["REFEREE_KEY_FILE"])
    from referee.rundir.keys import load_key

    load_key(path=key)
    locked = tmp_path / "root-only"
    locked.mkdir(mode=0o700)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    plan = {"name": "cdp-reach", "actor": {"kind": "browser", "command": f"{sys.executable} {agent} {key} {locked}",
                                           "timeout_s": 60},
            "steps": [{"id": "s", "do": "Look around.", "validators": [{"kind": "dom_contains", "text": "x"}]}]}
    (tmp_path / "plan.yaml").write_text(json.dumps(plan))
    rc, out, err = run_cli(["run", "plan.yaml", "--out", "runs"], cwd=tmp_path, env=base_cli_env(), timeout=180)
    seen_file = next((tmp_path / "runs").glob("cdp-reach/*/agent/s/seen.json"), None)
    assert seen_file is not None, out + err
    seen = json.loads(seen_file.read_text())
    import hashlib

    key_sha = hashlib.sha256(key.read_text().strip().encode()).hexdigest()
    assert seen.get("key_sha256") != key_sha, "the agent read the signing key through Chromium"
    assert list(locked.iterdir()) == [], "the agent had Chromium write into a folder only root may write"
    assert 0 not in seen["chromium_uids"], seen  # (under bwrap its own pid namespace shows it none)
    assert set(seen["chromium_nnp"]) <= {"1"}, seen  # no_new_privs: a setuid program gives it nothing
