"""A third-party evidence extractor registered through the `referee.extractors` entry point group."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PLUGIN = '''
from dataclasses import dataclass

from referee.audit.records import FINDING_FIELDS, Finding


@dataclass(frozen=True)
class Sceptic:
    """Says every field is contradicted by step 0: enough to see a plugin decide dispositions."""

    name: str = "sceptic"
    model: str | None = None
    prompt_version: str = "1"

    def extract(self, view, sample=0):
        return {f: Finding(value="no", support=[0], note="plugin") for f in FINDING_FIELDS}
'''

TRACE = {"run_id": "p1", "task": "Delete note N42",
         "steps": [{"action": {"name": "delete_note", "args": {"id": "N42"}}, "observation": {"text": "deleted"}}],
         "report": "Deleted N42."}


def test_an_entry_point_extractor_is_used_by_name(tmp_path):
    site = tmp_path / "site"
    dist = site / "referee_sceptic-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / "referee_sceptic.py").write_text(PLUGIN)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: referee-sceptic\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[referee.extractors]\nsceptic = referee_sceptic:Sceptic\n")
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps(TRACE) + "\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "a.jsonl"
    run = subprocess.run([sys.executable, "-m", "referee.cli.main", "audit", str(traces), "--backend", "sceptic",
                          "--out", str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    rec = json.loads(out.read_text())
    assert rec["backend"]["name"] == "sceptic"
    assert rec["trace_state"] == "not_completed" and rec["disposition"] == "flag"

    # and without the plugin on the path, the name is unknown, with the known ones listed
    run = subprocess.run([sys.executable, "-m", "referee.cli.main", "audit", str(traces), "--backend", "sceptic",
                          "--out", str(tmp_path / "b.jsonl")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "unknown extractor backend 'sceptic'" in run.stderr
